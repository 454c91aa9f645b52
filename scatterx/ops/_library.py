"""How every scatterx op becomes a PyTorch custom op (``torch.library``), from one signature.

``define_op(name, impl, fake)`` registers two ops from the annotated function ``impl`` (its signature is the
schema):

- ``scatterx::<name>_cpu``: an opaque ``custom_op`` for CPU tensors, with ``fake`` as its fake implementation.
  Its body calls the Numba kernels, which no tracer can enter; hidden behind an opaque op, ``torch.compile`` sees
  one node with a known output shape.
- ``scatterx::<name>``: the public op. A ``torch.library.triton_op`` where a Triton kernel can run (``_triton_ops``),
  else a plain ``custom_op``. Its body dispatches on its first tensor's device: CPU tensors go to the ``_cpu``
  twin, GPU tensors run ``impl`` itself -- torch ops and ``wrap_triton`` launches only, no host sync -- so that
  ``torch.compile`` traces into the Triton kernels. ``triton_op`` uses that same body as the fake implementation.

Autograd is registered on the public op by the op's module (``register_autograd`` here), so both backends share
one backward formula. The same formula also drives an eager twin: a ``torch.autograd.Function`` with the op's
forward, ``setup_context`` and backward, which the public functions call when a gradient is wanted outside
``torch.compile``. The custom op's own eager path costs ~100 us a call in Python (schema defaults, two op
layers, the dispatcher's autograd and dynamo-disable wrappers), more than the whole kernel of a small graph's
step; the Function costs a few microseconds, and computes the same tensors (docs/decisions/custom-ops-and-gradients.md).
"""

from __future__ import annotations

import inspect
import typing
from typing import Any, Callable, Protocol, Type, cast

import torch

from ..backends import is_gpu
from ..kernels.gpu import available as triton_available
from ..kernels.gpu import interpreting
from ._checks import check_autodiff


def needs_op(*tensors) -> bool:
    """Whether a call must go through the custom op: a gradient is wanted, or torch.compile is tracing. Otherwise
    the public functions call the same implementation directly (the op is functional, so ``out=`` would cost
    copies, and torch's custom-op machinery imports torch._dynamo on its first call, ~1.5 s). Forward-mode AD and
    torch.func's transforms raise here (``check_autodiff``)."""
    if torch.compiler.is_compiling():
        return True
    check_autodiff(*tensors)
    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors)


def _resolved_signature(fn: Callable) -> inspect.Signature:
    """``fn``'s signature with its annotations evaluated (they may be strings under ``from __future__ import
    annotations``, which older torch versions cannot infer a schema from)."""
    hints = typing.get_type_hints(fn)
    sig = inspect.signature(fn)
    params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in sig.parameters.values()]
    return sig.replace(parameters=params, return_annotation=hints.get("return", sig.return_annotation))


class _Signed(Protocol):
    """A function given an explicit ``__signature__`` (which ``inspect.signature``, so torch.library, reads)."""

    __signature__: inspect.Signature

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


class Differentiable(Protocol):
    """What ``register_autograd`` returns: the op with its gradient, and ``eager``, its eager twin's ``apply``."""

    eager: Callable[..., Any]

    def __call__(self, *args: Any) -> Any: ...


def _with_signature(body: Callable, like: Callable, name: str) -> Callable:
    body.__name__ = body.__qualname__ = name
    body.__doc__ = like.__doc__
    body.__module__ = like.__module__
    cast(_Signed, body).__signature__ = _resolved_signature(like)  # a function takes any attribute
    return body


def _triton_ops() -> bool:
    """Whether the public ops are ``triton_op``s: where Triton is installed, torch has ``triton_op``, and a Triton
    kernel can run -- a CUDA or ROCm build of torch, or Triton's interpreter (the tests on CPU tensors). Elsewhere
    (a CPU-only torch) no tensor can reach the GPU backend, and a ``custom_op`` does the same: ``triton_op`` would
    only cost the import of ``torch._inductor`` and ``torch._dynamo``, which it reads each op's source with (~2 s
    of a 3.3 s ``import scatterx`` on torch 2.13)."""
    if not (triton_available() and hasattr(torch.library, "triton_op")):
        return False
    return bool(torch.version.cuda or getattr(torch.version, "hip", None) or interpreting())


