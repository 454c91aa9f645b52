"""pyg-lib's ``pyg_lib.ops`` on torch and scatterx: the functions PyG 2.5-2.8 calls through ``pyg_lib.ops``, with
pyg-lib's signatures, results and gradients, and nothing else (``torch_geometric.typing`` probes the module with
``hasattr``: the ops it does not find -- spline, knn, fps, radius, graclus, grid -- PyG keeps running its own way).

- ``segment_matmul`` / ``grouped_matmul``: one GEMM per group on torch's BLAS. ``segment_matmul`` writes each
  group's product straight into its rows of one preallocated output (``torch.mm(..., out=...)`` on views: no
  concatenation), or runs a single ``torch.bmm`` when every group has the same number of rows; its gradient is a
  custom autograd function built the same way (the weight gradient written group by group into one tensor). A bias
  is added in place to each group's product right after it is computed, rounded as pyg-lib rounds it.
- ``softmax_csr``: scatterx's segment softmax (``scatterx.segment_softmax`` with ``ptr``): Numba/Triton kernels,
  differentiable, double backward included.
- ``index_sort``: ``torch.sort(stable=True)``; ``max_value`` is accepted and not needed.
- ``sampled_add/sub/mul/div``: ``left[left_index] (op) right[right_index]`` on torch's differentiable ops.

Every argument is checked before anything is computed. Malformed arguments raise ``ArgumentError``, which is a
``ValueError`` and, since pyg-lib's C++ checks raise ``RuntimeError``, a ``RuntimeError`` too; a wrong dtype or a
non-tensor raises ``ArgumentTypeError`` (a ``TypeError`` and a ``RuntimeError``); an index entry out of range
raises ``IndexError``, as torch's indexing does.

Why this module is long: eight public functions, each with pyg-lib's signature, argument checks that name the
argument, and a full reference docstring; the matmuls add a custom autograd function with a fast and a
differentiable (double backward) gradient.
"""

from typing import Any, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

from ..ops import segment_softmax
from ..ops._checks import check_tensor, normalize_dim

__all__ = [
    "grouped_matmul",
    "index_sort",
    "sampled_add",
    "sampled_div",
    "sampled_mul",
    "sampled_sub",
    "segment_matmul",
    "softmax_csr",
]

_INDEX_DTYPES = (torch.int32, torch.int64)
#: index_sort first checks whether its input is sorted already from this many entries (below, sorting is cheap)
_SORTED_CHECK_FROM = 1 << 16


class ArgumentError(ValueError, RuntimeError):
    """A malformed argument (a shape, a size, CSR offsets). A ``ValueError``; also a ``RuntimeError``, the
    exception pyg-lib's own checks raise, so code written against pyg-lib catches it too."""


class ArgumentTypeError(TypeError, RuntimeError):
    """An argument of the wrong type or dtype. A ``TypeError``; also a ``RuntimeError``, as pyg-lib raises."""


# --------------------------------------------------------------------------------------------------- checks
def _index_vector(t: Any, name: str) -> Tensor:
    """``t`` as a 1-D int32/int64 tensor (ArgumentTypeError / ArgumentError naming ``name`` otherwise)."""
    check_tensor(t, name, ArgumentTypeError)
    if t.dtype not in _INDEX_DTYPES:
        raise ArgumentTypeError(f"{name} must have dtype int64 or int32, got {t.dtype}")
    if t.dim() != 1:
        raise ArgumentError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
    return t


def _same_device(t: Tensor, name: str, ref: Tensor, ref_name: str) -> None:
    if t.device != ref.device:
        raise ArgumentError(f"{name} is on {t.device} but {ref_name} is on {ref.device}; they must be on one device")


def _same_dtype(t: Tensor, name: str, ref: Tensor, ref_name: str) -> None:
    if t.dtype != ref.dtype:
        raise ArgumentTypeError(f"{name} has dtype {t.dtype} but {ref_name} has dtype {ref.dtype}; they must match")


