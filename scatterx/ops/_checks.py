"""Argument checks shared by the ops, and the home of the checks every frontend shares (``check_tensor``,
``normalize_dim``: the torch_scatter and pyg-lib drop-ins call them with their own exception classes). Every check
runs before any kernel and before ``out`` is touched.

Cheap by design: nothing here reads ``src`` or the values of an index. Index and offset values are checked by the
backend in the pass that builds the segments anyway (``backends/cpu/segments.py``, ``backends/gpu/segments.py``).
"""

from __future__ import annotations

import operator
import os
from typing import Callable, Optional, Type, Union, cast

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch._subclasses.functional_tensor import FunctionalTensor

from .._reductions import SUPPORTED_DTYPES
from ..kernels.gpu import available as triton_available

INDEX_DTYPES = (torch.int32, torch.int64)

#: the tensor types of torch's tracers (``plain_index`` leaves them as they are)
_TRACED = (FakeTensor, FunctionalTensor)


#: whether one of torch.func's transforms (vmap, grad, jacrev, jvp, functionalize) wraps the call
functorch_active: Callable[[], bool] = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)


def forward_ad_active() -> bool:
    """Whether a forward-mode AD level (``torch.autograd.forward_ad.dual_level``) is open."""
    return torch.autograd.forward_ad._current_level >= 0


def check_autodiff(*args) -> None:
    """Refuse what the ops do not implement, before any kernel runs: forward-mode AD, whose tangent the kernels
    would drop without a word (they read a dual tensor's primal, and a dual tensor does not ask for a gradient),
    and torch.func's transforms, which failed deep inside torch. A few attribute reads when neither is in use."""
    if functorch_active():
        raise NotImplementedError(
            "scatterx's ops do not support torch.func transforms (vmap, grad, jacrev, jvp, ...): call them "
            "outside the transform, and take gradients with torch.autograd (backward() or torch.autograd.grad)"
        )
    if forward_ad_active():
        for t in args:
            if isinstance(t, torch.Tensor) and torch.autograd.forward_ad.unpack_dual(t).tangent is not None:
                raise NotImplementedError(
                    "scatterx's ops do not support forward-mode AD (a dual tensor from torch.autograd.forward_ad): "
                    "its tangent would be lost; take gradients in reverse mode (backward() or torch.autograd.grad)"
                )


def check_tensor(t, name: str, error: Type[TypeError] = TypeError, what: str = "a torch.Tensor") -> torch.Tensor:
    """``t``, if it is a tensor (a list or a NumPy array is not); else ``error`` naming the argument:
    ``"{name} must be {what}, got {type}"``. ``error``: a ``TypeError`` or a subclass of it (pyg-lib's drop-in
    raises its ``ArgumentTypeError``, also a ``RuntimeError``); ``name`` and ``what``: the caller's words (pyg-lib's
    samplers say ``"a tensor"``)."""
    if not isinstance(t, torch.Tensor):
        raise error(f"{name} must be {what}, got {type(t).__name__}")
    if t.layout != torch.strided:  # the kernels read a dense tensor's memory
        raise error(f"{name} must be a dense (strided) tensor, got layout {t.layout}")
    # (before any read of an index's values; not while Dynamo traces, which cannot trace functorch's query)
    if not torch.compiler.is_compiling() and functorch_active():
        check_autodiff()
    return t


def plain_index(t: torch.Tensor) -> torch.Tensor:
    """An index of a tensor subclass (PyG's ``EdgeIndex`` and ``Index``, for example) as a plain tensor of the same
    memory: the kernels read that memory (NumPy refuses subclasses), and an integer tensor has no gradient to lose.

    The tensors torch's tracers make are subclasses of their own, and pass as they are: under ``torch.compile``
    Dynamo's, and -- while AOTAutograd, ``torch.export`` or ``make_fx`` run the op's body, when
    ``torch.compiler.is_compiling()`` is already false again -- ``FunctionalTensor`` and ``FakeTensor``, which
    refuse to be unwrapped outside their mode."""
    if type(t) is torch.Tensor or torch.compiler.is_compiling() or isinstance(t, _TRACED):
        return t
    as_tensor = getattr(t, "as_tensor", None)  # PyG >= 2.6: its wrapper subclasses' data (as_subclass refuses them)
    if callable(as_tensor):
        data = as_tensor()
        if type(data) is torch.Tensor:
            return data
    return t.as_subclass(torch.Tensor)


