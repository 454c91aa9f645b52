"""A kernel launched on torch's own OpenMP thread team, without Python on any thread but the caller's.

torch's CPU builds run their parallel ops on an OpenMP runtime that they load themselves (on Linux
``torch/lib/libgomp.so.1``). Its entry point ``GOMP_parallel(fn, data, threads, flags)`` runs the C function
``fn(data)`` on ``threads`` threads of the calling thread's team -- the same threads that run torch's ops -- and
returns when every thread has. Here ``fn`` is a *trampoline*: a few lines of LLVM IR, built with Numba's own code
generator, that read a kernel's arguments out of an argument *block* and call the kernel's compiled native function
(no Python object, no GIL). The call into ``GOMP_parallel`` goes through ``ctypes``, which releases the GIL.

**The block** is an int64 NumPy array: ``[kernel, total, failed, excinfo, next, items, arg...]``. ``kernel`` is the
native function's address; every thread adds its call's return to ``total`` (atomically); a call that raised sets
``failed`` and leaves the address of Numba's exception record in ``excinfo``; ``next, items`` is the launch's
work-item counter itself (the kernel's first argument, ``_codegen.claim``). An array argument is passed as the
address of its ``PyArrayObject`` (``id``), whose data pointer, shape and strides the trampoline reads from NumPy's
public struct layout (checked against a real array when the runtime is first looked up); integers and booleans as
themselves, floats by their float64 bits. Packing a block costs about a microsecond; reading a data pointer from
Python (``ndarray.ctypes.data``) would cost one per array.

**Trampolines** depend only on the *kinds* of a kernel's arguments (an array's dimensions and item size, an
integer's width, ...) and read the kernel's address from the block, so variants that differ in a dtype of the same
size or in a literal (the reduction) share one -- far fewer than the variants. A built trampoline (10-20 ms) is
kept on disk beside Numba's cache of the kernels, and a later process loads it (about a millisecond).

Where it is not used (``launch`` then uses the pool of Python threads, ``launcher.py``): torch built without OpenMP or
with a runtime that lacks ``GOMP_parallel`` (Windows' builds use MSVC's ``vcomp``; macOS arm64 wheels ship LLVM's
``libomp``, which exports it but is untested here), a forked child (GNU OpenMP's team does not survive a fork), a
NumPy whose array struct does not read back as checked, and a kernel whose argument or return kind has no
trampoline. ``SCATTERX_CPU_LAUNCH=pool`` picks the pool everywhere. The measurements: docs/decisions/cpu-parallelism.md.

Why this module is long: the runtime's lookup, the trampolines (their IR, their disk cache) and a launch (packing,
the exception read back) are one mechanism; split, each part would depend on the others' block layout.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import hashlib
import os
import pickle
import sys
import warnings
from typing import Dict, Iterator, Optional, Tuple

import numba
import numpy as np
import torch
from llvmlite import ir
from numba import types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import cpu_target

#: where the block's words are
KERNEL, TOTAL, FAILED, EXCINFO, NEXT, ITEMS, ARGS = range(7)
#: how ``pack`` turns each argument into a word
_ARRAY, _INT, _FLOAT = 0, 1, 2

_I64 = ir.IntType(64)
_BYTES = ir.IntType(8).as_pointer()


# ------------------------------------------------------------------------------------------------ the runtime
def _loaded_libraries():
    """Paths of the shared libraries this process has loaded (Linux), else None."""
    try:
        with open("/proc/self/maps") as maps:
            return {line.split(None, 5)[5].strip() for line in maps if line.count(" ") >= 5 and "/" in line}
    except OSError:
        return None


def _find_runtime():
    """``GOMP_parallel`` of the OpenMP runtime torch runs on, or a sentence saying why there is none."""
    choice = os.environ.get("SCATTERX_CPU_LAUNCH", "").strip().lower()
    if choice == "pool":
        return "SCATTERX_CPU_LAUNCH=pool"
    if choice not in ("", "openmp"):
        why = f"SCATTERX_CPU_LAUNCH={choice!r} is neither 'openmp' nor 'pool'"
        warnings.warn(f"{why}: CPU kernels launch on scatterx's pool of Python threads", RuntimeWarning, stacklevel=2)
        return why
    if not torch.backends.openmp.is_available():
        return "torch was built without OpenMP"
    if sys.platform == "win32":  # (torch/lib holds Intel's libiomp5md for MKL there: not the runtime torch runs on)
        return "torch's Windows builds run on MSVC's OpenMP (vcomp), which has no GOMP_parallel"
    here = os.path.join(os.path.dirname(torch.__file__), "lib")
    candidates = [
        p for name in ("libgomp*", "libomp*", "libiomp5*") for p in sorted(glob.glob(os.path.join(here, name)))
    ]
    loaded = _loaded_libraries()
    if loaded is not None:  # prefer the runtime torch actually loaded (a system one when torch links against it)
        candidates = [p for p in loaded if os.path.basename(p).startswith(("libgomp", "libomp", "libiomp5"))] + [
            p for p in candidates if os.path.realpath(p) in {os.path.realpath(q) for q in loaded}
        ]
    for path in candidates:
        try:
            gomp_parallel = ctypes.CDLL(path).GOMP_parallel
        except (OSError, AttributeError):
            continue
        gomp_parallel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint]
        gomp_parallel.restype = None
        return gomp_parallel
    return "no OpenMP runtime with GOMP_parallel was found beside torch"


def _array_layout_reads_back() -> bool:
    """Whether NumPy's ``PyArrayObject`` has the layout the trampolines read: after the object header, the data
    pointer, ``int nd``, then pointers to the dimensions and to the strides."""
    a = np.empty((3, 5), np.float32)[:, ::2]
    base = id(a) + _HEADER
    try:
        dims = ctypes.c_void_p.from_address(base + 16).value
        strides = ctypes.c_void_p.from_address(base + 24).value
        return (
            ctypes.c_void_p.from_address(base).value == a.ctypes.data
            and ctypes.c_int.from_address(base + 8).value == a.ndim
            and dims is not None
            and strides is not None
            and tuple((ctypes.c_int64 * 2).from_address(dims)) == a.shape
            and tuple((ctypes.c_int64 * 2).from_address(strides)) == a.strides
        )
    except (ValueError, TypeError):
        return False


_HEADER = object.__basicsize__  # a PyObject's header: 16 bytes on 64-bit CPython (more on free-threaded builds)
_state: Dict[str, object] = {}


def runtime():
    """``GOMP_parallel``, or None where kernels cannot launch on an OpenMP team (``why_not`` says why)."""
    if "runtime" not in _state:
        found = _find_runtime()
        if not isinstance(found, str) and not _array_layout_reads_back():
            found = "NumPy's array struct did not read back as expected"
        if not isinstance(found, str) and ctypes.sizeof(ctypes.c_void_p) != 8:
            found = "not a 64-bit process"
        _state["runtime"] = None if isinstance(found, str) else found
        _state["why_not"] = found if isinstance(found, str) else ""
    return _state["runtime"]


@contextlib.contextmanager
def switched_off(reason: str = "switched off") -> Iterator[None]:
    """Within the block, launches in this process take the pool (what benchmarks compare against); not meant for
    code that runs launches from other threads meanwhile."""
    runtime()
    saved = dict(_state)
    _state["runtime"], _state["why_not"] = None, reason
    try:
        yield
    finally:
        _state.update(saved)


def why_not() -> str:
    """Why ``runtime()`` is None ('' when it is not)."""
    runtime()
    return str(_state["why_not"])


def _forget_in_child() -> None:
    _state["runtime"], _state["why_not"] = None, "a forked child (GNU OpenMP's threads did not come along)"


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


# ------------------------------------------------------------------------------------------------ trampolines
def _kind(ty) -> Optional[tuple]:
    """What a trampoline needs to know of an argument's Numba type; None if it cannot pass one."""
    if isinstance(ty, types.Literal):
        ty = ty.literal_type
    if isinstance(ty, types.Array) and ty.ndim >= 1 and isinstance(ty.dtype, (types.Number, types.Boolean)):
        return ("array", ty.ndim, _machine(ty.dtype).itemsize)
    if isinstance(ty, types.Boolean):
        return ("bool",)
    if isinstance(ty, types.Integer):
        return ("int", 8 * _machine(ty).itemsize, _machine(ty).kind == "i")
    if isinstance(ty, types.Float):
        return ("float", 8 * _machine(ty).itemsize)
    return None