def _segment_sizes(ptr: Tensor, length: int, what: str) -> List[int]:
    """The group sizes ``ptr[1:] - ptr[:-1]`` as Python ints (read on the host), after checking that ``ptr``
    starts at 0, never decreases and ends at ``length`` (``what`` names that length)."""
    if ptr.numel() == 0:
        raise ArgumentError("ptr must have at least one entry (ptr[0] == 0)")
    values = ptr.detach().to("cpu", torch.int64)
    first, last = int(values[0]), int(values[-1])
    if first != 0:
        raise ArgumentError(f"ptr must start at 0, got ptr[0]={first}")
    sizes = values.diff()
    if sizes.numel() and bool((sizes < 0).any()):
        i = int((sizes < 0).nonzero()[0]) + 1
        raise ArgumentError(
            f"ptr must be non-decreasing: ptr[{i}]={int(values[i])} < ptr[{i - 1}]={int(values[i - 1])}"
        )
    if last != length:
        raise ArgumentError(f"ptr must end at {what}={length}, got ptr[-1]={last}")
    return sizes.tolist()


# ------------------------------------------------------------------------------------------- segment_matmul
def _equal_rows(sizes: Sequence[int]) -> bool:
    """Whether every group has the same, non-zero number of rows (then one ``bmm`` runs them all)."""
    return len(sizes) > 0 and sizes[0] > 0 and all(s == sizes[0] for s in sizes)


def _segment_mm(x: Tensor, w: Tensor, bias: Optional[Tensor], sizes: List[int]) -> Tensor:
    """``x[rows of group i] @ w[i] (+ bias[i])`` for every group, written into one output (no autograd). The bias
    is added to the rounded product, as pyg-lib adds it (``addmm`` would round once: other low bits in bfloat16)."""
    n, k = x.shape
    m = w.size(2)
    out = x.new_empty((n, m))  # (the bmm writes into a view of it: the result is no view, callers may add in place)
    if _equal_rows(sizes):
        out3 = out.view(len(sizes), sizes[0], m)
        torch.bmm(x.reshape(len(sizes), sizes[0], k), w, out=out3)
        if bias is not None:
            out3.add_(bias.unsqueeze(1))
        return out
    for i, (xi, oi) in enumerate(zip(x.split(sizes), out.split(sizes))):
        torch.mm(xi, w[i], out=oi)
        if bias is not None:
            oi.add_(bias[i])  # (while the group's rows are in cache)
    return out


def _segment_weight_grad(x: Tensor, grad: Tensor, sizes: List[int]) -> Tensor:
    """``x[rows of group i].T @ grad[rows of group i]`` for every group, as one ``[G, K, M]`` tensor."""
    g, k, m = len(sizes), x.size(1), grad.size(1)
    if _equal_rows(sizes):
        return torch.bmm(x.reshape(g, sizes[0], k).transpose(1, 2), grad.reshape(g, sizes[0], m))
    out = x.new_empty((g, k, m))
    for i, (xi, gi) in enumerate(zip(x.split(sizes), grad.split(sizes))):
        torch.mm(xi.t(), gi, out=out[i])
    return out


def _segment_row_sums(grad: Tensor, sizes: List[int]) -> Tensor:
    """The sum of each group's rows of ``grad``, ``[G, M]`` (the bias gradient)."""
    if _equal_rows(sizes):
        return grad.reshape(len(sizes), sizes[0], grad.size(1)).sum(1)
    out = grad.new_empty((len(sizes), grad.size(1)))
    for i, gi in enumerate(grad.split(sizes)):
        torch.sum(gi, 0, out=out[i])
    return out