def check_src(src, name: str = "src") -> None:
    check_tensor(src, name)
    if not torch.compiler.is_compiling():
        check_autodiff(src)
    if src.dtype not in SUPPORTED_DTYPES:
        names = ", ".join(str(d).replace("torch.", "") for d in SUPPORTED_DTYPES)
        raise TypeError(f"{name} has dtype {src.dtype}; scatterx supports {names}")
    check_device(src, name)


def check_device(t: torch.Tensor, name: str) -> None:
    if t.device.type == "cuda":
        if not triton_available():
            raise NotImplementedError(
                "scatterx runs CUDA tensors on Triton kernels: install triton (pip install triton)"
            )
    elif t.device.type != "cpu":
        raise NotImplementedError(f"scatterx has no kernel for {name} on device {t.device} (CPU and CUDA only)")


def as_dim(dim, name: str = "dim", error: Type[TypeError] = TypeError) -> int:
    """``dim`` as an int, taken as torch's own ``dim`` arguments take it: an int, a NumPy integer, a 0-d integer
    tensor (anything with ``__index__``, as a PyG or NumPy caller's dim often is), but not a bool, a float or a
    tensor with dims -- else ``error`` naming ``name``."""
    if type(dim) is int:
        return dim
    if isinstance(dim, bool) or not hasattr(dim, "__index__") or (isinstance(dim, torch.Tensor) and dim.dim()):
        raise error(f"{name} must be an int, got {type(dim).__name__}")
    try:
        return operator.index(dim)
    except (TypeError, RuntimeError):  # (a NumPy bool, a float tensor)
        raise error(f"{name} must be an int, got {type(dim).__name__}") from None


def normalize_dim(dim, ndim: int, error: Type[TypeError] = TypeError, zero_d_as_1d: bool = False) -> int:
    """``dim`` of a tensor of ``ndim`` dims as a non-negative dim: ``error`` (a ``TypeError`` or a subclass, as
    in :func:`check_tensor`) unless it is an integer (:func:`as_dim`), IndexError outside ``[-ndim, ndim)``.
    ``zero_d_as_1d``: a 0-d tensor takes the dims of a 1-d one (0 and -1), as torch's own ``dim`` arguments and
    torch_scatter take them; else it has no dim."""
    dim = as_dim(dim, error=error)
    dims = max(ndim, 1) if zero_d_as_1d else ndim
    if not -dims <= dim < dims:
        raise IndexError(f"dim {dim} is out of range for src with {ndim} dimension(s) (expected [{-dims}, {dims - 1}])")
    return constant_dim(dim % dims, dims)


def constant_dim(dim, dims: int) -> int:
    """``dim`` (in ``[0, dims)``) as a plain int. Traced with dynamic shapes, an int argument (a dim, an axis) is
    symbolic, and the plans made from it in Python (sorting dims, picking strides) cannot take it: as torch's own
    ops do, the graph is specialised on its value (compared with each dim: a guard), and a call with another dim
    compiles again."""
    if not torch.compiler.is_compiling():
        return dim
    for d in range(dims):
        if dim == d:
            return d
    return dim


def check_integer_vector(t, name: str, like: torch.Tensor, allow_scalar: bool = False) -> torch.Tensor:
    """``t`` as a 1-D int32/int64 tensor on ``like``'s device (a 0-d one is one entry when ``allow_scalar``, as
    torch's index_add takes it)."""
    t = plain_index(check_tensor(t, name))
    if t.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name} must have dtype int32 or int64, got {t.dtype}")
    if t.dim() == 0 and allow_scalar:
        t = t.view(1)
    if t.dim() != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
    if t.device != like.device:
        raise ValueError(f"{name} is on {t.device} but src is on {like.device}")
    return t


