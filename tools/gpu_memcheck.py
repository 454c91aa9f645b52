"""One small call of every GPU kernel, for ``compute-sanitizer --tool memcheck`` (``tools/gpu-check.sh``).

Each kernel of ``scatterx/backends/gpu/variants.py`` is launched at least once, through the public ops, on shapes
that leave partial tiles (rows and features not multiples of a block) and empty segments, so that a masked load or
store that reaches past its tensor is reported. The launches are recorded, and the script fails if a kernel went
unlaunched: a kernel added without a call here is caught.

    compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/gpu_memcheck.py      # on a GPU
    TRITON_INTERPRET=1 python3 tools/gpu_memcheck.py                                          # rehearsal on CPU
"""

import contextlib
import sys

import torch

import scatterx
from scatterx import backends
from scatterx.backends.gpu import _launch, routes
from scatterx.backends.gpu.variants import all_variants
from scatterx.ops import segment_arg_reduce, segment_logsumexp


def calls(device: str) -> None:
    g = torch.Generator().manual_seed(0)

    def rand(*shape, grad=False):
        return torch.randn(*shape, generator=g).to(device).requires_grad_(grad)

    edges, nodes, features = 37, 11, 13
    index = torch.randint(0, nodes, (edges,), generator=g).sort().values
    index[index == 3] = 4  # an empty segment
    unsorted = index[torch.randperm(edges, generator=g)]
    index, unsorted = index.to(device), unsorted.to(device)
    ptr = scatterx.index_to_ptr(index, nodes)
    sources = torch.randint(0, nodes, (edges,), generator=g).to(device)

    for reduce in ("sum", "mean", "amax"):  # segment kernel, its backward (amax), and the atomic route with finish
        x = rand(edges, features, grad=True)
        scatterx.index_scatter_reduce(0, index, x, reduce, dim_size=nodes).sum().backward()
        for route in (routes.Route.ATOMIC, routes.Route.SORT) if reduce != "amax" else (routes.Route.SORT,):
            with routes.force(route):  # (amax has no atomic form)
                scatterx.index_scatter_reduce(0, unsorted, rand(edges, features), reduce, sorted=False, dim_size=nodes)
    scatterx.segment_reduce(rand(edges, features), ptr, "prod")
    scatterx.gather_segment_reduce(rand(nodes, features), ptr, sources, "mean", weight=rand(edges))
    segment_arg_reduce(rand(edges, features), ptr, "amax")
    segment_logsumexp(rand(edges, features), ptr)
    scatterx.segment_softmax(rand(edges, 3, grad=True), ptr=ptr).sum().backward()
    scatterx.sddmm(ptr, sources, rand(nodes, features), rand(nodes, features))
    a, b, att = rand(nodes, 2, 5, grad=True), rand(nodes, 2, 5, grad=True), rand(2, 5, grad=True)
    scatterx.gatv2_logits(ptr, sources, a, b, att).sum().backward()


def main() -> int:
    on_gpu = torch.cuda.is_available()
    device = "cuda" if on_gpu else "cpu"
    wanted = {v.kernel for v in all_variants()}
    with contextlib.ExitStack() as stack:
        launched = stack.enter_context(_launch.recording())
        if not on_gpu:  # the rehearsal: the same kernels through Triton's interpreter
            stack.enter_context(backends.gpu_backend_on_cpu())
        calls(device)
        if on_gpu:
            torch.cuda.synchronize()
    ran = {key[0] for key in launched}
    missing = sorted(wanted - ran)
    print(
        f"memcheck calls on {device}: {len(ran & wanted)} of {len(wanted)} kernels launched, {len(launched)} variants"
    )
    for name in missing:
        print(f"NOT LAUNCHED: {name}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
