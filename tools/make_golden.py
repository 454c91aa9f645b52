"""Regenerate the golden vectors of the TensorFlow and Paddle frontends by running the real frameworks.

    python tools/make_golden.py tensorflow   # needs tensorflow-cpu   -> tests/frontends/golden/tensorflow.json
    python tools/make_golden.py paddle       # needs paddlepaddle     -> tests/frontends/golden/paddle.json

Neither framework is a dependency of scatterx or of its tests: the JSON files are committed, and
``tests/frontends/test_golden.py`` replays every case on scatterx's frontends. Each case records its inputs
(dtype, shape, values), keyword arguments, the framework's version, and either the result or the name of the
exception the framework raised. Inputs come from a seeded NumPy generator, so a rerun reproduces the file unless the
framework changed its behaviour.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "frontends" / "golden"


def encode(a) -> dict:
    a = np.asarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "data": a.reshape(-1).tolist()}


class Cases:
    def __init__(self, framework, version, run):
        self.framework, self.version, self.run, self.cases = framework, version, run, []

    def add(self, name, fn, args, **kwargs):
        """Run ``fn(*args, **kwargs)`` in the framework; record the result or the exception's class name."""
        case = {
            "name": name,
            "fn": fn,
            "args": [encode(a) if isinstance(a, np.ndarray) else a for a in args],
            "kwargs": kwargs,
        }
        try:
            case["expect"] = encode(self.run(fn, args, kwargs))
        except Exception as e:
            case["error"] = type(e).__name__
        self.cases.append(case)

    def save(self):
        OUT.mkdir(parents=True, exist_ok=True)
        path = OUT / f"{self.framework}.json"
        doc = {
            "framework": self.framework,
            "version": self.version,
            "generator": "tools/make_golden.py",
            "cases": self.cases,
        }
        path.write_text(json.dumps(doc, indent=None, separators=(",", ":")) + "\n")
        print(f"{len(self.cases)} cases -> {path}")


def rng_values(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).round(3).astype(dtype)  # 3 decimals: sums stay exact enough to compare
    return rng.integers(-9, 10, shape).astype(dtype)