def check_size(value, name: str) -> Optional[Union[int, torch.SymInt]]:
    """A size argument (``dim_size``, ``num_rows``): an int >= 0 (a NumPy integer, or a one-element integer
    tensor, as torch's size arguments take them), or None. A bool is not a size."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point():
        if value.dtype == torch.bool or value.is_complex():
            raise TypeError(f"{name} must be an int, got a tensor of {value.dtype}")
        value = int(value)
    elif not isinstance(value, (bool, int, torch.SymInt)) and hasattr(value, "__index__"):
        try:
            value = operator.index(value)  # a NumPy integer (a NumPy bool refuses)
        except TypeError:
            raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None
    if isinstance(value, torch.SymInt):
        # traced with a dynamic size (torch.export with Dim, torch.compile(dynamic=True)): a size the tracer
        # knows to be >= 0 (a tensor's size) stays symbolic; the op's schema takes it as it is
        torch._check(value >= 0, lambda: f"{name} must be >= 0")
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def check_index_and_size(index, size, size_name: str, row_bytes: int = 8):
    """``(index, size)`` for the conversions that take an index and a number of rows (``index_to_ptr``,
    ``csr_transpose``, ``csr_order``): a 1-D int32/int64 index, and an int >= 0 (None is a TypeError here), whose
    ``size + 1`` rows of ``row_bytes`` can be allocated (8: the offsets; 16 for a caller that also counts each
    row's entries)."""
    check_tensor(index, "index")
    index = check_integer_vector(index, "index", index)
    size = check_size(size, size_name)
    if size is None:
        raise TypeError(f"{size_name} must be an int, got None")
    if not torch.compiler.is_compiling():  # (formatting a traced size would specialise it)
        check_allocation(size + 1, row_bytes, index.device, f"{size_name}={size}")
    return index, size


def check_out(out, src: torch.Tensor, dim: int, dim_size: Optional[int]) -> None:
    check_tensor(out, "out")
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


# ------------------------------------------------------------------------------------------ traced sizes
#: torch versions whose symbolic shapes need a data-dependent size marked size-like (``torch._check_is_size``);
#: later ones take ``torch._check(top >= 0)`` and warn that ``_check_is_size`` is going away
_MARK_SIZE_LIKE = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2]) < (2, 13)


def traced_size(top: torch.Tensor) -> int:
    """``top + 1``, the size an output takes from its index's largest entry ``top`` (a 0-d tensor), while
    torch.compile traces: a data-dependent size, bounded for the checks that read it (>= 0; no dim holds 2**48
    rows). The kernels check every entry of the index against it when the compiled call runs. (``item()``, not
    ``int()``: torch.export's non-strict tracing, its default, makes ``int`` of a data-dependent value a guard it
    cannot evaluate.) A negative ``top`` (every entry negative) is read as 0: the size's ``>= 0`` would otherwise
    fail as a RuntimeError of the compiled graph before the kernel's check raises its IndexError for the entry."""
    value = cast(int, top.clamp(min=0).item())
    if _MARK_SIZE_LIKE:
        torch._check_is_size(value)
    else:
        torch._check(value >= 0)
    torch._check(value < 2**48)
    return value + 1


# --------------------------------------------------------------------------------------------- huge sizes
# Below this many bytes an allocation is not worth asking about (the check reads /proc/meminfo).
_ASK_ABOVE_BYTES = 1 << 30


def check_allocation(rows: int, row_bytes: int, device: torch.device, what: str) -> None:
    """Raise before a kernel runs if ``rows`` rows of ``row_bytes`` bytes (an output and the offsets that go with
    it) cannot be allocated: ValueError when the size does not fit in int64, MemoryError when it exceeds the
    memory the device has free. ``what`` names the argument the size came from, e.g. ``"dim_size=1099511627776"``.
    Without this, the allocation fails inside NumPy, Numba or torch with a message that names nothing. For eager
    calls only: the callers skip it while torch.compile traces, where a size may be symbolic and formatting it into
    ``what`` would specialise it."""
    nbytes = rows * row_bytes
    if rows >= 2**63 or nbytes >= 2**63:
        raise ValueError(f"{what} is too large: {rows:,} rows of {row_bytes} bytes do not fit in 64-bit sizes")
    if nbytes <= _ASK_ABOVE_BYTES:
        return
    free = _free_bytes(device)
    if free is not None and nbytes > free:
        advice = "check dim_size" if what.startswith("dim_size=") else "check the index, or pass dim_size"
        raise MemoryError(
            f"{what} would need {_human(nbytes)} ({rows:,} rows of {row_bytes} bytes) for the output and its "
            f"offsets, more than the {_human(free)} free on {device}; {advice}"
        )


def _free_bytes(device: torch.device) -> Optional[int]:
    """Memory an allocation on ``device`` can still get (RAM available plus free swap on the CPU), or None."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo") as f:
            info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f if line.split()[1:2]}
        return info.get("MemAvailable", info.get("MemFree", 0)) + info.get("SwapFree", 0)
    except (OSError, ValueError, IndexError):
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        return pages * size if pages > 0 and size > 0 else None


def _human(nbytes: int) -> str:
    value = float(nbytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if value < 1024 or unit == "PiB":
            return f"{value:,.0f} {unit}" if unit == "bytes" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{nbytes} bytes"
