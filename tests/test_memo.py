"""The caches' one helper (``scatterx/_memo.py``): least recently used out first, shared by threads without a
lock, every memo registered, and ``scatterx.clear_caches`` emptying them all; the memos of the package are the
ones ``docs/ARCHITECTURE.md`` lists."""

import ast
import gc
import pathlib
import re
import threading
from collections import OrderedDict

import pytest
import torch

import scatterx
from scatterx import _memo, planner
from scatterx._memo import Memo, TensorMemo
from scatterx.planner import XMap

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture
def memo():
    made = []

    def make(size=3, kind=Memo):
        m = kind(f"test.memo{len(made)}.{id(made)}", size)
        made.append(m)
        return m

    yield make
    for m in made:
        _memo._REGISTRY.pop(m.name, None)


def test_the_least_recently_used_entry_goes_first(memo):
    m = memo(size=3)
    for key in "abc":
        m.put(key, key.upper())
    assert m.get("a") == "A"  # a is now the most recently used
    m.put("d", "D")
    assert list(m) == ["c", "a", "d"] and m.get("b") is None
    m.put("c", "C2")  # a new value for a key: most recently used, nothing evicted
    assert list(m) == ["a", "d", "c"] and m.get("c") == "C2" and len(m) == 3


def test_an_entry_evicted_by_another_thread_between_lookup_and_move_is_no_error(memo):
    class Evicting(OrderedDict):
        def get(self, key, default=None):
            value = super().get(key, default)
            self.pop(key, None)  # another thread's eviction, between the lookup and the move to the end
            return value

    m = memo(size=2)
    m._entries = Evicting()
    m.put("k", 1)
    assert m.get("k") == 1  # the value in hand, although the entry is gone
    assert m.get("k") is None


def test_threads_share_a_memo_without_a_lock(memo):
    m = memo(size=8)
    errors = []

    def work(seed):
        try:
            for i in range(20000):
                key = (seed * 7 + i) % 13
                if m.get(key) is None:
                    m.put(key, key)
                if i % 997 == 0:
                    m.clear()
        except Exception as e:  # any exception fails the test
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(m) <= 8


def test_a_name_is_registered_once_and_a_size_is_positive(memo):
    m = memo()
    with pytest.raises(ValueError, match="exists already"):
        Memo(m.name, 2)
    with pytest.raises(ValueError, match="size must be >= 1"):
        Memo("test.memo.empty", 0)
    assert _memo.memos()[m.name] is m


def test_a_tensor_memo_keeps_a_result_while_the_tensor_lives_unchanged(memo):
    m = memo(kind=TensorMemo)
    calls = []

    def total(x):
        calls.append(1)
        return int(x.sum())

    t = torch.tensor([1, 2, 3])
    assert m.once(t, "sum", total) == 6 and m.once(t, "sum", total) == 6 and len(calls) == 1
    t.add_(1)  # an in-place change: the version counter moves
    assert m.once(t, "sum", total) == 9 and len(calls) == 2
    assert m.once(t, "other", total) == 9 and len(calls) == 3 and len(m) == 2  # one entry per computation
    del t
    gc.collect()
    assert len(m) == 0  # the entries go with the tensor
    with torch.inference_mode():
        frozen = torch.tensor([4])
    assert m.once(frozen, "sum", total) == 4 and m.once(frozen, "sum", total) == 4 and len(calls) == 5
    assert len(m) == 0  # an inference tensor has no version counter: nothing kept


def test_clear_caches_empties_every_memo():
    index = torch.tensor([0, 1, 1]).view(3, 1).expand(3, 2)
    before = scatterx.scatter_reduce(torch.zeros(2, 2), 0, index, torch.ones(3, 2), "sum")
    assert len(planner._RECIPES) > 0 and len(planner._ALONG) > 0
    scatterx.clear_caches()
    assert all(len(m) == 0 for m in _memo.memos().values())
    assert torch.equal(scatterx.scatter_reduce(torch.zeros(2, 2), 0, index, torch.ones(3, 2), "sum"), before)
    assert planner.plan(XMap.along_dim(index, (2, 2), 0)).kind == "slice"


def _memos_in_source():
    """(name, module path) of every ``Memo(...)`` / ``TensorMemo(...)`` made in the package's source."""
    found = []
    for path in sorted((ROOT / "scatterx").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("Memo", "TensorMemo")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.append((node.args[0].value, path.relative_to(ROOT).as_posix()))
    return found


def test_every_memo_of_the_package_is_in_the_architecture_table():
    """docs/ARCHITECTURE.md lists every cache, by its memo's name and module: a new cache is a line there."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    table = set(re.findall(r"^\| `([\w.]+)` \| `(scatterx/[\w/]+\.py)` \|", text, re.M))
    found = set(_memos_in_source())
    assert len(found) >= 6
    assert found == table, f"in the code, not the table: {found - table}; in the table, not the code: {table - found}"