class _SegmentMatmul(torch.autograd.Function):
    """``segment_matmul`` with its gradient: ``grad @ w[i].T`` for the rows, ``x.T @ grad`` per group for the
    weights, the row sums per group for the bias. With ``create_graph=True`` the gradient is built from
    differentiable ops (this function again, ``mm``, ``sum``), so double backward works."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, bias: Optional[Tensor], sizes: List[int]) -> Tensor:
        ctx.sizes = sizes
        ctx.save_for_backward(x, w)
        return _segment_mm(x, w, bias, sizes)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tuple[Optional[Tensor], ...]:
        x, w = ctx.saved_tensors
        sizes = ctx.sizes
        need_x, need_w, need_bias, _ = ctx.needs_input_grad
        grad_x = grad_w = grad_bias = None
        if torch.is_grad_enabled():  # create_graph=True: differentiable ops
            if need_x:
                grad_x = _SegmentMatmul.apply(grad, w.transpose(1, 2), None, sizes)
            parts = list(zip(x.split(sizes), grad.split(sizes)))
            if need_w:
                grad_w = torch.stack([xi.t() @ gi for xi, gi in parts]) if parts else torch.zeros_like(w)
            if need_bias:
                grad_bias = torch.stack([gi.sum(0) for _, gi in parts]) if parts else grad.new_zeros((0, w.size(2)))
            return grad_x, grad_w, grad_bias, None
        if need_x:
            grad_x = _segment_mm(grad, w.transpose(1, 2), None, sizes)
        if need_w:
            grad_w = _segment_weight_grad(x, grad, sizes)
        if need_bias:
            grad_bias = _segment_row_sums(grad, sizes)
        return grad_x, grad_w, grad_bias, None


@torch.jit.ignore  # called from TorchScript (PyG scripts the callers) as Python; the public shells below are scriptable
def _segment_matmul(inputs: Tensor, ptr: Tensor, other: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """:func:`segment_matmul` itself (TorchScript calls it as Python)."""
    check_tensor(inputs, "inputs", ArgumentTypeError)
    ptr = _index_vector(ptr, "ptr")
    check_tensor(other, "other", ArgumentTypeError)
    if inputs.dim() != 2:
        raise ArgumentError(f"inputs must be 2-D [N, K], got shape {tuple(inputs.shape)}")
    if other.dim() != 3:
        raise ArgumentError(f"other must be 3-D [B, K, M] (one matrix per group), got shape {tuple(other.shape)}")
    _same_dtype(other, "other", inputs, "inputs")
    _same_device(other, "other", inputs, "inputs")
    if other.size(1) != inputs.size(1):
        raise ArgumentError(
            f"other has shape {tuple(other.shape)}: other.size(1)={other.size(1)} must equal inputs.size(1)="
            f"{inputs.size(1)}"
        )
    if ptr.numel() != other.size(0) + 1:
        raise ArgumentError(
            f"ptr has {ptr.numel()} entries, so {ptr.numel() - 1} groups, but other has {other.size(0)} matrices; "
            f"ptr needs other.size(0) + 1 = {other.size(0) + 1} entries"
        )
    if bias is not None:
        check_tensor(bias, "bias", ArgumentTypeError)
        _same_dtype(bias, "bias", inputs, "inputs")
        _same_device(bias, "bias", inputs, "inputs")
        if tuple(bias.shape) != (other.size(0), other.size(2)):
            raise ArgumentError(
                f"bias must have shape [B, M] = {(other.size(0), other.size(2))}, got {tuple(bias.shape)}"
            )
    sizes = _segment_sizes(ptr, inputs.size(0), "inputs.size(0)")
    if torch.is_grad_enabled() and (
        inputs.requires_grad or other.requires_grad or (bias is not None and bias.requires_grad)
    ):
        return _SegmentMatmul.apply(inputs, other, bias, sizes)
    return _segment_mm(inputs, other, bias, sizes)


def segment_matmul(inputs: Tensor, ptr: Tensor, other: Tensor, bias: Optional[Tensor] = None) -> Tensor:
    """Multiplies each group of rows of ``inputs`` by its own matrix: ``out[ptr[i]:ptr[i+1]] =
    inputs[ptr[i]:ptr[i+1]] @ other[i] (+ bias[i])`` -- PyG's ``HeteroLinear`` and ``RGCNConv``, one weight per
    node or edge type.

    One GEMM per group on torch's BLAS, each written straight into its rows of the output (a single ``bmm`` when
    all groups have the same number of rows). Differentiable w.r.t. ``inputs``, ``other`` and ``bias`` (double
    backward included).

    Args:
        inputs: ``[N, K]``, the rows, grouped by ``ptr``.
        ptr: int64 or int32 ``[B + 1]``, CSR offsets: group ``i`` is rows ``ptr[i]:ptr[i+1]``; ``ptr[0] == 0``,
            non-decreasing, ``ptr[-1] == N``. Its values are read on the host (keep it on the CPU to avoid a sync;
            it may be on the CPU whatever the device of ``inputs``).
        other: ``[B, K, M]``, one matrix per group, of ``inputs``' dtype and device.
        bias: optional ``[B, M]``, added to each group's rows.

    Returns:
        A new ``[N, M]`` tensor of ``inputs``' dtype and device.

    Raises:
        TypeError: an argument is not a tensor; ``ptr`` is not int32/int64; ``other`` or ``bias`` has another dtype
            than ``inputs`` (an ``ArgumentTypeError``, also a ``RuntimeError``).
        ValueError: ``inputs`` is not 2-D, ``other`` not 3-D, ``ptr`` not 1-D; ``other.size(1) != inputs.size(1)``;
            ``ptr`` does not have ``other.size(0) + 1`` entries, does not start at 0, decreases or does not end at
            ``inputs.size(0)``; ``bias`` is not ``[B, M]``; the tensors are on different devices (an
            ``ArgumentError``, also a ``RuntimeError``).

    Example:
        >>> inputs = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> other = torch.stack([torch.eye(2), 2 * torch.eye(2)])
        >>> segment_matmul(inputs, torch.tensor([0, 2, 3]), other)
        tensor([[1., 0.],
                [0., 1.],
                [2., 2.]])
    """
    return _segment_matmul(inputs, ptr, other, bias)


# ------------------------------------------------------------------------------------------- grouped_matmul
def _tensor_list(ts: Any, name: str) -> List[Tensor]:
    if isinstance(ts, Tensor) or not isinstance(ts, (list, tuple)):
        raise ArgumentTypeError(f"{name} must be a list of tensors, got {type(ts).__name__}")
    for i, t in enumerate(ts):
        check_tensor(t, f"{name}[{i}]", ArgumentTypeError)
    return list(ts)


@torch.jit.ignore  # called from TorchScript (PyG scripts the callers) as Python; the public shells below are scriptable
def _grouped_matmul(inputs: List[Tensor], others: List[Tensor], biases: Optional[List[Tensor]] = None) -> List[Tensor]:
    """:func:`grouped_matmul` itself (TorchScript calls it as Python)."""
    if not _grouped_fast_ok(inputs, others, biases):
        _check_grouped(inputs, others, biases)  # raises, naming the argument (or passes: a broadcast bias)
    bs = [None] * len(inputs) if biases is None else biases
    return [torch.mm(x, w) if b is None else torch.mm(x, w).add_(b) for x, w, b in zip(inputs, others, bs)]


def grouped_matmul(inputs: List[Tensor], others: List[Tensor], biases: Optional[List[Tensor]] = None) -> List[Tensor]:
    """Multiplies each matrix of ``inputs`` by its own matrix of ``others``: ``outs[i] = inputs[i] @ others[i]
    (+ biases[i])`` -- PyG's ``HeteroDictLinear``, one weight per node type, each type its own sizes.

    One GEMM per pair on torch's BLAS, a bias added in place to its product. Differentiable w.r.t. every input,
    matrix and bias.

    Args:
        inputs: a list of ``[N_i, K_i]`` tensors, all of one dtype and device.
        others: a list of as many ``[K_i, M_i]`` tensors (any strides: a transposed weight is fine), of the inputs'
            dtype and device.
        biases: optional list of as many biases, each broadcastable to ``[N_i, M_i]`` (usually ``[M_i]``); an
            entry may be None (no bias for that pair).

    Returns:
        A list of new ``[N_i, M_i]`` tensors.

    Raises:
        TypeError: an argument is not a list (or tuple) of tensors; the tensors' dtypes differ (an
            ``ArgumentTypeError``, also a ``RuntimeError``).
        ValueError: the lists have different lengths; a tensor is not 2-D; ``others[i].size(0) !=
            inputs[i].size(1)``; a bias does not broadcast to its output; the tensors are on different devices (an
            ``ArgumentError``, also a ``RuntimeError``).

    Example:
        >>> inputs = [torch.ones(2, 3), torch.ones(1, 2)]
        >>> others = [torch.ones(3, 1), torch.ones(2, 4)]
        >>> outs = grouped_matmul(inputs, others, [torch.tensor([10.0]), None])
        >>> outs[0], outs[1]
        (tensor([[13.],
                [13.]]), tensor([[2., 2., 2., 2.]]))
    """
    return _grouped_matmul(inputs, others, biases)


def _grouped_fast_ok(inputs: Any, others: Any, biases: Any) -> bool:
    """Whether ``grouped_matmul``'s arguments are plainly valid (biases ``[M_i]`` or None), in one quick pass: a
    loop of ``torch.mm`` is the bar, so the usual call is checked at a fraction of a microsecond per pair."""
    if not (type(inputs) in (list, tuple) and type(others) in (list, tuple) and len(inputs) == len(others)):
        return False
    if not inputs:
        return biases is None or (type(biases) in (list, tuple) and not biases)
    x0 = inputs[0]
    if not isinstance(x0, Tensor):
        return False
    dtype, device = x0.dtype, x0.device
    for x, w in zip(inputs, others):
        if not (
            isinstance(x, Tensor)
            and isinstance(w, Tensor)
            and x.dim() == 2
            and w.dim() == 2
            and w.shape[0] == x.shape[1]
            and x.dtype == dtype
            and w.dtype == dtype
            and x.device == device
            and w.device == device
        ):
            return False
    if biases is None:
        return True
    if type(biases) not in (list, tuple) or len(biases) != len(inputs):
        return False
    return all(
        b is None
        or (
            isinstance(b, Tensor)
            and b.dim() == 1
            and b.shape[0] == w.shape[1]
            and b.dtype == dtype
            and b.device == device
        )
        for b, w in zip(biases, others)
    )


def _check_grouped(inputs: Any, others: Any, biases: Any) -> None:
    """``grouped_matmul``'s checks one by one, raising for the first bad argument."""
    xs = _tensor_list(inputs, "inputs")
    ws = _tensor_list(others, "others")
    if len(xs) != len(ws):
        raise ArgumentError(f"inputs has {len(xs)} tensors but others has {len(ws)}; they must pair up")
    bs: List[Optional[Tensor]] = [None] * len(xs)
    if biases is not None:
        if isinstance(biases, Tensor) or not isinstance(biases, (list, tuple)):
            raise ArgumentTypeError(f"biases must be a list of tensors or None, got {type(biases).__name__}")
        if len(biases) != len(xs):
            raise ArgumentError(f"biases has {len(biases)} entries but inputs has {len(xs)}; they must pair up")
        bs = list(biases)
    for i, (x, w, b) in enumerate(zip(xs, ws, bs)):
        if x.dim() != 2 or w.dim() != 2:
            bad, t = (f"inputs[{i}]", x) if x.dim() != 2 else (f"others[{i}]", w)
            raise ArgumentError(f"{bad} must be 2-D, got shape {tuple(t.shape)}")
        _same_dtype(x, f"inputs[{i}]", xs[0], "inputs[0]")
        _same_dtype(w, f"others[{i}]", xs[0], "inputs[0]")
        _same_device(x, f"inputs[{i}]", xs[0], "inputs[0]")
        _same_device(w, f"others[{i}]", xs[0], "inputs[0]")
        if w.size(0) != x.size(1):
            raise ArgumentError(
                f"others[{i}] has shape {tuple(w.shape)} but inputs[{i}] has {tuple(x.shape)}: others[{i}].size(0) "
                f"must equal inputs[{i}].size(1)"
            )
        if b is not None:
            check_tensor(b, f"biases[{i}]", ArgumentTypeError)
            _same_dtype(b, f"biases[{i}]", xs[0], "inputs[0]")
            _same_device(b, f"biases[{i}]", xs[0], "inputs[0]")
            shape = (x.size(0), w.size(1))
            try:
                fits = torch.broadcast_shapes(b.shape, shape) == shape
            except RuntimeError:
                fits = False
            if not fits:
                raise ArgumentError(f"biases[{i}] of shape {tuple(b.shape)} does not broadcast to its output {shape}")