def _machine(ty) -> np.dtype:
    """The NumPy dtype of a Numba scalar type (its width and signedness)."""
    return np.dtype(str(ty))


def _canonical(kind):
    """A Numba type with the argument kind's machine representation."""
    if kind[0] == "array":
        return types.Array(types.Integer.from_bitwidth(8 * kind[2]), kind[1], "A")
    if kind[0] == "bool":
        return types.boolean
    if kind[0] == "int":
        return types.Integer.from_bitwidth(kind[1], kind[2])
    return types.float32 if kind[1] == 32 else types.float64


_TRAMPOLINES: Dict[tuple, Tuple[object, int]] = {}


def trampoline(argtypes, restype) -> Optional[int]:
    """The address of a trampoline for a kernel of these Numba argument types (the first: the counter, a 1-D
    int64 array) and return type, or None if they have no trampoline."""
    kinds = tuple(_kind(t) for t in argtypes)
    if None in kinds or kinds[0] != ("array", 1, 8):
        return None
    result: tuple
    if isinstance(restype, types.Literal):
        restype = restype.literal_type
    if isinstance(restype, types.Integer):
        result = ("int", 8 * _machine(restype).itemsize, _machine(restype).kind == "i")
    elif restype == types.none:
        result = ("none",)
    else:
        return None
    key = (kinds, result)
    if key not in _TRAMPOLINES:
        _TRAMPOLINES[key] = _cached(kinds, result)
    return _TRAMPOLINES[key][1]


