"""Argument checks shared by the ops. Every check runs before any kernel and before ``out`` is touched.

Cheap by design: nothing here reads ``src``; the index itself is validated inside the one kernel pass that also
builds the segments (``kernels/cpu/index.py``) and only a failure comes back here to be explained.
"""

from __future__ import annotations

from typing import Optional

import torch

from .._reductions import SUPPORTED_DTYPES

INDEX_DTYPES = (torch.int32, torch.int64)


def check_src(src) -> None:
    if not isinstance(src, torch.Tensor):
        raise TypeError(f"src must be a torch.Tensor, got {type(src).__name__}")
    if src.dtype not in SUPPORTED_DTYPES:
        names = ", ".join(str(d).replace("torch.", "") for d in SUPPORTED_DTYPES)
        raise TypeError(f"src has dtype {src.dtype}; scatterx supports {names}")
    if src.dim() == 0:
        raise ValueError("src must have at least one dimension, got a 0-d tensor")
    if src.device.type == "cuda":
        from ..kernels.gpu import available

        if not available():
            raise NotImplementedError("scatterx runs CUDA tensors on Triton kernels: install triton (pip install triton)")
    elif src.device.type != "cpu":
        raise NotImplementedError(f"scatterx has no kernel for device {src.device} (CPU and CUDA only)")


def normalize_dim(dim, ndim: int) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < ndim:
        raise IndexError(f"dim {dim} is out of range for src with {ndim} dimension(s) (expected [{-ndim}, {ndim - 1}])")
    return dim % ndim


def check_integer_vector(t, name: str, src: torch.Tensor) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name} must have dtype int32 or int64, got {t.dtype}")
    if t.dim() != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
    if t.device != src.device:
        raise ValueError(f"{name} is on {t.device} but src is on {src.device}")


def check_dim_size(dim_size) -> Optional[int]:
    if dim_size is None:
        return None
    if isinstance(dim_size, torch.Tensor) and dim_size.numel() == 1 and not dim_size.is_floating_point():
        dim_size = int(dim_size)
    if isinstance(dim_size, bool) or not isinstance(dim_size, int):
        raise TypeError(f"dim_size must be an int or None, got {type(dim_size).__name__}")
    if dim_size < 0:
        raise ValueError(f"dim_size must be >= 0, got {dim_size}")
    return dim_size


def check_out(out, src: torch.Tensor, dim: int, dim_size: Optional[int]) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor, got {type(out).__name__}")
    if out.dtype != src.dtype:
        raise TypeError(f"out has dtype {out.dtype} but src has dtype {src.dtype}; they must match")
    if out.device != src.device:
        raise ValueError(f"out is on {out.device} but src is on {src.device}")
    expected = list(src.shape)
    expected[dim] = out.size(dim) if out.dim() == src.dim() else -1
    if out.dim() != src.dim() or list(out.shape) != expected:
        raise ValueError(
            f"out has shape {tuple(out.shape)}; it must match src's shape {tuple(src.shape)} in every dimension "
            f"but dim={dim}"
        )
    if dim_size is not None and out.size(dim) != dim_size:
        raise ValueError(f"dim_size={dim_size} disagrees with out.size({dim})={out.size(dim)}")


def explain_bad_index(index: torch.Tensor, num_segments: int, sorted: bool, name: str = "index") -> Exception:
    """The exception for an index a kernel rejected (the failure path only, so plain torch ops are fine)."""
    if sorted:
        decreases = torch.nonzero(index[1:] < index[:-1])
        if decreases.numel():
            i = int(decreases[0]) + 1
            return ValueError(
                f"{name} is not sorted: {name}[{i}]={int(index[i])} < {name}[{i - 1}]={int(index[i - 1])}; "
                "pass sorted=False for an unsorted index"
            )
    wrong = torch.nonzero((index < 0) | (index >= num_segments))
    if not wrong.numel():  # cannot happen: the kernel and this check disagree
        raise AssertionError(f"{name} was rejected but no bad entry was found")
    i = int(wrong[0])
    value = int(index[i])
    if value < 0:
        return IndexError(f"{name}[{i}]={value} is negative; indices must be in [0, {num_segments})")
    return IndexError(f"{name}[{i}]={value} is out of range for dim_size={num_segments} (must be < {num_segments})")