# ---------------------------------------------------------------------------------------------- softmax_csr
@torch.jit.ignore  # called from TorchScript (PyG scripts the callers) as Python; the public shells below are scriptable
def _softmax_csr(src: Tensor, ptr: Tensor, dim: int = 0) -> Tensor:
    """:func:`softmax_csr` itself (TorchScript calls it as Python)."""
    check_tensor(src, "src", ArgumentTypeError)
    ptr = _index_vector(ptr, "ptr")
    if not src.is_floating_point():
        raise ArgumentTypeError(f"softmax_csr needs a floating-point src, got {src.dtype}")
    if src.dim() == 0:
        raise ArgumentError("src must have at least one dimension, got a 0-d tensor")
    dim = normalize_dim(dim, src.dim(), ArgumentTypeError)
    _same_device(ptr, "ptr", src, "src")
    if ptr.device.type == "cpu":  # (on CUDA, scatterx checks the offsets on the device: no sync)
        _segment_sizes(ptr, src.size(dim), f"src.size({dim})")
    return segment_softmax(src, ptr=ptr, dim=dim)


def softmax_csr(src: Tensor, ptr: Tensor, dim: int = 0) -> Tensor:
    """Softmax of ``src`` along ``dim`` within each group of slices ``ptr[i]:ptr[i+1]`` -- PyG's
    ``torch_geometric.utils.softmax`` with ``ptr`` (attention over a node's incoming edges, sorted by node).

    Runs scatterx's segment softmax kernels (:func:`scatterx.segment_softmax` with ``ptr``). Within each group the
    result is ``torch.softmax``'s (a group holding NaN or +inf gives NaN). Differentiable w.r.t. ``src``, double
    backward included.

    Args:
        src: a floating-point tensor (float32/float64; float16/bfloat16 are computed in float32), at least 1-D.
        ptr: int64 or int32 ``[G + 1]``, CSR offsets along ``dim``: ``ptr[0] == 0``, non-decreasing,
            ``ptr[-1] == src.size(dim)``; on ``src``'s device.
        dim: the dimension the groups run along (negative counts from the end).

    Returns:
        A new tensor of ``src``'s shape, dtype and device.

    Raises:
        TypeError: ``src`` or ``ptr`` is not a tensor; ``src`` is not floating point; ``ptr`` is not int32/int64;
            ``dim`` is not an int (an ``ArgumentTypeError``, also a ``RuntimeError``).
        ValueError: ``src`` is 0-d; ``ptr`` is not 1-D, is on another device, is empty, does not start at 0,
            decreases or does not end at ``src.size(dim)`` (an ``ArgumentError``, also a ``RuntimeError``;
            on CUDA the offsets' values are checked on the device instead).
        IndexError: ``dim`` is out of range.

    Example:
        >>> src = torch.tensor([[1.0, 0.0], [1.0, 0.0], [5.0, 0.0]])
        >>> softmax_csr(src, torch.tensor([0, 2, 3]))
        tensor([[0.5000, 0.5000],
                [0.5000, 0.5000],
                [1.0000, 1.0000]])
        >>> softmax_csr(src, torch.tensor([0, 2]), dim=-1)
        tensor([[0.7311, 0.2689],
                [0.7311, 0.2689],
                [0.9933, 0.0067]])
    """
    return _softmax_csr(src, ptr, dim)