def define_op(name: str, impl: Callable, fake: Callable):
    """Register ``scatterx::<name>`` (and its ``_cpu`` twin) from ``impl``; returns the public op's callable.

    ``impl(*args)`` runs the op on whatever backend its tensors live on (``backends.backend_for``); ``fake``
    returns empty tensors of the output's shapes (for the CPU twin; the public op's own fake is its body)."""

    def cpu_body(*args, **kwargs):
        return impl(*args, **kwargs)

    cpu_op = torch.library.custom_op(
        f"scatterx::{name}_cpu", _with_signature(cpu_body, impl, f"{name}_cpu"), mutates_args=(), device_types="cpu"
    )
    cpu_op.register_fake(fake)

    def body(*args, **kwargs):
        first = args[0] if args else next(iter(kwargs.values()))
        if is_gpu(first):
            return impl(*args, **kwargs)
        return cpu_op(*args, **kwargs)

    body = _with_signature(body, impl, name)
    if _triton_ops():
        return torch.library.triton_op(f"scatterx::{name}", body, mutates_args=())
    op = torch.library.custom_op(f"scatterx::{name}", body, mutates_args=())
    op.register_fake(body)
    return op


def register_autograd(op, impl: Callable, backward: Callable, setup_context: Callable) -> Differentiable:
    """Register ``backward`` / ``setup_context`` as ``op``'s autograd formula; return ``differentiable(*args)``,
    which calls ``op`` under ``torch.compile`` and, in eager mode, an ``autograd.Function`` computing ``impl`` with
    the same formula (so both give the same values and gradients, and only the cost differs)."""
    torch.library.register_autograd(op, backward, setup_context=setup_context)

    def forward(ctx, *args):
        # old-style forward (ctx first): with a separate setup_context, Function.apply binds the arguments to
        # forward's signature through ``inspect`` on every call (~20 us)
        output = impl(*args)
        setup_context(ctx, args, output)
        return output

    eager: Type[torch.autograd.Function] = type(
        f"{impl.__module__.rsplit('.', 1)[-1]}_eager",
        (torch.autograd.Function,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward)},
    )

    # ``Function.apply`` is a Python layer over the C one: it binds arguments for ``setup_context`` (the twin has
    # none) and, outside functorch's transforms, unwraps the "dead" wrappers of tensors that escaped one, looking
    # at every argument. The same, with the tensor arguments found once from the signature, costs ~7 us less a
    # call of ~20 (docs/decisions/small-calls.md, "Gradients").
    c_apply = super(torch.autograd.Function, eager).apply  # type: ignore[misc]  # the C base's classmethod
    transforms_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: True)
    unwrap_if_dead = getattr(getattr(torch._C, "_functorch", None), "unwrap_if_dead", None)
    if unwrap_if_dead is None:  # (a torch without them: its own Function.apply)
        transforms_active = lambda: True  # noqa: E731
    unwrap: Callable = unwrap_if_dead if unwrap_if_dead is not None else (lambda tensor: tensor)
    tensors = tuple(
        i for i, p in enumerate(_resolved_signature(impl).parameters.values()) if "Tensor" in str(p.annotation)
    )

    def eager_apply(*args):
        check_autodiff(*args)
        if transforms_active():
            return eager.apply(*args)
        given = list(args)
        for i in tensors:
            if i < len(given) and given[i] is not None:
                given[i] = unwrap(given[i])
        return c_apply(*given)

    def differentiable(*args):
        if torch.compiler.is_compiling():
            return op(*args)
        return eager_apply(*args)

    differentiable.__doc__ = f"``{op}`` with its gradient: the op under torch.compile, else its eager twin."
    result = cast(Differentiable, differentiable)  # a function takes any attribute
    result.eager = eager_apply  # for callers that know they are not tracing
    return result
