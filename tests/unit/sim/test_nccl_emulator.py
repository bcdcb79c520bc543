"""nccl-tests emulator: real format, fabric-model bandwidth, faults, MPI host handling."""

from __future__ import annotations

import re

import pytest

from nvcre.measure.nccl import parse_nccl_log
from nvcre.sim.emulators import dispatch, nccl_tests
from nvcre.sim.fabric import FabricModel, Member

# The LogProfile regex the reference ships for nccl-tests rows (out-of-place columns).
ROW = re.compile(r"^\s*(?P<size>\d+)\s+\d+\s+\w+\s+\w+\s+-?\d+\s+[\d.]+\s+(?P<algBW>[\d.]+)\s+(?P<busBW>[\d.]+)")
MPI = ["timeout", "3600", "mpirun", "-N", "8", "--allow-run-as-root", "-H",
       "gpu-node-01-worker,gpu-node-02-worker", "-x", "NCCL_DEBUG=INFO",
       "/usr/local/bin/all_reduce_perf_mpi", "-b", "8", "-e", "16G", "-f", "2", "-n", "20", "-N", "1"]


def _expected(ctx, names, op="all_reduce", size=16 << 30, ranks=8, **kw):
    fabric = FabricModel(ctx.faults)
    path = fabric.path([Member(ctx.fleet.facts[n], ranks) for n in names], **kw)
    return FabricModel.expected(op, size, ranks * len(names), path)[2]


def test_header_and_rows_match_the_real_layout(make_ctx, fixtures_dir):
    out = dispatch.emulate(make_ctx(MPI))
    text = out.text()
    real = (fixtures_dir / "nccl" / "nvcre-a100-allreduce-2node-k8s-debug.log").read_text().splitlines()
    real_headers = [line.split(" ", 1)[1] for line in real if "(elements)" in line or "#wrong" in line
                    or "out-of-place" in line]
    for header in real_headers:
        assert header in text.splitlines()
    assert "# Collective test starting: all_reduce_perf_mpi" in text
    assert "# Collective test concluded: all_reduce_perf_mpi" in text
    rows = [ROW.match(line) for line in text.splitlines() if ROW.match(line)]
    assert len(rows) == 32  # 8 B .. 16 GB with -f 2
    assert rows[-1]["size"] == str(16 << 30)
    assert out.exit_code == 0 and out.kind == "nccl-tests"


def test_rows_have_the_exact_column_widths(make_ctx):
    text = dispatch.emulate(make_ctx(MPI)).text()
    row = next(line for line in text.splitlines() if line.lstrip().startswith("8 "))
    # %12li  %12li  %8s  %6s  %6i then 2 x (  %7s  %6s  %6s  %6g)
    assert len(row) == 12 + 2 + 12 + 2 + 8 + 2 + 6 + 2 + 6 + 2 * (2 + 7 + 2 + 6 + 2 + 6 + 2 + 6)


def test_bus_bandwidth_matches_the_fabric_model(make_ctx):
    ctx = make_ctx(MPI)
    result = parse_nccl_log(dispatch.emulate(ctx).text())
    peak = max(row.out_of_place.bus_bw for row in result.rows)
    expected = _expected(ctx, ["gpu-node-01", "gpu-node-02"])
    assert expected == pytest.approx(384, rel=0.02)  # 8 x NDR at 99 %: the published 384-392 ceiling
    assert peak == pytest.approx(expected, rel=0.05)
    assert result.transports == ["IB"]
    assert result.ranks == 16


def test_degraded_nic_bounds_the_group(make_ctx):
    healthy = parse_nccl_log(dispatch.emulate(make_ctx(MPI)).text())
    degraded_ctx = make_ctx(MPI, faults=["degraded-nic:node=gpu-node-02,factor=0.5"])
    degraded = parse_nccl_log(dispatch.emulate(degraded_ctx).text())
    ratio = max(r.out_of_place.bus_bw for r in degraded.rows) / max(r.out_of_place.bus_bw for r in healthy.rows)
    assert ratio == pytest.approx(0.5, rel=0.05)


def test_intra_node_uses_nvlink(make_ctx):
    ctx = make_ctx(["all_reduce_perf", "-b", "1G", "-e", "16G", "-f", "2", "-g", "8"])
    result = parse_nccl_log(dispatch.emulate(ctx).text())
    assert result.ranks == 8
    assert max(r.out_of_place.bus_bw for r in result.rows) == pytest.approx(478, rel=0.05)


def test_single_rank_has_zero_busbw(make_ctx):
    result = parse_nccl_log(dispatch.emulate(make_ctx(["all_reduce_perf_mpi", "-b", "8", "-e", "1G", "-f", "2"])).text())
    assert all(r.out_of_place.bus_bw == 0 for r in result.rows)
    assert result.avg_bus_bandwidth == 0