# ------------------------------------------------------------------------------------------------------ TensorFlow
def tensorflow_cases() -> Cases:
    import tensorflow as tf

    fns = {
        "tensor_scatter_nd_update": tf.tensor_scatter_nd_update,
        "tensor_scatter_nd_add": tf.tensor_scatter_nd_add,
        "tensor_scatter_nd_sub": tf.tensor_scatter_nd_sub,
        "tensor_scatter_nd_max": tf.tensor_scatter_nd_max,
        "tensor_scatter_nd_min": tf.tensor_scatter_nd_min,
        "gather_nd": tf.gather_nd,
        "unsorted_segment_sum": tf.math.unsorted_segment_sum,
        "unsorted_segment_prod": tf.math.unsorted_segment_prod,
        "unsorted_segment_max": tf.math.unsorted_segment_max,
        "unsorted_segment_min": tf.math.unsorted_segment_min,
        "unsorted_segment_mean": tf.math.unsorted_segment_mean,
    }

    def run(fn, args, kwargs):
        with tf.device("/CPU:0"):
            return fns[fn](*[tf.constant(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs).numpy()

    c = Cases("tensorflow", tf.__version__, run)
    rng = np.random.default_rng(2026)
    scatters = [n for n in fns if n.startswith("tensor_scatter_nd")]
    for dtype in ("float32", "float64", "int32", "int64"):
        for fn in scatters:
            for itype in ("int32", "int64"):
                # whole rows (k=1), with a duplicate
                c.add(
                    f"{fn}/rows/{dtype}/{itype}",
                    fn,
                    [rng_values(rng, (5, 3), dtype), np.array([[3], [0], [3]], itype), rng_values(rng, (3, 3), dtype)],
                )
            # single elements (k = rank), duplicates
            c.add(
                f"{fn}/elements/{dtype}",
                fn,
                [
                    rng_values(rng, (4, 3), dtype),
                    np.array([[0, 1], [3, 2], [0, 1], [2, 0]], "int64"),
                    rng_values(rng, (4,), dtype),
                ],
            )
            # a batch of index lists (indices 3-D), slices of a 3-D tensor
            c.add(
                f"{fn}/batched/{dtype}",
                fn,
                [
                    rng_values(rng, (4, 2, 3), dtype),
                    rng.integers(0, 4, (2, 3, 1)).astype("int64"),
                    rng_values(rng, (2, 3, 2, 3), dtype),
                ],
            )
            c.add(
                f"{fn}/pairs-into-3d/{dtype}",
                fn,
                [
                    rng_values(rng, (3, 4, 2), dtype),
                    np.stack([rng.integers(0, 3, 6), rng.integers(0, 4, 6)], 1),
                    rng_values(rng, (6, 2), dtype),
                ],
            )
    for fn in scatters:
        c.add(f"{fn}/out-of-range", fn, [np.zeros((4, 2), "float32"), np.array([[4]]), np.ones((1, 2), "float32")])
        c.add(f"{fn}/negative", fn, [np.zeros((4, 2), "float32"), np.array([[-1]]), np.ones((1, 2), "float32")])
        c.add(
            f"{fn}/empty-indices",
            fn,
            [rng_values(rng, (4, 2), "float32"), np.zeros((0, 1), "int64"), np.zeros((0, 2), "float32")],
        )
    # a larger update with many duplicates: is the last write the one that stays?
    c.add(
        "tensor_scatter_nd_update/many-duplicates/float32",
        "tensor_scatter_nd_update",
        [
            np.zeros((8, 4), "float32"),
            rng.integers(0, 8, (200, 1)).astype("int64"),
            np.arange(800, dtype="float32").reshape(200, 4),
        ],
    )

    for dtype in ("float32", "float64", "int32", "int64"):
        params = rng_values(rng, (4, 3, 2), dtype)
        c.add(f"gather_nd/elements/{dtype}", "gather_nd", [params, rng.integers(0, 2, (5, 3)).astype("int64")])
        c.add(f"gather_nd/rows/{dtype}", "gather_nd", [params, rng.integers(0, 4, (2, 3, 1)).astype("int32")])
        c.add(f"gather_nd/pairs/{dtype}", "gather_nd", [params, np.array([[0, 2], [3, 1]], "int64")])
        c.add(
            f"gather_nd/batch1/{dtype}",
            "gather_nd",
            [params, rng.integers(0, 2, (4, 2, 1)).astype("int64")],
            batch_dims=1,
        )
        c.add(
            f"gather_nd/batch1-pairs/{dtype}",
            "gather_nd",
            [params, np.stack([rng.integers(0, 3, (4, 5)), rng.integers(0, 2, (4, 5))], -1).astype("int64")],
            batch_dims=1,
        )
        c.add(
            f"gather_nd/batch2/{dtype}",
            "gather_nd",
            [params, rng.integers(0, 2, (4, 3, 1)).astype("int64")],
            batch_dims=2,
        )
    c.add("gather_nd/out-of-range", "gather_nd", [np.zeros((4, 2), "float32"), np.array([[4]])])
    c.add("gather_nd/negative", "gather_nd", [np.zeros((4, 2), "float32"), np.array([[0, -1]])])
    c.add("gather_nd/empty-index-vector", "gather_nd", [rng_values(rng, (2, 3), "float32"), np.zeros((2, 0), "int64")])

    segs = [n for n in fns if n.startswith("unsorted_segment")]
    for dtype in ("float32", "float64", "int32", "int64"):
        for fn in segs:
            if fn == "unsorted_segment_mean" and dtype.startswith("int"):
                continue  # TF has no integer mean
            for itype in ("int32", "int64"):
                # segments 2 and 5 empty, one negative id (dropped)
                ids = np.array([0, 3, 1, 0, 3, -1, 4, 1], itype)
                c.add(f"{fn}/1d/{dtype}/{itype}", fn, [rng_values(rng, (8, 3), dtype), ids, 6])
            # ids with the shape of a prefix of data's shape
            c.add(
                f"{fn}/2d-ids/{dtype}",
                fn,
                [rng_values(rng, (2, 3, 2), dtype), np.array([[0, 2, 0], [2, -3, 2]], "int64"), 4],
            )
            c.add(f"{fn}/scalar-rows/{dtype}", fn, [rng_values(rng, (7,), dtype), np.array([1, 1, 0, 2, 1, 0, 2]), 3])
    for fn in segs:
        c.add(f"{fn}/id-too-large", fn, [np.ones((3, 2), "float32"), np.array([0, 3, 1]), 3])
        c.add(f"{fn}/nan", fn, [np.array([1.0, np.nan, 2.0, 3.0], "float32"), np.array([0, 0, 1, 1]), 2])
    return c


# ------------------------------------------------------------------------------------------------------ Paddle
def paddle_cases() -> Cases:
    import paddle

    paddle.set_device("cpu")

    def run(fn, args, kwargs):
        t = [paddle.to_tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        return getattr(paddle, fn)(*t, **kwargs).numpy()

    c = Cases("paddle", paddle.__version__, run)
    rng = np.random.default_rng(2027)
    for dtype in ("float32", "float64", "int32", "int64"):
        for overwrite in (True, False):
            for itype in ("int32", "int64"):
                c.add(
                    f"scatter/rows/{dtype}/{itype}/overwrite={overwrite}",
                    "scatter",
                    [rng_values(rng, (5, 3), dtype), np.array([2, 1, 0, 1, 4], itype), rng_values(rng, (5, 3), dtype)],
                    overwrite=overwrite,
                )
            c.add(
                f"scatter/3d/{dtype}/overwrite={overwrite}",
                "scatter",
                [rng_values(rng, (4, 2, 3), dtype), np.array([3, 3, 1]), rng_values(rng, (3, 2, 3), dtype)],
                overwrite=overwrite,
            )
            c.add(
                f"scatter/0d-index/{dtype}/overwrite={overwrite}",
                "scatter",
                [rng_values(rng, (4, 3), dtype), np.array(2), rng_values(rng, (3,), dtype)],
                overwrite=overwrite,
            )
            c.add(
                f"scatter/1d-x/{dtype}/overwrite={overwrite}",
                "scatter",
                [rng_values(rng, (6,), dtype), np.array([5, 0, 5]), rng_values(rng, (3,), dtype)],
                overwrite=overwrite,
            )
    c.add(
        "scatter/many-duplicates",
        "scatter",
        [np.zeros((8, 4), "float32"), rng.integers(0, 8, 200), np.arange(800, dtype="float32").reshape(200, 4)],
        overwrite=True,
    )
    c.add("scatter/out-of-range", "scatter", [np.zeros((4, 2), "float32"), np.array([4]), np.ones((1, 2), "float32")])
    c.add("scatter/negative", "scatter", [np.zeros((4, 2), "float32"), np.array([-1]), np.ones((1, 2), "float32")])

    for dtype in ("float32", "float64", "int32", "int64"):
        for reduce in ("assign", "add", "mul", "mean", "amin", "amax"):
            for include_self in (True, False):
                tag = f"{dtype}/{reduce}/include_self={include_self}"
                arr = rng_values(rng, (4, 5), dtype)
                c.add(
                    f"put_along_axis/same-shape/{tag}",
                    "put_along_axis",
                    [arr, rng.integers(0, 4, (4, 5)).astype("int64"), rng_values(rng, (4, 5), dtype)],
                    axis=0,
                    reduce=reduce,
                    include_self=include_self,
                    broadcast=False,
                )
                c.add(
                    f"put_along_axis/smaller/{tag}",
                    "put_along_axis",
                    [arr, rng.integers(0, 5, (3, 4)).astype("int64"), rng_values(rng, (3, 6), dtype)],
                    axis=1,
                    reduce=reduce,
                    include_self=include_self,
                    broadcast=False,
                )
                c.add(
                    f"put_along_axis/broadcast/{tag}",
                    "put_along_axis",
                    [arr, rng.integers(0, 5, (4, 1)).astype("int64"), rng_values(rng, (4, 1), dtype)],
                    axis=1,
                    reduce=reduce,
                    include_self=include_self,
                    broadcast=True,
                )
                c.add(
                    f"put_along_axis/3d-neg-axis/{tag}",
                    "put_along_axis",
                    [
                        rng_values(rng, (2, 3, 4), dtype),
                        rng.integers(0, 4, (2, 3, 6)).astype("int64"),
                        rng_values(rng, (2, 3, 6), dtype),
                    ],
                    axis=-1,
                    reduce=reduce,
                    include_self=include_self,
                    broadcast=False,
                )
        c.add(
            f"put_along_axis/scalar-value/{dtype}",
            "put_along_axis",
            [
                rng_values(rng, (3, 4), dtype),
                np.array([[0, 2, 1, 0]]),
                np.array(7 if dtype.startswith("int") else 2.5, dtype),
            ],
            axis=0,
            reduce="assign",
        )
    c.add(
        "put_along_axis/out-of-range",
        "put_along_axis",
        [np.zeros((3, 2), "float32"), np.array([[3, 0]]), np.ones((1, 2), "float32")],
        axis=0,
        broadcast=False,
    )
    return c


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else ""
    makers = {"tensorflow": tensorflow_cases, "paddle": paddle_cases}
    if which not in makers:
        sys.exit(f"usage: python {sys.argv[0]} {'|'.join(makers)}")
    makers[which]().save()