def packing(argtypes) -> Tuple[int, ...]:
    """How ``pack`` turns each argument after the counter into a block word."""
    codes = {"array": _ARRAY, "bool": _INT, "int": _INT, "float": _FLOAT}
    return tuple(codes[_kind(t)[0]] for t in argtypes[1:])  # type: ignore[index]  # trampoline() checked the kinds


def _cache_dir() -> Optional[str]:
    """Where built trampolines are kept: Numba's cache directory when one is set (``NUMBA_CACHE_DIR``), else the
    ``__pycache__`` beside this file (where Numba keeps the kernels' own), else none."""
    numba_cache = os.environ.get("NUMBA_CACHE_DIR", "")  # what Numba's config reads
    here = os.path.join(os.path.dirname(__file__), "__pycache__")
    folder = os.path.join(numba_cache, "scatterx-openmp") if numba_cache else here
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None


@global_compiler_lock
def _cached(kinds, result):
    """``_build``'s (library, address), from the disk cache when a process built it before (a build costs ~10-20 ms,
    a load about one): keyed by the argument kinds, the object header's size, Numba's version and the CPU target."""
    codegen = cpu_target.target_context.codegen()
    key = repr((kinds, result, _HEADER, sys.version_info[:2], numba.__version__, codegen.magic_tuple()))
    folder = _cache_dir()
    path = None if folder is None else os.path.join(folder, hashlib.sha256(key.encode()).hexdigest()[:32] + ".nbt")
    if path is not None and os.path.exists(path):
        try:
            with open(path, "rb") as file:
                stored_key, state = pickle.load(file)
            if stored_key == key:
                library = codegen.unserialize_library(state)
                return library, library.get_pointer_to_function("scatterx_trampoline")
        except Exception:  # a truncated or foreign file: build afresh (and overwrite it)
            pass
    library, address = _build(kinds, result)
    if path is not None:
        try:
            temporary = f"{path}.{os.getpid()}.tmp"
            with open(temporary, "wb") as file:
                pickle.dump((key, library.serialize_using_object_code()), file)
            os.replace(temporary, path)  # atomic: a reader sees the old file or the whole new one
        except OSError:
            pass
    return library, address


