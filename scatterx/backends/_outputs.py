"""New outputs of both backends: ``empty`` (a large CPU output advised onto transparent huge pages), the arena of
:func:`reusing_outputs` that makes a large output in the memory of an earlier one nothing references any more, and
:func:`release_outputs` that hands that memory back (docs/decisions/huge-pages.md)."""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import functools
import math
import sys
import threading
from typing import ContextManager, Optional, Tuple

import torch


def new_result(src: torch.Tensor, dim: int, num_segments: int) -> torch.Tensor:
    """An uninitialised tensor shaped like ``src`` with ``num_segments`` along ``dim``."""
    shape = list(src.shape)
    shape[dim] = num_segments
    return empty(shape, src.dtype, src.device)


# Outputs of at least this many bytes are asked to live on transparent huge pages (CPU, Linux): glibc's largest
# mmap threshold, above which every allocation is fresh memory (docs/decisions/huge-pages.md).
HUGE_PAGES_FROM_BYTES = 32 << 20
_HUGE = 2 << 20  # the x86-64 / arm64 huge page
_MADV_HUGEPAGE = 14


def empty(shape, dtype: torch.dtype, device) -> torch.Tensor:
    """``torch.empty``; a large CPU tensor is first advised onto transparent huge pages (``madvise``), or, within
    :func:`reusing_outputs`, made in the memory of an earlier output that nothing references any more.

    An allocation of 32 MiB or more is new memory from the OS on every call, and the first write to each 4 KiB
    page of it faults. On the machines measured (Linux, THP in its usual "madvise" mode) those faults cost more
    than the kernel that writes the output; smaller ones are recycled heap memory after a few calls, and advising
    them only adds compaction stalls (docs/decisions/huge-pages.md). The large ``E x F`` outputs of the gathers and
    softmaxes pay it most. The advice is only that: where THP is off or the call fails, nothing changes."""
    if _REUSING.get():
        numel = math.prod(shape)
        nbytes = numel * dtype.itemsize
        if nbytes >= HUGE_PAGES_FROM_BYTES and torch.device(device).type == "cpu":
            return _SPARES.take(tuple(shape), dtype, nbytes)
    t = torch.empty(shape, dtype=dtype, device=device)
    nbytes = t.numel() * t.element_size()
    if nbytes >= HUGE_PAGES_FROM_BYTES and t.device.type == "cpu":
        _advise_huge(t.data_ptr(), nbytes)
    return t


_REUSING: contextvars.ContextVar[bool] = contextvars.ContextVar("scatterx_reusing_outputs", default=False)


def reusing_outputs() -> ContextManager[None]:
    """Within the block, scatterx's large CPU outputs reuse the memory of earlier ones that nothing references.

    An output of 32 MiB or more is otherwise fresh memory from the OS on every call, whose pages fault on first
    write -- often a larger cost than the kernel's (docs/decisions/huge-pages.md, "Reused outputs"). Inside the
    block it is made in a buffer kept from an earlier output of about its size once nothing references that output
    any more (no tensor, view, NumPy array or saved tensor of it), as an inference runtime's arena does. The ONNX
    frontend (:mod:`scatterx.onnx`) runs in such a block. At most four buffers and 1 GiB are kept, after the block
    too; :func:`release_outputs` hands them back. Results are the same; only where their memory comes from changes.

    Returns:
        A context manager (per thread and asyncio task).

    Raises:
        : nothing.

    Example:
        >>> import torch
        >>> data, index = torch.randn(1000, 64), torch.randint(0, 1000, (150_000, 1))
        >>> with reusing_outputs():
        ...     first = XMap.nd(index, data.shape)
        ...     a = gather(first, data).sum()
        ...     b = gather(first, data).sum()  # in the first result's memory: it was dropped
        >>> bool(a == b)
        True
        >>> release_outputs()
    """
    if torch.compiler.is_compiling():  # (a traced graph allocates its own outputs; dynamo cannot set a ContextVar)
        return contextlib.nullcontext()
    return _Reusing()


