"""What the GPU backend's modules share: ``launch`` (every kernel launch goes through it: straight to Triton in eager
mode, through ``wrap_triton`` while a tracer runs), the ``Variant`` a launch compiles, Triton's names for torch
dtypes, and ``cdiv``.

A Triton kernel is compiled once per *variant*: its ``tl.constexpr`` values and the types of its other arguments.
Each backend module says, in its ``variants()``, every variant its launches can ask for (built from the same
helpers the launch uses); ``variants.py`` collects them, ``scatterx gpu-report`` compiles them all for real GPUs,
and ``recording()`` lets the test suite check that every launch it makes is one of them.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Dict, Iterator, Optional, Set, Tuple

import torch
import triton.language as tl
from torch._subclasses.fake_tensor import FakeTensor
from torch._subclasses.functional_tensor import FunctionalTensor
from triton.runtime.interpreter import InterpretedFunction

from ..._reductions import REDUCTIONS
from ...kernels.gpu._codegen import kernel_code

try:
    from torch.library import wrap_triton
except ImportError:  # torch < 2.6: no triton_op either (ops/_library.py), so a plain launch is what runs

    def wrap_triton(kernel):
        return kernel


TL_DTYPE = {
    torch.float32: tl.float32,
    torch.float64: tl.float64,
    torch.float16: tl.float16,
    torch.bfloat16: tl.bfloat16,
    torch.int32: tl.int32,
    torch.int64: tl.int64,
}
#: the dtypes a kernel's data may have, and the floating ones (softmax, gradients, GNN layers)
DTYPES = tuple(TL_DTYPE)
FLOATS = tuple(d for d in DTYPES if d.is_floating_point)

#: one reduction per ``REDUCE`` value the kernels are compiled with (mean runs as sum: ``_codegen.kernel_code``)
KERNEL_REDUCTIONS = tuple(r for r in REDUCTIONS if kernel_code(r) == r.code)

#: Triton's signature names: a pointer to each dtype, and the scalars the kernels take
POINTER = {
    torch.float32: "*fp32",
    torch.float64: "*fp64",
    torch.float16: "*fp16",
    torch.bfloat16: "*bf16",
    torch.int32: "*i32",
    torch.int64: "*i64",
}
INT = "i32"  # an int below 2**31: the signature every variant is compiled in (ints above it pass as i64)
#: a run-time flag: an int32 0 or 1 (``launch`` passes a bool as an int; why: ``kernels/gpu/_codegen.flag``)
FLAG = "i32"


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def type_of(value) -> str:
    """Triton's signature type of a launch argument (as ``triton.runtime.jit`` decides it)."""
    if isinstance(value, torch.Tensor):
        return POINTER[value.dtype]
    if isinstance(value, bool):
        return FLAG
    if isinstance(value, int):
        return INT if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, torch.SymInt):  # a size traced by torch.compile
        return INT
    if isinstance(value, float):
        return "fp32"
    raise TypeError(f"no Triton type for a launch argument of type {type(value).__name__}")


def _plain(value):
    """A constexpr value as plain data (a Triton dtype by its name): comparable, hashable, picklable."""
    return value.name if isinstance(value, tl.dtype) else value


@dataclasses.dataclass(frozen=True)
class Variant:
    """One compiled form of a kernel: ``kernel`` is ``module.function``; ``params`` the non-constexpr arguments in
    order with their Triton types; ``constexprs`` the compile-time values (dtypes by name); ``aligned`` the int
    arguments assumed divisible by 16 when compiled for a report (the row width, where rows are 16-wide or more:
    what Triton's specialisation sees on such a call, and what lets it vectorise the row loads)."""

    kernel: str
    params: Tuple[Tuple[str, str], ...]
    constexprs: Tuple[Tuple[str, object], ...]
    aligned: Tuple[str, ...] = ()

    @staticmethod
    def of(kernel, params: Dict[str, str], constexprs: Dict[str, object], aligned=()) -> Variant:
        fn = getattr(kernel, "fn", kernel)
        return Variant(
            f"{fn.__module__}.{fn.__name__}",
            tuple(params.items()),
            tuple((k, _plain(v)) for k, v in constexprs.items()),
            tuple(aligned),
        )

    @property
    def key(self):
        """What makes two launches the same compiled kernel (``aligned`` is a compile assumption, not a choice)."""
        return self.kernel, self.params, self.constexprs

    @property
    def name(self) -> str:
        """A readable name: the function and its constexprs."""
        values = ",".join(f"{k}={v}" for k, v in self.constexprs)
        types = ",".join(t for _, t in self.params if t.startswith("*"))
        return f"{self.kernel.rsplit('.', 1)[1]}[{values}]({types})"


