"""The benchmarks behind the ``scatterx`` command: ``graphs`` builds their graphs; ``harness`` runs ``scatterx bench``
(the bandwidth probe, then each op's rows, one module per op in ``ops/``) and ``report`` prints it; ``grid`` and
``grid_elements`` are ``--grid``; ``gnn/`` holds the GNN benches (``bench-gnn``, ``bench-dist``); ``gpu_*`` the GPU's
tables; ``goals`` reads the goals every bench is held to (``goals.json``, shipped: ``scatterx bench`` prints them);
every bench prints through ``text`` (its tables' columns, goal lines and environment line) and writes its files
through ``files``."""

from .goals import goals
from .graphs import Graph, make_graph
from .harness import Config, Report, run

__all__ = ["Config", "Graph", "Report", "goals", "make_graph", "run"]
