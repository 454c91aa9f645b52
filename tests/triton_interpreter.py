"""Triton's interpreter, made affordable for the kernels' tests: scans and reductions with a combine function of
our own, evaluated a whole row of the tile at a time.

Under ``TRITON_INTERPRET=1`` Triton evaluates ``tl.associative_scan`` and ``tl.reduce`` whose combine is not one of
its own (``tl.cumsum``, ``tl.sum``, ...) one *element* at a time, calling the combine function in Python for each
(``ScanOps.generic_scan``, ``ReduceOps.generic_reduce``), and every call re-patches ``triton.language``: ~0.3-2 ms per
element. The balanced segment kernels scan each tile of 1,024 elements with such a combine (a segmented scan has no
built-in), so one small sorted call cost 0.4 s (sum) to 3.6 s (amax, whose combine calls ``_max``), and the GPU
half of the test suite was 40% of its time.

``install()`` replaces the two methods with ones that call the combine on whole slices of the tile: a scan in
log2(n) steps (Hillis-Steele: after the step of stride ``k`` every element holds the combination of the ``2k``
elements ending at it), a reduction as a tree of pairs. Both call the very combine function the kernel names, on
the same operands in the same left-to-right order; only the grouping differs -- as it does on a GPU, which scans
and reduces in trees too, and which the kernels allow, since a combine must be associative. Elementwise is all a
combine may be (Triton's contract), so calling it on slices computes what per-element calls do.
``tests/kernels/test_triton_interpreter.py`` holds the two against Triton's own on every combine the kernels use.

It also patches ``triton.language`` once per launch, not once per call of a ``@triton.jit`` helper as well. Triton's
interpreter re-patches the language (``inspect.getmembers`` over ``tl``, ``tl.tensor``, ``tl.math``: ~2 ms) at every
call of a device function, inside a launch that has patched the very same modules already -- a third of an
interpreted softmax's time. ``install()`` skips that second patch when the launch in progress covers the helper's
modules (it changes nothing: the members are already the interpreter's, and the launch restores them at its end),
and patches as before otherwise.

And the NumPy dtype of a Triton type is looked up in a dict built once, not in one built at every lookup (Triton's
``_get_np_dtype``, called for most operations: ~8% of the interpreted tests' time).

A test of Triton's interpreter only; the package never patches Triton.
"""

import functools

import numpy as np


def _array(value, like: np.ndarray) -> np.ndarray:
    """A combine's result as an array of ``like``'s shape and dtype (it may return a scalar or a constexpr)."""
    data = getattr(getattr(value, "handle", None), "data", value)
    data = getattr(data, "value", data)  # a tl.constexpr
    return np.broadcast_to(np.asarray(data), like.shape).astype(like.dtype, copy=False)


def _combine(op, left, right, dtypes):
    """``op.combine_fn`` on the arrays ``left`` and ``right`` (one per operand), elementwise: arrays back."""
    result = op.combine_fn.fn(
        *(op.to_tensor(np.ascontiguousarray(a), dtype) for a, dtype in zip(left, dtypes)),
        *(op.to_tensor(np.ascontiguousarray(b), dtype) for b, dtype in zip(right, dtypes)),
    )
    result = result if isinstance(result, tuple) else (result,)
    return [_array(r, like) for r, like in zip(result, left)]


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _scan(self, original, input):
    shape = input[0].handle.data.shape
    if len(shape) == 0 or shape[self.axis] <= 1 or not _power_of_two(shape[self.axis]):
        return original(self, input)
    dtypes = [arg.dtype for arg in input]
    ys = [np.moveaxis(np.array(arg.handle.data), self.axis, 0) for arg in input]
    n, k = ys[0].shape[0], 1
    while k < n:
        # (a block's shape is a power of two: the combine runs on whole tiles, the element k rows up on the left;
        # the first k rows' results are not used)
        earlier = [np.concatenate([y[:k], y[: n - k]], 0) for y in ys]
        with np.errstate(all="ignore"):
            later = _combine(self, earlier, ys, dtypes)
        for y, value in zip(ys, later):
            y[k:] = value[k:]
        k *= 2
    return [self.to_tensor(np.ascontiguousarray(np.moveaxis(y, 0, self.axis)), dtype) for y, dtype in zip(ys, dtypes)]