@pytest.mark.parametrize("env", [{"NCCL_IB_DISABLE": "1"}, {"NCCL_NET": "Socket"}])
def test_socket_when_ib_is_disabled(make_ctx, env):
    name, value = next(iter(env.items()))
    ctx = make_ctx(MPI[:-11] + ["-x", f"{name}={value}"] + MPI[-11:])
    text = dispatch.emulate(ctx).text()
    assert "NCCL INFO Using network Socket" in text
    assert parse_nccl_log(text).transports == ["Socket"]


def test_socket_when_pods_lack_the_rdma_resource(make_ctx):
    text = dispatch.emulate(make_ctx(MPI, rdma=False)).text()
    assert "Using network Socket" in text
    assert "NET/IB : No device found." in text


def test_socket_fallback_fault(make_ctx):
    ctx = make_ctx(MPI, faults=["socket-fallback:node=gpu-node-02"])
    result = parse_nccl_log(dispatch.emulate(ctx).text())
    assert result.transports == ["Socket"]
    assert max(r.out_of_place.bus_bw for r in result.rows) < 20


def test_cycles_repeat_the_sweep(make_ctx):
    ctx = make_ctx(["all_gather_perf", "-b", "1M", "-e", "4M", "-f", "2", "-g", "8", "-N", "3", "-c", "0"])
    text = dispatch.emulate(ctx).text()
    rows = [line for line in text.splitlines() if ROW.match(line)]
    assert len(rows) == 9
    assert rows[0].split()[3] == "none"
    assert rows[0].rstrip().endswith("N/A")
    assert "validation: 0" in text


