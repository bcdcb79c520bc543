"""The per-pair bandwidth check in the simulated fleet: the rendered script's own command line
runs through the emulators, and each pair's figure follows the fabric model and the faults."""

from __future__ import annotations

import itertools

from nvcre.measure.nccl import parse_nccl_log
from nvcre.measure.pairwise import parse_pair_lines
from nvcre.sim.emulators import dispatch
from nvcre.workloads.pairwise import launcher_args

MPIRUN = ["timeout", "3600", "/usr/local/mpi/bin/mpirun"]
ARGS = ["-N", "8", "--allow-run-as-root", "-x", "NCCL_DEBUG=INFO",
        "/usr/local/bin/all_reduce_perf_mpi", "-b", "8", "-e", "16G", "-f", "2", "-n", "5", "-N", "1"]


def _run(make_ctx, nodes, faults=(), racks=2):
    hostfile = "".join(f"gpu-node-{i:02d}-worker slots=8\n" for i in range(1, nodes + 1))
    launcher = ["/bin/bash", "-c", 'set -u\n"$@"; rc=$?\nexit $rc\n', "nvcre-launcher",
                *launcher_args("/etc/mpi/hostfile", MPIRUN, ARGS)]
    ctx = make_ctx(launcher, nodes=nodes, racks=racks, faults=faults, files={"/etc/mpi/hostfile": hostfile})
    assert dispatch.classify(ctx) == "pairwise"
    out = dispatch.emulate(ctx)
    pairs = {frozenset((p.a.removesuffix("-worker"), p.b.removesuffix("-worker"))): p
             for p in parse_pair_lines(out.text())}
    return out, pairs


def test_every_pair_once_and_the_slowest_pair_is_the_jobs_figure(make_ctx):
    out, pairs = _run(make_ctx, 7, faults=["degraded-nic:node=gpu-node-03,factor=0.5"])
    names = [f"gpu-node-{i:02d}" for i in range(1, 8)]
    assert set(pairs) == {frozenset(p) for p in itertools.combinations(names, 2)}  # 21, each once
    slow = {k for k, p in pairs.items() if p.busbw < 300}
    assert slow == {k for k in pairs if "gpu-node-03" in k}  # every pair with the degraded NIC, no other
    assert all(p.busbw > 370 for k, p in pairs.items() if k not in slow)
    # the log's own nccl-tests table is the slowest pair's: the Job's figure and threshold judge it
    peak = max(r.out_of_place.bus_bw for r in parse_nccl_log(out.text()).rows)
    assert peak == min(p.busbw for p in pairs.values())
    assert out.exit_code == 0 and set(out.hosts) == set(names)


def test_a_bad_link_slows_only_its_pair_and_a_flaky_node_fails_about_half(make_ctx):
    out, pairs = _run(make_ctx, 16, faults=["bad-link:nodes=gpu-node-02+gpu-node-11,factor=0.3",
                                            "flaky-node:node=gpu-node-07,probability=0.5"])
    slow = {k for k, p in pairs.items() if p.busbw is not None and p.busbw < 300}
    assert slow == {frozenset(("gpu-node-02", "gpu-node-11"))}
    failed = {k for k, p in pairs.items() if p.busbw is None}
    assert failed and all("gpu-node-07" in k for k in failed)
    assert 3 <= len(failed) <= 12, len(failed)  # 15 pairs with the node, each fails with p = 0.5
    assert all(pairs[k].rc != 0 for k in failed)
    assert out.exit_code == 1  # a failed pair fails the check


def test_a_missing_hostfile_fails_with_the_shells_words(make_ctx):
    ctx = make_ctx(launcher_args("/etc/mpi/hostfile", MPIRUN, ARGS))
    out = dispatch.emulate(ctx)
    assert out.exit_code == 1 and "/etc/mpi/hostfile" in out.text()
