"""The benchmark behind ``scatterx bench``: graphs, peers, bandwidth probe, harness, report."""

from .graphs import Graph, make_graph
from .harness import Config, Report, goals, run

__all__ = ["Config", "Graph", "Report", "goals", "make_graph", "run"]
