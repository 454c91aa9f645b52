"""Argument handling shared by the framework frontends (``pytorch``, ``onnx``, ``tf``, ``paddle``).

Frontends are thin: they check their framework's rules, translate arguments into a ``planner.XMap`` (built by its
constructors ``XMap.along_dim``, ``XMap.slices``, ``XMap.nd``) and call ``planner.scatter`` / ``planner.gather``.
What they share lives here: tensor and index checks, the wrapping of negative indices for the frameworks that
allow them (ONNX, Paddle), and the ND gather/scatter that ONNX and TensorFlow both have. Every check runs before
anything is written.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from typing import Callable, Sequence

import torch

from . import planner
from ._reductions import SUPPORTED_DTYPES
from .ops._checks import INDEX_DTYPES, as_dim, check_tensor, constant_dim
from .planner import XMap


def check_index(index, name: str, like: torch.Tensor) -> torch.Tensor:
    check_tensor(index, name)
    if index.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name} must have dtype int32 or int64, got {index.dtype}")
    if index.device != like.device:
        raise ValueError(f"{name} is on {index.device} but the data is on {like.device}")
    return index


def check_updates(updates, data: torch.Tensor, name: str = "updates", reduces: bool = True) -> torch.Tensor:
    """Same dtype and device as ``data``; a dtype the kernels support when values are combined."""
    check_tensor(updates, name)
    if updates.dtype != data.dtype:
        raise TypeError(f"{name} has dtype {updates.dtype} but the data has {data.dtype}; they must match")
    if updates.device != data.device:
        raise ValueError(f"{name} is on {updates.device} but the data is on {data.device}")
    if reduces and data.dtype not in SUPPORTED_DTYPES:
        names = ", ".join(str(d).replace("torch.", "") for d in SUPPORTED_DTYPES)
        raise TypeError(f"reducing {data.dtype} is not supported; scatterx reduces {names}")
    return updates


def check_shape(t: torch.Tensor, expected: Sequence[int], name: str, why: str = "") -> None:
    if list(t.shape) != list(expected):
        raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(expected)}{why}")


def normalize_axis(axis, ndim: int, name: str = "axis") -> int:
    axis = as_dim(axis, name)
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise IndexError(f"{name}={axis} is out of range for a tensor with {ndim} dimension(s)")
    return constant_dim(axis % max(ndim, 1), max(ndim, 1))


_NARROW_INTEGERS = (torch.int8, torch.int16, torch.int32, torch.uint8)


def wrap_negative(index: torch.Tensor, sizes, name: str) -> torch.Tensor:
    """Indices in ``[-size, size)`` -> ``[0, size)`` (ONNX and Paddle count negative indices from the end).
    ``sizes``: an int, or a list with one size per entry of ``index``'s last dim (ND indices). IndexError for
    anything outside. An index of a narrower type than a size is widened to int64 first: an int32 ``-1`` into a
    dim of 2^31 elements or more counts from its end, and ``-size`` is not an int32."""
    largest = sizes
    if isinstance(sizes, (list, tuple)):  # (torch.sym_max: sizes are symbolic while torch.compile traces)
        largest = 0
        for size in sizes:
            largest = torch.sym_max(largest, size)
    if index.dtype in _NARROW_INTEGERS and largest > torch.iinfo(index.dtype).max:
        index = index.to(torch.int64)
    if torch.compiler.is_compiling():  # traced: no value is read; wrap every entry (the ops check the range)
        per = torch.as_tensor(sizes, dtype=torch.int64, device=index.device).to(index.dtype)
        wrapped = torch.where(index < 0, index + per, index)
        # an entry below -size is still negative: it goes past the end instead, where the op's range check refuses
        # it (a graph whose indexing counts negative entries from the end, as Inductor's does, would wrap it again)
        return torch.where(wrapped < 0, per, wrapped)
    if index.numel() == 0:
        return index
    # one pass for the common case, every entry already in [0, size): the extremes, per coordinate for ND indices
    if not isinstance(sizes, int) and len(sizes) == 1:
        sizes = sizes[0]  # one coordinate: the extremes of the whole index (cheaper than per column)
    if isinstance(sizes, int):
        low, high = (int(v) for v in torch.aminmax(index))
        if low >= 0 and high < sizes:
            return index
    else:
        lows, highs = (v.tolist() for v in torch.aminmax(index.reshape(-1, len(sizes)), dim=0))
        if all(lo >= 0 and hi < size for lo, hi, size in zip(lows, highs, sizes)):
            return index
    per = torch.as_tensor(sizes, dtype=torch.int64, device=index.device)
    bad = (index < -per) | (index >= per)
    if bool(bad.any()):
        where = tuple(int(i) for i in torch.nonzero(bad)[0])
        size = int(per) if per.dim() == 0 else int(per[where[-1]])
        raise IndexError(
            f"{name}{list(where)} = {int(index[where])} is out of range for a dimension of size "
            f"{size} (valid: [{-size}, {size - 1}])"
        )
    negative = index < 0
    if bool(negative.any()):
        index = torch.where(negative, index + per.to(index.dtype), index)
    return index


def check_out(out, like: torch.Tensor, op: str, *inputs) -> None:
    """An ``out=`` tensor of the result's dtype and device, and no gradient wanted through the call (torch's rule
    for ``out=``): TypeError / ValueError before anything is computed or written."""
    check_tensor(out, "out")
    if out.dtype != like.dtype:
        raise TypeError(f"{op}: out has dtype {out.dtype} but the result has {like.dtype}")
    if out.device != like.device:
        raise ValueError(f"{op}: out is on {out.device} but the result is on {like.device}")
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in (out,) + inputs):
        raise ValueError(f"{op}: out= does not support automatic differentiation, and an argument requires grad")


def write_out(out: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
    """``result`` copied into ``out`` (resized first where its shape differs, with torch's warning when it held
    elements); the call's checks all passed before this, so ``out`` is written only by a call that succeeds."""
    if out.shape != result.shape:
        if out.numel():
            warnings.warn(
                f"An output with one or more elements was resized since it had shape {list(out.shape)}, which does "
                f"not match the required output shape {list(result.shape)}.",
                UserWarning,
                stacklevel=3,
            )
        out.resize_(result.shape)
    return out.copy_(result)


