"""``sddmm``: a value per edge from its two end rows -- attention logits without gathering both ends.

For a graph in CSR form by target (segment ``s`` of ``ptr`` holds the edges into node ``s``; ``index[k]`` is the
source of edge ``k``), edge ``k`` of segment ``s`` gets ``a[index[k]] op b[s]``:

- ``"add"``, ``"mul"``: elementwise over the rows (``a`` and ``b`` have the same feature shape): ``(E, *F)``. GAT's
  logits are ``sddmm(ptr, src_nodes, alpha_src, alpha_dst, "add")``.
- ``"dot"``: the dot product over the last dim: ``(E, *F[:-1])``. With heads, ``a`` and ``b`` of shape
  ``(N, heads, C)`` give ``(E, heads)``. This is also the gradient of a weighted ``gather_segment_reduce`` with
  respect to its weights.

The name is the sparse-linear-algebra one: a sampled dense-dense matrix product, ``(A @ B^T)`` computed only where
the sparsity pattern has an entry. Gradients: ``add`` / ``mul`` scatter the edge gradient back to both ends;
``dot``'s are weighted gather-segment reductions (one on the transposed structure), so double backward works.
"""

from __future__ import annotations

import torch

from ._checks import check_integer_vector, check_src, check_tensor
from ._library import needs_op
from ._message_passing import sddmm_differentiable, sddmm_forward

OPS = ("add", "mul", "dot")


def sddmm(ptr: torch.Tensor, index: torch.Tensor, a: torch.Tensor, b: torch.Tensor, op: str = "dot") -> torch.Tensor:
    """A value per edge from its two end rows: ``a[index[k]] op b[s]`` for edge ``k`` of segment ``s``.

    For a graph in CSR form by target (segment ``s``, ``ptr[s] <= k < ptr[s+1]``, holds the edges into node
    ``s``; ``index[k]`` is the source of edge ``k``), each edge combines its source row of ``a`` and its target
    row of ``b`` without gathering either: a sampled dense-dense matrix product (``A @ B^T`` computed only where
    the graph has an edge) for ``"dot"``, GAT's logits ``sddmm(ptr, src_nodes, alpha_src, alpha_dst, "add")`` for
    ``"add"``. Differentiable w.r.t. ``a`` and ``b`` (double backward included).

    Args:
        ptr: CSR offsets by target, ``b.size(0) + 1`` non-decreasing entries from 0 to ``index.numel()``.
        index: int32/int64, the source row of each edge, in ``[0, a.size(0))``.
        a: the source rows, ``(rows_a, *F)``, any supported dtype.
        b: the target rows, ``(rows_b, *F)``: the same dtype, device and feature shape ``F`` as ``a`` (the
            number of rows may differ).
        op: ``"add"``, ``"mul"`` (elementwise over the rows) or ``"dot"`` (the dot product over the last dim;
            needs a feature dim). With heads, ``a`` and ``b`` of shape ``(N, heads, C)`` give ``(E, heads)``.

    Returns:
        A new tensor of ``a``'s dtype and device, one row per edge in the order of ``index``, of shape
        ``(E, *F)`` for ``"add"`` and ``"mul"``, ``(E, *F[:-1])`` for ``"dot"`` (``E = index.numel()``).

    Raises:
        TypeError: an argument is not a tensor; ``a`` or ``b`` has another dtype (bool, int8, complex, ...), or
            their dtypes differ; ``ptr`` or ``index`` is not int32/int64.
        ValueError: ``op`` is unknown; ``a`` or ``b`` is 0-d, or their feature shapes differ; ``op="dot"`` on
            1-D rows; ``ptr`` does not have ``b.size(0) + 1`` entries, does not start at 0, does not end at
            ``index.numel()``, or decreases; ``ptr`` or ``index`` is not 1-D; a tensor is on another device than
            ``a``.
        IndexError: an entry of ``index`` is negative or not below ``a.size(0)``.
        NotImplementedError: ``a`` is on a device other than the CPU and CUDA, or on CUDA without Triton.

    Example:
        >>> ptr, index = torch.tensor([0, 2, 3]), torch.tensor([1, 0, 1])  # edges 1->0, 0->0, 1->1
        >>> a = torch.tensor([[1., 2.], [3., 4.]])
        >>> b = torch.tensor([[1., 1.], [0., 10.]])
        >>> sddmm(ptr, index, a, b, "dot")
        tensor([ 7.,  3., 40.])
        >>> sddmm(ptr, index, torch.tensor([1., 3.]), torch.tensor([1., 0.]), "add")
        tensor([4., 2., 3.])
    """
    a3, b3, ptr, index, op, shape = _checked(ptr, index, a, b, op)
    out = sddmm_differentiable(ptr, index, a3, b3, op) if needs_op(a3, b3) else sddmm_forward(ptr, index, a3, b3, op)
    return out.reshape(shape)


def _checked(ptr, index, a, b, op):
    """The checks that read no values: ``(a, b as (rows, heads, channels), ptr, index, op, result shape)``."""
    if op not in OPS:
        raise ValueError(f"op must be one of {', '.join(map(repr, OPS))}, got {op!r}")
    check_src(a, "a")
    check_src(b, "b")
    if b.dtype != a.dtype:
        raise TypeError(f"b has dtype {b.dtype} but a has dtype {a.dtype}; they must match")
    if b.device != a.device:
        raise ValueError(f"b is on {b.device} but a is on {a.device}")
    if a.dim() == 0 or b.dim() == 0:
        raise ValueError("a and b must have a row dim (dim 0), got a 0-d tensor")
    if a.shape[1:] != b.shape[1:]:
        raise ValueError(
            f"a and b must have the same feature shape, got a {tuple(a.shape)} and b {tuple(b.shape)} "
            "(rows may differ, the dims after the first may not)"
        )
    if op == "dot" and a.dim() < 2:
        raise ValueError("op='dot' takes the dot product over the last dim: a and b need a feature dim (2-D+)")
    ptr = check_integer_vector(check_tensor(ptr, "ptr"), "ptr", a)
    index = check_integer_vector(check_tensor(index, "index"), "index", a)
    if ptr.numel() != b.size(0) + 1:
        raise ValueError(f"ptr has {ptr.numel()} entries; b has {b.size(0)} rows, so it needs {b.size(0) + 1}")
    edges = index.numel()
    features = a.shape[1:]
    if op == "dot":
        channels = features[-1]
        heads = _prod(features[:-1])
        shape = (edges, *features[:-1])
    else:
        channels, heads = _prod(features), 1
        shape = (edges, *features)
    return a.reshape(a.size(0), heads, channels), b.reshape(b.size(0), heads, channels), ptr, index, op, shape


def _prod(sizes) -> int:
    total = 1
    for size in sizes:
        total *= size
    return total