def test_step_bytes_and_dtype(make_ctx):
    ctx = make_ctx(["alltoall_perf", "-b", "1M", "-e", "3M", "-i", "1M", "-d", "uint8", "-g", "8"])
    rows = [line.split() for line in dispatch.emulate(ctx).text().splitlines() if ROW.match(line)]
    assert [int(r[0]) for r in rows] == [1 << 20, 2 << 20, 3 << 20]
    assert rows[0][2] == "uint8" and rows[0][1] == str((1 << 20) // 8)


def test_hostfile_from_a_mounted_file(make_ctx):
    argv = ["mpirun", "-N", "8", "--hostfile", "/etc/mpi/hostfile", "all_reduce_perf_mpi", "-b", "1G", "-e", "1G"]
    files = {"/etc/mpi/hostfile": "gpu-node-01-worker.svc.ns.svc slots=8\ngpu-node-03-worker slots=8\n"}
    out = dispatch.emulate(make_ctx(argv, files=files))
    assert out.hosts == ("gpu-node-01", "gpu-node-03")
    assert parse_nccl_log(out.text()).ranks == 16


def test_unknown_host_fails_like_mpirun(make_ctx):
    argv = ["mpirun", "-H", "nowhere", "all_reduce_perf_mpi"]
    out = dispatch.emulate(make_ctx(argv))
    assert out.exit_code != 0
    assert "Could not resolve hostname nowhere" in out.text()


def test_gpu_off_bus_kills_the_run_midway(make_ctx):
    ctx = make_ctx(MPI, faults=["gpu-off-bus:node=gpu-node-02,gpu=3,atFraction=0.5"])
    out = dispatch.emulate(ctx)
    assert out.exit_code != 0
    text = out.text()
    assert "NCCL WARN Cuda failure" in text
    assert "mpirun detected that one or more processes exited with non-zero status" in text
    effects = [line.effect for line in out.lines if line.effect]
    assert effects and effects[0].kind == "gpu-off-bus" and effects[0].node == "gpu-node-02"
    result = parse_nccl_log(text)
    assert result.errors and not result.concluded


def test_gpu_already_gone_fails_at_start_without_firing_again(make_ctx):
    ctx = make_ctx(MPI, faults=["gpu-off-bus:node=gpu-node-02,gpu=3"], off_bus=frozenset({"gpu-node-02"}))
    out = dispatch.emulate(ctx)
    assert out.exit_code != 0 and "Test CUDA failure" in out.text()
    assert not [line for line in out.lines if line.effect]
    assert not parse_nccl_log(out.text()).rows
    # a run that does not use the lost GPU is unaffected
    fine = make_ctx(MPI[:4] + ["2"] + MPI[5:], faults=["gpu-off-bus:node=gpu-node-02,gpu=3"],
                    off_bus=frozenset({"gpu-node-02"}))
    assert dispatch.emulate(fine).exit_code == 0


def test_flaky_node_fails_sometimes_and_is_seeded(make_ctx):
    outcomes = []
    for restart in range(20):
        ctx = make_ctx(MPI, faults=["flaky-node:node=gpu-node-01,probability=0.5"], restart=restart)
        outcomes.append(dispatch.emulate(ctx).exit_code)
    assert 0 in outcomes and any(code != 0 for code in outcomes)
    again = [dispatch.emulate(make_ctx(MPI, faults=["flaky-node:node=gpu-node-01,probability=0.5"], restart=r)).exit_code
             for r in range(20)]
    assert again == outcomes


def test_bad_link_and_rack_uplink(make_ctx):
    ctx = make_ctx(MPI, faults=["bad-link:nodes=gpu-node-01+gpu-node-02,factor=0.25"])
    assert _expected(ctx, ["gpu-node-01", "gpu-node-02"]) == pytest.approx(384 * 0.25, rel=0.03)
    assert _expected(ctx, ["gpu-node-01", "gpu-node-03"]) == pytest.approx(384, rel=0.03)
    ctx = make_ctx(MPI, faults=["degraded-rack:rack=rack-2,factor=0.5"])
    assert _expected(ctx, ["gpu-node-03", "gpu-node-04"]) == pytest.approx(384, rel=0.03)  # inside rack-2
    assert _expected(ctx, ["gpu-node-01", "gpu-node-03"]) == pytest.approx(192, rel=0.03)  # leaves it


def test_gb200_mnnvl_inside_a_clique_and_network_across(make_ctx):
    ctx = make_ctx(MPI, gpu="gb200", nodes=4, racks=2)
    assert _expected(ctx, ["gpu-node-01", "gpu-node-02"], ranks=4) == pytest.approx(885, rel=0.03)
    assert _expected(ctx, ["gpu-node-01", "gpu-node-03"], ranks=4) == pytest.approx(192, rel=0.03)
    assert _expected(ctx, ["gpu-node-01", "gpu-node-02"], ranks=4, mnnvl=False) == pytest.approx(192, rel=0.03)


def test_slow_gpu_slows_nvlink(make_ctx):
    ctx = make_ctx(["all_reduce_perf", "-b", "16G", "-e", "16G", "-g", "8"], faults=["slow-gpu:node=gpu-node-01,factor=0.5"])
    result = parse_nccl_log(dispatch.emulate(ctx).text())
    assert result.rows[0].out_of_place.bus_bw == pytest.approx(239, rel=0.05)


def test_format_numbers_like_nccl_tests():
    assert nccl_tests._fmt(387.62, 7) == " 387.62"
    assert nccl_tests._fmt(11832.4, 7) == "11832.4"
    assert nccl_tests._fmt(2649049, 7) == "2649049"
    assert nccl_tests._fmt(1846.1, 6) == "1846.1"
    assert nccl_tests._fmt(13888, 6) == " 13888"
    assert nccl_tests._fmt(6e6, 6) == " 6e+06"
    assert nccl_tests._fmt(0.0, 6) == "  0.00"


def test_bad_flag_value_fails(make_ctx):
    out = dispatch.emulate(make_ctx(["all_reduce_perf", "-d", "complex128"]))
    assert out.exit_code == 1


def test_pairwise_check_follows_the_fabric_model_and_faults(make_ctx):
    # one degraded NIC slows every pair that holds it; a bad link only its own pair
    ctx = make_ctx(MPI, nodes=6, racks=2, faults=["degraded-nic:node=gpu-node-02,factor=0.5",
                                                  "bad-link:nodes=gpu-node-04+gpu-node-05,factor=0.4"])
    fabric = FabricModel(ctx.faults)
    names = sorted(ctx.fleet.names)
    pairs = fabric.pairwise([Member(ctx.fleet.facts[n], 8) for n in names], mnnvl=False)
    assert len(pairs) == len(names) * (len(names) - 1) // 2
    base = max(pairs.values())
    slow = {p for p, v in pairs.items() if v < 0.9 * base}
    assert {p for p in slow if "gpu-node-02" in p} == {p for p in pairs if "gpu-node-02" in p}
    assert ("gpu-node-04", "gpu-node-05") in slow
    assert slow == {p for p in pairs if "gpu-node-02" in p} | {("gpu-node-04", "gpu-node-05")}
    steps = FabricModel.round_robin(names)
    assert len(steps) == len(names) - 1
    seen = [frozenset(p) for step in steps for p in step]
    assert len(seen) == len(set(seen)) == len(pairs)
    assert all(len({n for p in step for n in p}) == 2 * len(step) for step in steps)  # disjoint per step