# ----------------------------------------------------------------------------------------------- index_sort
@torch.jit.ignore  # called from TorchScript (PyG scripts the callers) as Python; the public shells below are scriptable
def _index_sort(inputs: Tensor, max_value: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    """:func:`index_sort` itself (TorchScript calls it as Python)."""
    check_tensor(inputs, "inputs", ArgumentTypeError)
    if inputs.dtype == torch.bool or inputs.is_floating_point() or inputs.is_complex():
        raise ArgumentTypeError(f"inputs must have an integer dtype, got {inputs.dtype}")
    if inputs.dim() != 1:
        raise ArgumentError(f"inputs must be 1-D, got shape {tuple(inputs.shape)}")
    if max_value is not None and (isinstance(max_value, bool) or not isinstance(max_value, int)):
        raise ArgumentTypeError(f"max_value must be an int or None, got {type(max_value).__name__}")
    if inputs.numel() >= _SORTED_CHECK_FROM and bool((inputs[1:] >= inputs[:-1]).all()):
        # already sorted (a graph stored by target): one comparison pass instead of a sort -- on a products-sized
        # edge list (62M) 0.2 s against 1.5-2.4 s, which PyG's loaders pay when they build their CSC
        return inputs.clone(), torch.arange(inputs.numel(), device=inputs.device)
    values, perm = torch.sort(inputs, stable=True)
    return values, perm


def index_sort(inputs: Tensor, max_value: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    """Sorts a vector of integers: ``(sorted values, perm)`` with ``inputs[perm] == sorted values``, ties in their
    original order (a stable sort) -- PyG's ``index_sort`` of node/edge types and cluster ids.

    Args:
        inputs: a 1-D integer tensor (pyg-lib expects non-negative values; any integers sort here).
        max_value: an upper bound of the values, a hint pyg-lib's radix sort uses; the result here does not depend
            on it (it is checked to be an int or None, and not used).

    Returns:
        ``(values, perm)``: the sorted values (``inputs``' dtype) and the int64 positions they came from.

    Raises:
        TypeError: ``inputs`` is not a tensor or not of an integer dtype; ``max_value`` is not an int (an
            ``ArgumentTypeError``, also a ``RuntimeError``).
        ValueError: ``inputs`` is not 1-D (an ``ArgumentError``, also a ``RuntimeError``, as pyg-lib raises).

    Example:
        >>> index_sort(torch.tensor([2, 0, 1, 0]), max_value=2)
        (tensor([0, 0, 1, 2]), tensor([1, 3, 2, 0]))
    """
    return _index_sort(inputs, max_value)


# --------------------------------------------------------------------------------------------- sampled ops
@torch.jit.ignore  # called from TorchScript (PyG scripts the callers) as Python; the public shells below are scriptable
def _sampled(
    left: Tensor, right: Tensor, left_index: Optional[Tensor], right_index: Optional[Tensor], op: str
) -> Tensor:
    """Checks, then ``left[left_index] (op) right[right_index]`` on torch's differentiable ops: the four
    ``sampled_*`` functions themselves."""
    check_tensor(left, "left", ArgumentTypeError)
    check_tensor(right, "right", ArgumentTypeError)
    _same_dtype(right, "right", left, "left")
    _same_device(right, "right", left, "left")
    if left.dim() == 0 or right.dim() == 0:
        raise ArgumentError(f"{'left' if left.dim() == 0 else 'right'} must have at least one dimension, got 0-d")
    if left.shape[1:] != right.shape[1:]:
        raise ArgumentError(
            f"left has shape {tuple(left.shape)} and right {tuple(right.shape)}: they must match in every dimension "
            "but the first"
        )
    rows = []
    for t, given, name in ((left, left_index, "left"), (right, right_index, "right")):
        if given is None:
            rows.append(t.size(0))
            continue
        index = _index_vector(given, f"{name}_index")
        _same_device(index, f"{name}_index", t, name)
        if index.numel():
            low, high = (int(v) for v in torch.aminmax(index))
            if low < 0 or high >= t.size(0):
                raise IndexError(
                    f"{name}_index holds {low if low < 0 else high}, out of range for {name} with {t.size(0)} rows"
                )
        rows.append(index.numel())
    some_index = left_index is not None or right_index is not None
    if rows[0] != rows[1] and not (some_index and 1 in rows):
        raise ArgumentError(
            f"the sampled left has {rows[0]} rows and the sampled right {rows[1]}: they must match"
            + ("" if some_index else " (left.size(0) must equal right.size(0) when no index is given)")
        )
    a = left if left_index is None else left.index_select(0, left_index)
    b = right if right_index is None else right.index_select(0, right_index)
    if op == "add":
        return a + b
    if op == "sub":
        return a - b
    if op == "mul":
        return a * b
    return a / b


# The four sampled ops share their documentation; each states its own operator and example.
_SAMPLED_DOC = """The {what} of sampled rows: ``left[left_index] {symbol} right[right_index]`` (an index left out takes
    every row in order) -- e.g. a value per edge from its two end nodes' rows. Differentiable w.r.t. ``left`` and
    ``right``.

    Args:
        left: a tensor of at least 1 dimension (pyg-lib: ``[N, F]``).
        right: a tensor of ``left``'s dtype and device, the same size as ``left`` in every dimension but the
            first.
        left_index: optional int64/int32 ``[E]``, the rows of ``left`` to take.
        right_index: optional int64/int32 ``[E]``, the rows of ``right`` to take.

    Returns:
        A new tensor with as many rows as the sampled operands (with an index given, a single sampled row is
        broadcast, as in pyg-lib) and ``left``'s other dimensions.

    Raises:
        TypeError: an argument is not a tensor; ``right`` has another dtype than ``left``; an index is not
            int32/int64 (an ``ArgumentTypeError``, also a ``RuntimeError``).
        ValueError: ``left`` and ``right`` differ beyond the first dimension or are on different devices; an
            index is not 1-D; the sampled operands have different numbers of rows (an ``ArgumentError``, also
            a ``RuntimeError``).
        IndexError: an index entry is negative or not below its tensor's ``size(0)``.

    Example:
        >>> left, right = torch.tensor([[1.0], [2.0]]), torch.tensor([[10.0], [20.0], [30.0]])
        >>> {name}(left, right, torch.tensor([0, 1]), torch.tensor([2, 0]))
        {result}
    """


def sampled_add(
    left: Tensor, right: Tensor, left_index: Optional[Tensor] = None, right_index: Optional[Tensor] = None
) -> Tensor:
    return _sampled(left, right, left_index, right_index, "add")


def sampled_sub(
    left: Tensor, right: Tensor, left_index: Optional[Tensor] = None, right_index: Optional[Tensor] = None
) -> Tensor:
    return _sampled(left, right, left_index, right_index, "sub")


def sampled_mul(
    left: Tensor, right: Tensor, left_index: Optional[Tensor] = None, right_index: Optional[Tensor] = None
) -> Tensor:
    return _sampled(left, right, left_index, right_index, "mul")


def sampled_div(
    left: Tensor, right: Tensor, left_index: Optional[Tensor] = None, right_index: Optional[Tensor] = None
) -> Tensor:
    return _sampled(left, right, left_index, right_index, "div")


sampled_add.__doc__ = _SAMPLED_DOC.format(
    what="sum", symbol="+", name="sampled_add", result="tensor([[31.],\n                [12.]])"
)
sampled_sub.__doc__ = _SAMPLED_DOC.format(
    what="difference", symbol="-", name="sampled_sub", result="tensor([[-29.],\n                [ -8.]])"
)
sampled_mul.__doc__ = _SAMPLED_DOC.format(
    what="product", symbol="*", name="sampled_mul", result="tensor([[30.],\n                [20.]])"
)
sampled_div.__doc__ = _SAMPLED_DOC.format(
    what="quotient", symbol="/", name="sampled_div", result="tensor([[0.0333],\n                [0.2000]])"
)