def _build(kinds, result):
    context = cpu_target.target_context
    library = context.codegen().create_library("scatterx_openmp_trampoline")
    module = library.create_ir_module("scatterx_openmp_trampoline")
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [_BYTES]), "scatterx_trampoline")
    b = ir.IRBuilder(function.append_basic_block())
    block_object = function.args[0]  # the block's PyArrayObject: its data pointer follows the object header
    block = b.load(b.bitcast(b.gep(block_object, [ir.Constant(_I64, _HEADER)]), _I64.as_pointer().as_pointer()))

    def word(k):
        return b.gep(block, [ir.Constant(_I64, k)])

    def at(pointer, offset, of_type):  # the ``of_type`` at ``offset`` bytes from ``pointer``
        address = b.gep(b.bitcast(pointer, _BYTES), [ir.Constant(_I64, offset)])
        return b.load(b.bitcast(address, of_type.as_pointer()))

    argtypes = [_canonical(k) for k in kinds]
    values = []
    for k, (kind, ty) in enumerate(zip(kinds, argtypes)):
        if k == 0:  # the counter: [next, items] inside the block
            array = context.make_array(ty)(context, b)
            two, eight = ir.Constant(_I64, 2), ir.Constant(_I64, 8)
            data = b.bitcast(word(NEXT), array.data.type)
            context.populate_array(array, data=data, shape=[two], strides=[eight], itemsize=eight, meminfo=None)
            values.append(array._getvalue())
        elif kind[0] == "array":
            obj = b.inttoptr(b.load(word(ARGS + k - 1)), _BYTES)
            dims = at(obj, _HEADER + 16, _I64.as_pointer())
            steps = at(obj, _HEADER + 24, _I64.as_pointer())
            array = context.make_array(ty)(context, b)
            context.populate_array(
                array,
                data=b.bitcast(at(obj, _HEADER, _BYTES), array.data.type),
                shape=[at(dims, 8 * d, _I64) for d in range(ty.ndim)],
                strides=[at(steps, 8 * d, _I64) for d in range(ty.ndim)],
                itemsize=ir.Constant(_I64, kind[2]),
                meminfo=None,
                parent=obj,
            )
            values.append(array._getvalue())
        elif kind[0] == "float":
            value = b.load(b.bitcast(word(ARGS + k - 1), ir.DoubleType().as_pointer()))
            values.append(b.fptrunc(value, ir.FloatType()) if kind[1] == 32 else value)
        else:  # int, bool: the word's low bits
            value, machine = b.load(word(ARGS + k - 1)), context.get_value_type(ty)
            values.append(b.trunc(value, machine) if machine.width < 64 else value)
    restype = types.none if result[0] == "none" else types.Integer.from_bitwidth(result[1], result[2])
    callee = b.inttoptr(b.load(word(KERNEL)), context.call_conv.get_function_type(restype, argtypes).as_pointer())
    status, returned = context.call_conv.call_function(b, callee, restype, argtypes, values)
    with b.if_else(status.is_error) as (failed, ok):
        with ok:
            if result[0] == "int":
                if result[1] < 64:
                    returned = b.sext(returned, _I64) if result[2] else b.zext(returned, _I64)
                b.atomic_rmw("add", word(TOTAL), returned, "monotonic")
        with failed:
            b.store(ir.Constant(_I64, 1), word(FAILED))
            b.store(
                b.select(status.is_user_exc, b.ptrtoint(status.excinfoptr, _I64), ir.Constant(_I64, 0)), word(EXCINFO)
            )
    b.ret_void()
    library.enable_object_caching()  # (so that _cached can save its machine code)
    library.add_ir_module(module)
    library.finalize()
    return library, library.get_pointer_to_function("scatterx_trampoline")


# ------------------------------------------------------------------------------------------------ a launch
def run(gomp_parallel, kernel_address: int, trampoline_address: int, packs, items: int, threads: int, args) -> int:
    """Run the kernel at ``kernel_address`` over ``items`` work items on ``threads`` threads of the calling
    thread's OpenMP team, with ``args`` (after the counter) packed as ``packs`` says; the sum of the calls'
    returns. A call that raised is raised here, after every thread has returned."""
    words = [kernel_address, 0, 0, 0, 0, items]
    for how, arg in zip(packs, args):
        if how == _ARRAY:
            words.append(id(arg))
        elif how == _INT:
            words.append(int(arg))
        else:
            words.append(int(np.array(float(arg), np.float64).view(np.int64)))
    block = np.array(words, np.int64)
    gomp_parallel(trampoline_address, id(block), threads, 0)
    total, failed, excinfo = block[TOTAL : EXCINFO + 1].tolist()
    if failed:
        raise _exception(excinfo)
    return total


def _exception(excinfo: int) -> BaseException:
    """The exception a kernel raised, from Numba's record of it (a static exception: class, arguments, where)."""
    if excinfo:
        data = ctypes.c_void_p.from_address(excinfo).value
        size = ctypes.c_int32.from_address(excinfo + 8).value
        dynamic = ctypes.c_void_p.from_address(excinfo + 24).value
        if data and not dynamic:
            try:
                raised = pickle.loads(ctypes.string_at(data, size))
                error = raised[0](*raised[1])
                if isinstance(error, BaseException):
                    return error
            except Exception:  # an unreadable record falls through to the generic error
                pass
    return RuntimeError("a CPU kernel raised on a thread of the OpenMP team (the exception could not be read back)")


__all__ = ["packing", "run", "runtime", "switched_off", "trampoline", "why_not"]