def _reduce(self, original, input):
    shape = input[0].handle.data.shape
    if self.axis is None or self.keep_dims or len(shape) == 0 or not _power_of_two(shape[self.axis]):
        return original(self, input)  # (the kernels reduce along an axis, and keep no dims)
    dtypes = [arg.dtype for arg in input]
    ys = [np.moveaxis(arg.handle.data, self.axis, 0) for arg in input]
    while ys[0].shape[0] > 1:  # (a power of two: neighbours pair up, the earlier on the left)
        ys = _combine(self, [y[0::2] for y in ys], [y[1::2] for y in ys], dtypes)
    ret = [self.to_tensor(np.ascontiguousarray(y[0]), dtype) for y, dtype in zip(ys, dtypes)]
    # Triton 3.0 returns the tensor (one operand) or a tuple; later ones accept that too
    return ret[0] if len(ret) == 1 else tuple(ret)


class _Unpatched:
    """What a device function's call gets instead of patching again the modules its launch has patched."""

    def restore(self) -> None:
        pass


class _Patched:
    """The ``triton.language`` modules patched since the launch in progress began (None: no launch)."""

    langs: "set[int] | None" = None


@functools.cache
def _langs(fn, tl_modules) -> frozenset:
    """The ``triton.language`` modules that ``fn`` sees (those Triton's ``_patch_lang`` patches for it)."""
    return frozenset(id(value) for value in fn.__globals__.values() if any(value is m for m in tl_modules))


def _patch_lang(original, tl_modules, fn):
    langs = _langs(fn, tl_modules)
    if _Patched.langs is not None and langs <= _Patched.langs:
        return _Unpatched()  # a device function's call, its modules patched by this launch already
    scope = original(fn)  # the launch's own patch, or a device function's of a module not patched yet
    if _Patched.langs is not None:
        _Patched.langs |= langs
    return scope


def _launch(self, original, *args, **kwargs):
    outer, _Patched.langs = _Patched.langs, set()
    try:
        return original(self, *args, **kwargs)
    finally:
        _Patched.langs = outer


def _patch_once_per_launch(interpreter) -> bool:
    """Install ``_patch_lang`` above where this Triton restores its patches at the end of a launch (a scope with
    ``restore``: Triton 3.2 and later); older ones patch for good, and keep their own."""
    executor = getattr(interpreter, "GridExecutor", None)
    if not hasattr(interpreter, "_LangPatchScope") or executor is None or not callable(interpreter._patch_lang):
        return False
    import triton.language as tl

    interpreter._patch_lang = functools.partial(_patch_lang, interpreter._patch_lang, (tl, tl.core))
    executor.__call__ = functools.partialmethod(_launch, executor.__call__)
    return True


def _np_dtype(original, known: dict, tt_dtype):
    try:
        return known[tt_dtype]
    except KeyError:
        known[tt_dtype] = found = original(tt_dtype)
        return found
    except TypeError:  # (an unhashable type, should there be one)
        return original(tt_dtype)


@functools.cache
def install() -> bool:
    """Replace the interpreter's element-by-element scan and reduction, and its language patch per device
    function call (once per process); False where this Triton's interpreter does not have the scan and reduction
    (it then runs as it is)."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    _patch_once_per_launch(interpreter)
    if callable(getattr(interpreter, "_get_np_dtype", None)):
        interpreter._get_np_dtype = functools.partial(_np_dtype, interpreter._get_np_dtype, {})
    scans, reduces = getattr(interpreter, "ScanOps", None), getattr(interpreter, "ReduceOps", None)
    if scans is None or reduces is None or not hasattr(scans, "generic_scan") or not hasattr(reduces, "generic_reduce"):
        return False
    original_scan, original_reduce = scans.generic_scan, reduces.generic_reduce
    scans.generic_scan = functools.partialmethod(_scan, original_scan)
    reduces.generic_reduce = functools.partialmethod(_reduce, original_reduce)
    scans.element_by_element_scan, reduces.element_by_element_reduce = original_scan, original_reduce
    return True
