"""The ``torch.ops.pyg.*`` operators PyG calls (its samplers, ``Node2Vec``, its distributed sampler), defined with
pyg-lib's schemas on this package's functions.

They are defined by :func:`define` -- which ``install()`` calls -- and only where no ``pyg`` operator of that name
exists yet: a real pyg-lib's operators are never replaced. The library object lives as long as the process (an
operator cannot be taken back out of torch's dispatcher while others may hold it).
"""

from __future__ import annotations

from typing import List

import torch

from . import _distributed_sampling, _walk, sampler

#: name -> (schema, implementation), pyg-lib's schemas
OPERATORS = {
    "neighbor_sample": (
        "neighbor_sample(Tensor rowptr, Tensor col, Tensor seed, int[] num_neighbors, Tensor? node_time=None, "
        "Tensor? edge_time=None, Tensor? seed_time=None, Tensor? edge_weight=None, bool csc=False, "
        "bool replace=False, bool directed=True, bool disjoint=False, str temporal_strategy='uniform', "
        "bool return_edge_id=True) -> (Tensor, Tensor, Tensor, Tensor?, int[], int[])",
        sampler.neighbor_sample,
    ),
    "hetero_neighbor_sample": (
        "hetero_neighbor_sample(str[] node_types, (str, str, str)[] edge_types, Dict(str, Tensor) rowptr_dict, "
        "Dict(str, Tensor) col_dict, Dict(str, Tensor) seed_dict, Dict(str, int[]) num_neighbors_dict, "
        "Dict(str, Tensor)? node_time_dict=None, Dict(str, Tensor)? edge_time_dict=None, "
        "Dict(str, Tensor)? seed_time_dict=None, Dict(str, Tensor)? edge_weight_dict=None, bool csc=False, "
        "bool replace=False, bool directed=True, bool disjoint=False, str temporal_strategy='uniform', "
        "bool return_edge_id=True) -> (Dict(str, Tensor), Dict(str, Tensor), Dict(str, Tensor), "
        "Dict(str, Tensor)?, Dict(str, int[]), Dict(str, int[]))",
        sampler.hetero_sample,
    ),
    "random_walk": (
        "random_walk(Tensor rowptr, Tensor col, Tensor seed, int walk_length, float p, float q) -> Tensor",
        _walk.random_walk,
    ),
    "relabel_neighborhood": (
        "relabel_neighborhood(Tensor seed, Tensor sampled_nodes_with_duplicates, "
        "int[] num_sampled_neighbors_per_node, int num_nodes, Tensor? batch=None, bool csc=False, "
        "bool disjoint=False) -> (Tensor, Tensor)",
        _distributed_sampling.relabel_neighborhood,
    ),
    "hetero_relabel_neighborhood": (
        "hetero_relabel_neighborhood(str[] node_types, (str, str, str)[] edge_types, Dict(str, Tensor) seed_dict, "
        "Dict(str, Tensor) sampled_nodes_with_duplicates_dict, "
        "Dict(str, int[][]) num_sampled_neighbors_per_node_dict, Dict(str, int) num_nodes_dict, "
        "Dict(str, Tensor)? batch_dict=None, bool csc=False, bool disjoint=False) "
        "-> (Dict(str, Tensor), Dict(str, Tensor))",
        _distributed_sampling.hetero_relabel_neighborhood,
    ),
    "merge_sampler_outputs": (
        "merge_sampler_outputs(Tensor[] node_ids, Tensor[] edge_ids, int[][] cumsum_neighbors_per_node, "
        "int[] partition_ids, int[] partition_orders, int num_partitions, int num_neighbors, Tensor? batch, "
        "bool disjoint) -> (Tensor, Tensor, Tensor?, int[])",
        _distributed_sampling.merge_sampler_outputs,
    ),
}

#: the one library object that holds the definitions (kept for the life of the process)
_LIBRARY: List[torch.library.Library] = []
#: the operators this process defined
DEFINED: List[str] = []


def _has_schema(name: str) -> bool:
    """Whether torch knows the operator ``pyg::name`` (a real pyg-lib's, or ours)."""
    try:
        getattr(torch.ops.pyg, name)
    except (AttributeError, RuntimeError):
        return False
    return True


def define() -> List[str]:
    """Defines every operator of ``OPERATORS`` not defined yet; returns the names this call defined."""
    new = [name for name in OPERATORS if not _has_schema(name)]
    if not new:
        return []
    if not _LIBRARY:
        _LIBRARY.append(torch.library.Library("pyg", "FRAGMENT"))
    for name in new:
        schema, fn = OPERATORS[name]
        _LIBRARY[0].define(schema)
        _LIBRARY[0].impl(name, fn, "CompositeExplicitAutograd")
        DEFINED.append(name)
    return new