def wrapping_on_failure(run: Callable[[XMap], torch.Tensor], m: XMap, sizes) -> torch.Tensor:
    """``run(m)`` for a map whose indices may count from the end of their dims (ONNX, Paddle), without a pass of
    its own over them: ``run`` first takes the indices as they are -- the kernels and the planner check every entry
    and write nothing of the caller's on a bad one -- and only if one is out of range are the negative ones
    wrapped (:func:`wrap_negative`, which raises for an entry outside ``[-s, s)``) and ``run`` called again. A
    call with no negative index so saves the pass; one with negative indices pays a failed first try. Traced, the
    indices are wrapped first (no value can be read to tell)."""
    if torch.compiler.is_compiling():
        wrapped = wrap_negative(m.index, sizes, "indices")
        return run(m if wrapped is m.index else replace(m, index=wrapped))
    try:
        return run(m)
    except IndexError:
        pass  # (out of the handler: the error the wrap raises is the caller's, not a consequence of this one)
    wrapped = wrap_negative(m.index, sizes, "indices")
    if wrapped is m.index:  # nothing negative, nothing out of range: the first failure was another one
        return run(m)
    return run(replace(m, index=wrapped))


def scalar_or_tensor(value, like: torch.Tensor, name: str) -> torch.Tensor:
    """A Python number becomes a 0-d tensor of ``like``'s dtype (to be broadcast by the caller); one that ``like``'s
    dtype cannot hold -- a finite float beyond its largest value, an int beyond its range -- is a ValueError, as
    torch refuses it (``torch.scatter(..., value)``) rather than writing inf or a wrapped integer."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (bool, int, float)):
        dtype = like.dtype
        if torch.compiler.is_compiling():
            # traced with dynamic shapes a number argument is symbolic, and Python cannot compare its value: it is
            # converted as torch converts a scalar argument, whose own check refuses a value the dtype cannot hold
            # (torch's RuntimeError where eager raises the ValueError below)
            return torch.full((), value, dtype=dtype, device=like.device)
        if not isinstance(value, bool) and dtype != torch.bool and not dtype.is_complex:
            if dtype.is_floating_point:
                fits = not math.isfinite(value) or abs(value) <= torch.finfo(dtype).max
            else:
                info = torch.iinfo(dtype)
                fits = math.isfinite(value) and info.min <= int(value) <= info.max
            if not fits:
                raise ValueError(f"{name}={value!r} cannot be converted to {dtype} without overflow")
        return torch.tensor(value, dtype=dtype, device=like.device)
    raise TypeError(f"{name} must be a torch.Tensor or a number, got {type(value).__name__}")


# ------------------------------------------------------------------------------------- ND (ONNX and TensorFlow)
def nd_map(data, indices, batch_dims: int, op: str) -> XMap:
    """The map of ``GatherND``/``ScatterND``/``*_nd`` after the argument checks (indices as given)."""
    check_tensor(data, "data")
    check_index(indices, "indices", data)
    return XMap.nd(indices, data.shape, batch_dims, op)


def _nd_run(m: XMap, data, batch_dims: int, negative: bool, run: Callable[[XMap], torch.Tensor]) -> torch.Tensor:
    """``run(m)``; ``negative``: indices may count from the end of their dim (ONNX), else they must be in range
    (TensorFlow)."""
    if not negative:
        return run(m)
    b, k = batch_dims, m.index.size(-1)
    return wrapping_on_failure(run, m, list(data.shape[b : b + k]))


def nd_gather(data, indices, batch_dims: int, op: str, negative: bool) -> torch.Tensor:
    """Slices ``data[b, indices[b, i]]``; output shape ``B + I + data.shape[b+k:]``."""
    m = nd_map(data, indices, batch_dims, op)
    return _nd_run(m, data, batch_dims, negative, lambda m: planner.gather(m, data))


def nd_scatter(data, indices, updates, mode: str, op: str, negative: bool) -> torch.Tensor:
    """``updates[i]`` (a slice of shape ``data.shape[k:]``) reduced into ``data[indices[i]]`` (a new tensor)."""
    m = nd_map(data, indices, 0, op)
    check_updates(updates, data, reduces=mode != "assign")
    check_shape(updates, m.shape, "updates", " (indices.shape[:-1] + data.shape[indices.shape[-1]:])")
    return _nd_run(m, data, 0, negative, lambda m: planner.scatter(m, data, updates, mode, include_self=True))
