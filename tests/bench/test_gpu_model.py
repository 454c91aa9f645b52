"""The bandwidth model (``scatterx/bench/gpu_model.py``): the bytes each call must move, by hand on a small shape,
the time on each GPU, and the table with measured times beside it."""

from scatterx.bench import gpu_model
from scatterx.bench.gpu_model import CASES, GPUS, Shape, markdown, model


def test_bytes_count_each_input_once_and_each_output_once():
    s = Shape("tiny", edges=10, nodes=4, features=3)  # rows of 12 bytes, an 8-byte index
    moved = {c.name: c.bytes(s) for c in CASES}
    assert moved["index_scatter_reduce sum, sorted"] == 10 * 12 + 10 * 8 + 4 * 12
    assert moved["index_scatter_reduce sum, unsorted"] == 10 * 12 + 10 * 8 + 2 * 4 * 12  # out zeroed, then written
    assert moved["segment_softmax"] == 2 * 10 * 12 + 10 * 8


def test_time_is_bytes_over_each_gpu_s_bandwidth():
    rows = model(shapes=(Shape("tiny", 1000, 10, 64),))
    assert len(rows) == len(CASES)
    for row in rows:
        for gpu, bandwidth in GPUS.items():
            assert abs(row[f"{gpu}_us"] - row["megabytes"] * 1e6 / bandwidth * 1e6) <= 0.1 + 1e-3 * row[f"{gpu}_us"]
    # the bench shape's sorted sum: 256 MB of rows, 8 MB of index, 25.6 MB out -> ~87 µs on an H100
    bench = {(r["case"], r["shape"]): r for r in model()}[("index_scatter_reduce sum, sorted", "bench")]
    assert bench["megabytes"] == 289.6 and 86 <= bench["H100_us"] <= 87


def test_measured_times_sit_beside_the_model(tmp_path):
    rows = model()
    measured = {("index_scatter_reduce sum, sorted", "bench"): 100.0}
    text = markdown(rows, measured, "NVIDIA H100 80GB HBM3")
    line = next(row for row in text.splitlines() if row.startswith("| index_scatter_reduce sum, sorted | bench"))
    assert line.rstrip(" |").endswith("100.0 | 86%")  # 289.6 MB in 100 µs = 2.9 TB/s of the H100's 3.35
    assert "| - | - |" in text  # cases not measured
    paths = gpu_model.write(str(tmp_path), rows)
    assert [p.name for p in paths] == ["bandwidth-model.md", "bandwidth-model.json"]


def test_the_balance_of_the_sorted_reductions():
    """One program per segment holds the hub's rows alone; the balanced grid gives every program about the same
    rows (max <= 4x mean, the goal) -- at a small power-law shape, with the report's table."""
    shape = gpu_model.Shape("small", 20_000, 2_000, 16)
    row = gpu_model.balance(shape, sms=4)
    per_segment, balanced = row["per_segment"], row["balanced"]
    assert per_segment["max_rows"] > 10 * per_segment["mean_rows"]  # power-law: a hub far above the mean
    assert balanced["max_rows"] <= 4 * balanced["mean_rows"]
    assert balanced["programs"] <= 4 * 8 and balanced["mean_rows"] * balanced["programs"] == shape.edges
    text = gpu_model.balance_markdown([row])
    assert "| small | balanced |" in text and "MISSED" in text.split("| small | balanced |")[0]