class _Reusing:
    """:func:`reusing_outputs`'s block: a class, not a generator, as the frontends enter it on every call."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _REUSING.set(True)

    def __exit__(self, *exc) -> None:
        _REUSING.reset(self._token)


def release_outputs() -> None:
    """Hand back the memory :func:`reusing_outputs` keeps for reuse (the buffers no output uses any more).

    Returns:
        None.

    Raises:
        : nothing.

    Example:
        >>> release_outputs()
    """
    _SPARES.release()


def _holders(buffer: torch.Tensor) -> Tuple[int, int]:
    """Who holds ``buffer``'s storage: the storage's use count (tensors and views on it, NumPy arrays of them, each
    Python storage object) and the Python references to its Python storage object (a caller who kept
    ``t.untyped_storage()`` holds that same object: torch keeps one per storage), both as seen from this look."""
    storage = buffer.untyped_storage()
    return torch._C._storage_Use_Count(storage._cdata), sys.getrefcount(storage)


@functools.cache
def _held_by_none() -> Tuple[int, int]:
    """``_holders`` of a buffer nothing else holds, on this torch (how many references torch itself keeps to a
    storage's Python object differs between versions: measured, not assumed)."""
    return _holders(torch.empty(1, dtype=torch.uint8))


class Spares:
    """Buffers that held large outputs, reused for a new output once nothing references them: a buffer is free
    when its storage is referenced by nothing but the buffer itself (a tensor made on it, a view of one, a NumPy
    array of one, a tensor saved for backward, the storage object itself kept by a caller all count). Sizes are
    rounded up to classes an eighth of a power of two apart, so that outputs of nearly the same size (a sampled
    batch's features) share a buffer; at most ``count`` buffers and ``max_bytes`` in all are kept, the least
    recently used free one given back first."""

    def __init__(self, count: int = 4, max_bytes: int = 1 << 30):
        self.count, self.max_bytes = count, max_bytes
        self._buffers: list = []  # uint8 tensors, most recently used last
        self._lock = threading.Lock()

    @staticmethod
    def _free(buffer: torch.Tensor) -> bool:
        uses, references = _holders(buffer)
        alone_uses, alone_references = _held_by_none()
        return uses <= alone_uses and references <= alone_references

    @staticmethod
    def _size_class(nbytes: int) -> int:
        step = 1 << max(12, nbytes.bit_length() - 4)
        return -(-nbytes // step) * step

    def take(self, shape: Tuple[int, ...], dtype: torch.dtype, nbytes: int) -> torch.Tensor:
        """A new tensor of ``shape`` and ``dtype`` (C-contiguous, uninitialised) in a free buffer of its size
        class, or in a new buffer kept for later."""
        if not hasattr(torch._C, "_storage_Use_Count"):  # (a private function: absent, nothing is reused)
            return torch.empty(shape, dtype=dtype)
        size = self._size_class(nbytes)
        with self._lock:
            buffer = None
            for i, b in enumerate(self._buffers):
                if b.numel() == size and self._free(b):
                    buffer = self._buffers.pop(i)
                    break
            if buffer is None:
                buffer = torch.empty(size, dtype=torch.uint8)
                _advise_huge(buffer.data_ptr(), size)
                self._make_room(size)
            if len(self._buffers) < self.count and self._kept() + size <= self.max_bytes:
                self._buffers.append(buffer)
            strides = torch.empty(0).new_empty(shape, device="meta").stride()
            return torch.empty(0, dtype=dtype).set_(buffer.untyped_storage(), 0, shape, strides)

    def _kept(self) -> int:
        return sum(b.numel() for b in self._buffers)

    def _make_room(self, size: int) -> None:
        """Give back free buffers, least recently used first, until one of ``size`` bytes fits."""
        i = 0
        while i < len(self._buffers) and (len(self._buffers) >= self.count or self._kept() + size > self.max_bytes):
            if self._free(self._buffers[i]):
                del self._buffers[i]
            else:
                i += 1

    def release(self) -> None:
        with self._lock:
            self._buffers = [b for b in self._buffers if not self._free(b)]


_SPARES = Spares()


def _advise_huge(address: int, nbytes: int) -> None:
    libc = _libc()
    if libc is None:
        return
    start = (address + _HUGE - 1) & ~(_HUGE - 1)  # the 2 MiB-aligned pages inside the buffer
    end = (address + nbytes) & ~(_HUGE - 1)
    if end > start:
        libc.madvise(start, end - start, _MADV_HUGEPAGE)


@functools.cache
def _libc() -> Optional[ctypes.CDLL]:
    """The C library with ``madvise`` declared, loaded once; None where there is none to advise (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    except (OSError, AttributeError):
        return None
    return libc
