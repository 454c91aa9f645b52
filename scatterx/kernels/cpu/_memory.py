"""Memory-access intrinsics for the Numba CPU kernels, emitted as LLVM IR (``numba.extending.intrinsic``):

- ``prefetch_row``: hint that a row will be read soon (``llvm.prefetch``), for rows read out of order;
- ``prefetch_write``: the same for one element about to be written;
- ``stream_row`` and ``store_fence``: write a finished output row with non-temporal stores, without reading its
  cache lines first, and order those stores before the work item ends.

What each needs from its caller is in its docstring: a prefetch never faults, the aligned streaming stores do.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch_row(typingctx, arr, o, r):
    """Hint the CPU to fetch row ``arr[o, r, :]`` of a C-contiguous 3-D array into cache (``llvm.prefetch``).

    Used where rows are read in an order the hardware prefetcher cannot guess (the gather of the unsorted path).
    A prefetch never faults, but callers still only pass valid rows."""

    def codegen(context, builder, signature, args):
        arr_type = signature.args[0]
        ary = context.make_array(arr_type)(context, builder, args[0])
        shape = cgutils.unpack_tuple(builder, ary.shape, 3)
        strides = cgutils.unpack_tuple(builder, ary.strides, 3)
        i64 = ir.IntType(64)
        start = builder.add(
            builder.ptrtoint(ary.data, i64),
            builder.add(builder.mul(args[1], strides[0]), builder.mul(args[2], strides[1])),
        )
        nbytes = builder.mul(shape[2], strides[2])
        i8p = ir.PointerType(ir.IntType(8))
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0i8"
        )
        line = ir.Constant(i64, 64)
        with cgutils.for_range_slice(builder, ir.Constant(i64, 0), nbytes, line) as (offset, _):
            address = builder.inttoptr(builder.add(start, offset), i8p)
            # read, locality 1 (into L2, not L1: L1 has ~12 line-fill buffers a core, too few to cover DRAM
            # latency; see docs/decisions/unsorted-routes.md), data cache
            builder.call(fn, [address, ir.Constant(i32, 0), ir.Constant(i32, 1), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(arr, types.int64, types.int64), codegen


#: ``stream_row`` writes rows that are a whole number of these blocks, each at an address aligned to it: one
#: cache line, one AVX-512 register.
STREAM_ALIGN = 64


@intrinsic
def stream_row(typingctx, out, o, t, row):
    """``out[o, t, :] = row[:inner]`` (the first ``inner`` elements of the C-contiguous ``row``: a 1-D row, or a
    scratch array whose first row it is) with non-temporal stores, 64 bytes at a time (``!nontemporal``: ``vmovntps``
    on x86-64, ``stnp`` on arm64, a plain store where the target has none).

    A plain store of a line that is not in cache first reads it from memory (read for ownership), only to
    overwrite it. A reduction's output row is written once, after the last row of its segment, so that read
    is pure waste: a tenth of the traffic at 64 features and 10 rows a segment. A non-temporal store skips it
    and leaves the line out of the caches, which suits an output larger than they are.

    The caller guarantees what the stores need (they fault otherwise): ``out`` is a C-contiguous 3-D array of
    ``row``'s element type, the row starts at a multiple of ``STREAM_ALIGN`` bytes and is a multiple of
    ``STREAM_ALIGN`` bytes long. Non-temporal stores are weakly ordered: ``store_fence`` before anyone reads."""
    if not (
        isinstance(out, types.Array)
        and out.ndim == 3
        and isinstance(row, types.Array)
        and row.layout == "C"
        and out.dtype == row.dtype
    ):
        return None

    def codegen(context, builder, signature, args):
        out_type, _, _, row_type = signature.args
        dest = context.make_array(out_type)(context, builder, args[0])
        source = context.make_array(row_type)(context, builder, args[3])
        strides = cgutils.unpack_tuple(builder, dest.strides, 3)
        shape = cgutils.unpack_tuple(builder, dest.shape, 3)
        i64 = ir.IntType(64)
        element = context.get_data_type(out_type.dtype)
        size = context.get_abi_sizeof(element)
        block = ir.VectorType(element, STREAM_ALIGN // size)
        start = builder.add(
            builder.ptrtoint(dest.data, i64),
            builder.add(builder.mul(args[1], strides[0]), builder.mul(args[2], strides[1])),
        )
        read = builder.ptrtoint(source.data, i64)
        nbytes = builder.mul(shape[2], ir.Constant(i64, size))
        nontemporal = builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
        with cgutils.for_range_slice(builder, ir.Constant(i64, 0), nbytes, ir.Constant(i64, STREAM_ALIGN)) as (
            offset,
            _,
        ):
            value = builder.load(builder.inttoptr(builder.add(read, offset), block.as_pointer()), align=size)
            stored = builder.store(
                value, builder.inttoptr(builder.add(start, offset), block.as_pointer()), align=STREAM_ALIGN
            )
            stored.set_metadata("nontemporal", nontemporal)
        return context.get_dummy_value()

    return types.void(out, types.int64, types.int64, row), codegen


@intrinsic
def prefetch_write(typingctx, arr, k):
    """Hint the CPU to fetch the line of ``arr[k]`` (1-D, C-contiguous) for writing (``llvm.prefetch``; never
    faults, whatever ``k``)."""

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        i64 = ir.IntType(64)
        offset = builder.mul(args[1], ir.Constant(i64, context.get_abi_sizeof(ary.data.type.pointee)))
        address = builder.inttoptr(builder.add(builder.ptrtoint(ary.data, i64), offset), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module,
            ir.FunctionType(ir.VoidType(), [ir.IntType(8).as_pointer(), i32, i32, i32]),
            "llvm.prefetch.p0i8",
        )
        builder.call(fn, [address, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return types.void(arr, types.int64), codegen


@intrinsic
def store_fence(typingctx):
    """A full memory fence (``fence seq_cst``: on x86-64 ``mfence`` or a locked instruction such as ``lock or``,
    which LLVM may choose instead; ``dmb ish`` on arm64), which also orders non-temporal stores: a kernel that used
    ``stream_row`` calls it before its work item ends, so the rows are visible to whichever thread reads them
    next."""

    def codegen(context, builder, signature, args):
        builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen
