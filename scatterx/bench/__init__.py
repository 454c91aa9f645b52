"""The benchmark behind ``scatterx bench``: graphs, peers, bandwidth probe, harness, report."""

from .goals import goals
from .graphs import Graph, make_graph
from .harness import Config, Report, run

__all__ = ["Config", "Graph", "Report", "goals", "make_graph", "run"]
