"""ONNX export of ``scatterx::index_scatter_reduce`` (``scatterx/export/onnx_ops/index_scatter_reduce.py`` and the row
reduction of ``_graph.py``), run in onnxruntime against the eager result: every reduction, dim (negative too) and
dtype, ``out=``, runs of every length, an index shorter than ``src`` with dynamic lengths; mutants of the row
reduction must fail these comparisons."""

import pytest
import torch
from onnx_run import (
    DTYPES,
    REDUCTIONS,
    Wrap,
    assert_outputs,
    nan,
    optimized,
    ort,
    repeated_index,
    run_onnx,
    values,
)

import scatterx
from scatterx.export import to_onnx
from scatterx.export.onnx_ops import _graph


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_scatter_reduce_every_reduction(dtype, tmp_path):
    """Every reduction along dims 0, 1 and -1 (an index per dim); optimised, a graph per dim (the optimizer's time
    grows faster than a graph's nodes), else one graph of the three."""
    src = values((6, 5, 4), dtype, 0)
    indices = [repeated_index(src.size(dim), 7, 1) for dim in (0, 1, -1)]
    groups = [((0,), 0), ((1,), 1), ((-1,), 2)] if optimized(dtype) else [((0, 1, -1), None)]
    for dims, only in groups:
        inputs = [src] + (indices if only is None else [indices[only]])

        def every(src, *index, dims=dims):
            return tuple(
                scatterx.index_scatter_reduce(dim, i, src, r, False, dim_size=7)
                for dim, i in zip(dims, index)
                for r in REDUCTIONS
            )

        path = tmp_path / f"m{dims[0]}.onnx"
        assert_outputs(run_onnx(Wrap(every), inputs, path, optimize=optimized(dtype)), every(*inputs))


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_index_scatter_reduce_into_out(include_self, dtype, tmp_path):
    """``out=`` (a base): with include_self the reduction starts from it (mean counts it), without it rows that
    receive nothing keep it."""
    src = values((6, 3), dtype, 2)
    index = repeated_index(6, 5, 3)
    base = values((5, 3), dtype, 4)

    def into_out(src, index, base):
        return tuple(
            scatterx.index_scatter_reduce(0, index, src, r, False, out=base.clone(), include_self=include_self)
            for r in REDUCTIONS
        )

    path = tmp_path / "m.onnx"
    got = run_onnx(Wrap(into_out), [src, index, base], path, optimize=optimized(dtype))
    assert_outputs(got, into_out(src, index, base))


def test_wide_rows_with_repeated_targets_are_exact_and_deterministic(tmp_path):
    """Wide rows into few targets: where onnxruntime's ScatterND, split over threads, races on repeated indices
    (the reason the translations use ScatterElements), every run must equal the eager result."""
    src = values((3000, 256), torch.float32, 20)
    index = repeated_index(3000, 300, 21)

    def both(src, index):
        return (
            scatterx.index_scatter_reduce(0, index, src, "sum", False, dim_size=300),
            scatterx.index_scatter_reduce(0, index, src, "amax", False, dim_size=300),
        )

    path = tmp_path / "m.onnx"
    to_onnx(Wrap(both), (src, index), path, optimize=False)  # (the optimizer meets both in the grids above)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), (src, index))}
    want = both(src, index)
    for _ in range(3):
        assert_outputs([torch.from_numpy(o) for o in session.run(None, feeds)], want)


def test_float16(tmp_path):
    """onnxruntime's ScatterND reduces no float16: the translation reduces in float32 and rounds once, as the eager
    kernels do."""
    src = values((6, 3), torch.float16, 5)
    index = repeated_index(6, 5, 6)

    def every(src, index):
        return tuple(scatterx.index_scatter_reduce(0, index, src, r, False, dim_size=5) for r in REDUCTIONS)

    assert_outputs(run_onnx(Wrap(every), [src, index], tmp_path / "m.onnx"), every(src, index))