_recorded: Optional[Set[tuple]] = None


@contextlib.contextmanager
def recording() -> Iterator[Set[tuple]]:
    """Within the block, the ``Variant.key`` of every launch is added to the set this yields."""
    global _recorded  # noqa: PLW0603  # read on every launch: a plain module global is the cheapest read
    previous, _recorded = _recorded, set()
    try:
        yield _recorded
    finally:
        _recorded = previous


def launch(kernel, grid, args: Dict[str, object], **constexprs) -> None:
    """Launch ``kernel`` on ``grid`` with ``args`` -- its non-constexpr arguments by name, in order -- and
    ``constexprs``.

    In eager mode (plain tensors, no tracer at work) Triton launches the kernel itself. Only while a tracer runs --
    Dynamo (``torch.compile``, ``torch.export``), or AOTAutograd, ``make_fx`` and fake tensors running the op's
    body -- does the launch go through ``wrap_triton``, whose higher-order op records the kernel in the graph: in
    eager mode that op's dispatch would cost tens of microseconds a launch for nothing
    (docs/decisions/gpu-segment-kernel.md, "The host's share")."""
    if _recorded is not None:
        _recorded.add(Variant.of(kernel, {k: type_of(v) for k, v in args.items()}, constexprs).key)
    # flags as int32 (``FLAG``); a tensor with torch's negative bit (``x.conj().imag``) holds its values' negatives
    # in memory, which the kernel reads: resolved into a copy (the backend writes only into tensors it allocated)
    values = [
        int(v) if v.__class__ is bool else v.resolve_neg() if isinstance(v, torch.Tensor) and v.is_neg() else v
        for v in args.values()
    ]
    first = values[0]
    if type(first) is torch.Tensor and not torch.compiler.is_compiling() and not _dispatch_modes():
        kernel[grid](*values, **constexprs)
    elif not (
        isinstance(kernel, InterpretedFunction) and isinstance(first, _TRACED) and not _wraps_interpreted(kernel)
    ):
        _traceable(kernel)[grid](*values, **constexprs)
    # else: Triton's interpreter (tests on CPU tensors) cannot run on a tracer's tensors, and this torch cannot
    # record an interpreted kernel: the traced graph keeps the outputs' allocations only


def _dispatch_modes() -> int:
    """How many torch dispatch modes are active (``make_fx``'s proxy mode, ``FunctionalTensorMode``, ...)."""
    return torch._C._len_torch_dispatch_stack()


def _traceable(kernel):
    """``wrap_triton(kernel)``, but for a kernel of Triton's interpreter where this torch's ``wrap_triton`` refuses
    one (before torch 2.13 it takes only compiled kernels): that runs as it is. Interpreted kernels run only in
    tests, on CPU tensors, and there ``torch.compile`` sees the launch as a graph break."""
    if isinstance(kernel, InterpretedFunction) and not _wraps_interpreted(kernel):
        return kernel
    return wrap_triton(kernel)


def _wraps_interpreted(kernel) -> bool:
    """Whether this torch's ``wrap_triton`` wraps a kernel of Triton's interpreter (from 2.13 it returns it as it
    is, which is no wrapping either: such a launch cannot be recorded)."""
    global _WRAPS_INTERPRETED  # noqa: PLW0603  # probed once, with the first interpreted kernel (it needs one)
    if _WRAPS_INTERPRETED is None:
        try:
            _WRAPS_INTERPRETED = wrap_triton(kernel) is not kernel
        except RuntimeError:
            _WRAPS_INTERPRETED = False
    return _WRAPS_INTERPRETED


_WRAPS_INTERPRETED: Optional[bool] = None  # whether this torch's wrap_triton takes a kernel of the interpreter
#: the tensors of torch's tracers, on which no kernel runs
_TRACED = (FakeTensor, FunctionalTensor)
