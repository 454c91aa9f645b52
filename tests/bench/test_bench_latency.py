"""``bench/latency.py``: the first calls in fresh processes -- one real child (the small call), and the three calls
with their empty-cache and cached processes each on its own cache directory."""

from scatterx.bench import latency


def test_a_small_first_call_in_a_fresh_process():
    import tempfile

    with tempfile.TemporaryDirectory() as cache_dir:
        cold = latency._child(cache_dir, "small", *latency.SMALL)
        cached = latency._child(cache_dir, "small", *latency.SMALL)
    assert cold["first_call_s"] > cached["first_call_s"] > 0  # compiled, then loaded from the cache
    assert cold["import_s"] > 0 and cached["call_s"] > 0


def test_each_call_is_measured_cold_then_cached_on_a_cache_of_its_own(monkeypatch):
    seen = []

    def child(cache_dir, kind, edges, nodes, features):
        seen.append((cache_dir, kind, (edges, nodes, features)))
        cold = sum(1 for c, k, _ in seen if k == kind) == 1
        return {"import_s": 1.0, "first_call_s": 2.0 if cold else 0.1, "call_s": 0.01}

    monkeypatch.setattr(latency, "_child", child)
    result = latency.first_call_latency(graph=(100, 10, 4))
    assert [kind for _, kind, _ in seen] == ["small", "small", "sorted", "sorted", "shuffled", "shuffled"]
    dirs = [d for d, _, _ in seen]
    assert dirs[0] == dirs[1] and dirs[2] == dirs[3] and len({dirs[0], dirs[2], dirs[4]}) == 3
    assert seen[2][2] == (100, 10, 4) and seen[0][2] == latency.SMALL
    assert result["sorted_cold_s"] == 2.0 and result["sorted_cached_s"] == 0.1 and result["cold_s"] == 2.0