@pytest.mark.parametrize("sorted", [True, False])
def test_runs_of_every_length_sorted_and_shuffled(sorted, tmp_path):
    """Runs of 1 to 17 entries (odd ones, and 2**k + 1 that need one more level of the tree) and empty targets,
    the index sorted (the graph takes it as it is) or shuffled (the graph sorts it): every reduction, exactly. The
    optimizer runs on the sorted graph: the shuffled one's translation meets it in the float32 grid above."""
    lengths = [1, 2, 3, 4, 5, 7, 8, 9, 16, 17]
    index = torch.repeat_interleave(torch.arange(0, 2 * len(lengths), 2), torch.tensor(lengths))
    if not sorted:
        index = index[torch.randperm(index.numel(), generator=torch.Generator().manual_seed(3))]
    src = values((index.numel(), 3), torch.float64, 22)
    size = 2 * len(lengths) + 1

    def every(src, index):
        return tuple(scatterx.index_scatter_reduce(0, index, src, r, sorted, dim_size=size) for r in REDUCTIONS)

    assert_outputs(run_onnx(Wrap(every), [src, index], tmp_path / "m.onnx", optimize=sorted), every(src, index))


def test_an_index_shorter_than_src_with_dynamic_lengths(tmp_path):
    """An index shorter than src's dim reads its first ``len(index)`` rows (the op's contract), also where the
    export leaves both lengths dynamic (the ScatterElements path): run at lengths equal, shorter by several rows,
    and of one entry, for a sum, a selection and a mean."""
    from torch.export import Dim

    class Every(torch.nn.Module):
        def forward(self, index, src):
            return tuple(scatterx.index_scatter_reduce(0, index, src, r, False, dim_size=4) for r in REDUCTIONS)

    index, src = torch.tensor([0, 2, 2]), values((5, 2), torch.float32, 40)
    path = tmp_path / "m.onnx"
    dynamic = ({0: Dim("entries", min=1, max=100)}, {0: Dim("rows", min=2, max=100)})
    to_onnx(Every(), (index, src), path, dynamic_shapes=dynamic, optimize=False)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for entries, rows in ((5, 5), (3, 7), (1, 5)):
        index, src = repeated_index(entries, 6, entries), values((rows, 2), torch.float32, rows)
        got = session.run(None, dict(zip(names, (index.numpy(), src.numpy()))))
        assert_outputs([torch.from_numpy(g) for g in got], Every()(index, src))
    # a NaN member before others of its target: amax/amin give NaN (onnxruntime's max scatter alone drops it)
    index, src = torch.tensor([0, 0, 2, 2, 2]), torch.tensor([[nan, 1.0], [1.0, 2.0], [3.0, nan], [4.0, 5.0], [nan, 0]])
    got = session.run(None, dict(zip(names, (index.numpy(), src.numpy()))))
    for g, w in zip(got, Every()(index, src)):
        torch.testing.assert_close(torch.from_numpy(g), w, equal_nan=True)


MUTANTS = ["unpaired rows doubled", "one level short", "empty rows not zero", "amax combines by Add"]


@pytest.mark.parametrize("mutant", MUTANTS)
def test_mutants_of_the_translation_fail(mutant, tmp_path, monkeypatch):
    """One piece of the row reduction replaced (``onnx_ops/_graph.py``'s helpers): eager's result must differ."""
    reduce = "sum" if mutant == "unpaired rows doubled" else "amax"
    if mutant == "unpaired rows doubled":  # a run's odd row out stays combined with itself
        monkeypatch.setattr(_graph, "_write_back_unpaired", lambda combined, *_: combined)
    elif mutant == "one level short":  # the longest run is not finished: its target stays empty
        real_levels = _graph._levels
        monkeypatch.setattr(_graph, "_levels", lambda entries: real_levels(entries) - 1)
    elif mutant == "empty rows not zero":
        real_scalar = _graph._scalar_like
        monkeypatch.setattr(_graph, "_scalar_like", lambda v, like: real_scalar(1.0 if v == 0.0 else v, like))
    else:
        monkeypatch.setitem(_graph._COMBINE, "amax", "Add")
    src = -torch.rand(24, 3) - 1  # negative values
    # odd runs, empty targets, and a run of 17 of the 24 entries: it needs the tree's last level
    index = torch.tensor([0] * 17 + [1] * 3 + [3] * 1 + [5] * 3)

    def fn(src, index):
        return scatterx.index_scatter_reduce(0, index, src, reduce, True, dim_size=7)

    with pytest.raises(AssertionError):  # (the optimizer is beside the point: the translation itself is wrong)
        assert_outputs(run_onnx(Wrap(fn), [src, index], tmp_path / "m.onnx", optimize=False), fn(src, index))
