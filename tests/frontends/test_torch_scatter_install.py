"""``scatterx.torch_scatter.install()``: ``import torch_scatter`` gets the drop-in, and PyG (which uses
torch_scatter when it finds it) runs on it. Each check runs in a fresh interpreter, since PyG decides whether
torch_scatter is there when it is first imported."""

import subprocess
import sys
import textwrap

import pytest


def run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], check=False, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_install_registers_module_and_submodules_and_uninstall_restores():
    out = run("""
        import sys
        import scatterx.torch_scatter as drop_in
        assert drop_in.install() is drop_in
        import torch_scatter
        from torch_scatter import scatter_max
        from torch_scatter.utils import broadcast
        from torch_scatter.composite import scatter_softmax
        assert torch_scatter is drop_in and scatter_max is drop_in.scatter_max
        assert sys.modules["torch_scatter.segment_csr"].segment_csr is drop_in.segment_csr
        drop_in.uninstall()
        assert "torch_scatter" not in sys.modules or sys.modules["torch_scatter"] is not drop_in
        print("ok")
    """)
    assert out.strip() == "ok"


def test_pyg_runs_on_the_drop_in():
    pytest.importorskip("torch_geometric")
    out = run("""
        import torch
        import scatterx.torch_scatter as drop_in
        drop_in.install()
        import torch_geometric.typing as typing
        assert typing.WITH_TORCH_SCATTER and typing.torch_scatter is drop_in
        from torch_geometric.utils import scatter, segment
        from torch_geometric.utils._scatter import scatter_argmax
        from torch_geometric.nn import SAGEConv, GINConv, GATConv, global_max_pool
        calls = []
        for name in ("segment_csr", "scatter_max"):  # what PyG calls torch_scatter for on the CPU
            real = getattr(drop_in, name)
            def counting(*args, _real=real, _name=name, **kwargs):
                calls.append(_name)
                return _real(*args, **kwargs)
            setattr(drop_in, name, counting)
        g = torch.Generator().manual_seed(0)
        x = torch.randn(30, 8, generator=g)
        edge_index = torch.randint(0, 30, (2, 120), generator=g)
        for reduce in ("max", "min", "mean", "sum", "mul"):
            got = scatter(x[edge_index[0]], edge_index[1], 0, dim_size=30, reduce=reduce)
            want = torch.zeros(30, 8).scatter_reduce(0, edge_index[1].view(-1, 1).expand(-1, 8), x[edge_index[0]],
                                                     {"max": "amax", "min": "amin", "mul": "prod"}.get(reduce, reduce),
                                                     include_self=False)
            assert torch.allclose(got, want, atol=1e-5), reduce
        values = torch.tensor([1.0, 5.0, 5.0, 2.0])
        assert scatter_argmax(values, torch.tensor([0, 0, 0, 1]), dim_size=3).tolist() == [1, 3, 4]
        ptr = torch.tensor([0, 10, 10, 30])
        want = torch.stack([x[:10].amax(0), torch.zeros(8), x[10:].amax(0)])
        assert torch.allclose(segment(x, ptr, reduce="max"), want)
        batch = torch.tensor([0] * 10 + [1] * 20)
        assert torch.allclose(global_max_pool(x, batch), torch.stack([x[:10].amax(0), x[10:].amax(0)]))
        assert calls.count("scatter_max") == 1 and calls.count("segment_csr") >= 1, calls
        for conv in (SAGEConv(8, 4, aggr="max"), GINConv(torch.nn.Linear(8, 4)), GATConv(8, 4, heads=2)):
            y = conv(x, edge_index)
            y.sum().backward()
            assert torch.isfinite(y).all()
        print("ok")
    """)
    assert out.strip() == "ok"
