"""Real gloo process groups for the tests: ``run_ranks(fn, world, *args)`` runs ``fn(rank, world, *args)`` on
``world`` processes and fails on an exception in any of them, or on a hang (a collective one rank skipped)."""

import os
import re
import socket
import time

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Ranks are forked from a forkserver that imported torch and scatterx once -- a process with no threads of its
# own, so forking it is safe -- instead of each spawned process importing them again (~3 s a rank on 2 cores).
# Not PyG: with torch 2.4 and PyG 2.5, ranks forked from a server that had imported it hung in their first
# collectives; the sharded tests' ranks import it themselves.
_PRELOAD = ["torch", "torch.distributed", "scatterx", "scatterx.distributed", __name__, "test_distributed"]
if "forkserver" in mp.get_all_start_methods():
    _START_METHOD = "forkserver"
    mp.get_context("forkserver").set_forkserver_preload(_PRELOAD)
else:
    _START_METHOD = "spawn"


def run_ranks(fn, world: int, *args, timeout: float = 240.0):
    """``fn(rank, world, *args)`` in ``world`` processes with a gloo group; fails on an exception in any of
    them, or when they do not all finish within ``timeout`` (a hang: a collective one rank skipped)."""
    context = mp.start_processes(
        _worker, args=(world, free_port(), fn, args), nprocs=world, join=False, start_method=_START_METHOD
    )
    deadline = time.monotonic() + timeout
    while not context.join(timeout=1.0):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(f"{world} ranks did not finish within {timeout:.0f} s: a collective hung")


def _worker(rank, world, port, fn, args):
    os.environ.setdefault("TRITON_INTERPRET", "1")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        fn(rank, world, *args)
    finally:
        dist.destroy_process_group()


def expect_raises(failures: list, name: str, error, match: str, call) -> None:
    """Run ``call``; append to ``failures`` unless it raises ``error`` with a message matching ``match`` (a rank
    collects its mismatches and reports them all at the end)."""
    try:
        call()
        failures.append(f"{name}: no exception")
    except error as raised:
        if not re.search(match, str(raised)):
            failures.append(f"{name}: {type(raised).__name__}: {raised!s} does not match {match!r}")
