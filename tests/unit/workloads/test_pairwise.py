"""The per-pair bandwidth check as rendered: the launcher runs the check's script over the
hostfile with the category's own mpirun command, and the script really measures every pair
once, each host in one pair per step (run here with bash and a stand-in mpirun)."""

from __future__ import annotations

import itertools
import subprocess

import pytest

from nvcre.catalog.resolve import resolve_category
from nvcre.errors import UserError
from nvcre.measure.nccl import parse_nccl_log
from nvcre.measure.pairwise import parse_pair_lines
from nvcre.timefmt import parse_duration
from nvcre.workloads import pairwise
from nvcre.workloads.render import render_workload


def _r(key, platform="aws"):
    domain, variant = key.split("/")
    return resolve_category({"domain": domain, "variant": variant}, None, platform=platform, gpu_arch="h100")


def test_the_launcher_runs_the_check_with_the_categorys_mpirun_and_no_hostfile_flag():
    objs = render_workload(_r("communication/nccl-all-reduce"), name="w", namespace="ns", nodes=["a", "b", "c"],
                           job="j", group="r3-0", pairwise=True)
    launcher = next(o for o in objs if o["kind"] == "Job" and o["metadata"]["name"] == "w-launcher")
    args = launcher["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:5] == ["/bin/bash", "-c", pairwise.SCRIPT, "nvcre-pairwise", "/etc/mpi/hostfile"]
    assert args[5:8] == ["timeout", "3600", "/opt/amazon/openmpi/bin/mpirun"]
    assert "/opt/nccl-tests/build/all_reduce_perf" in args and "--hostfile" not in args
    plain = render_workload(_r("communication/nccl-all-reduce"), name="w", namespace="ns", nodes=["a", "b", "c"])
    plain_args = next(o for o in plain if o["metadata"]["name"] == "w-launcher")["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--hostfile" in plain_args and pairwise.SCRIPT not in plain_args


def test_only_nccl_mpi_workloads_on_the_native_adapter_can_run_it():
    assert pairwise.available(_r("communication/nccl-all-reduce"), "native")
    assert not pairwise.available(_r("communication/nccl-all-reduce"), "trainjob")
    assert not pairwise.available(_r("communication/nccl-loopback"), "native")  # per-node, no mpirun
    with pytest.raises(UserError, match="per-pair bandwidth check needs an nccl-tests MPI workload"):
        render_workload(_r("communication/nccl-loopback"), name="w", namespace="ns", nodes=["a", "b"], pairwise=True)


FAKE_MPIRUN = r"""#!/bin/bash
hosts=""; while [ $# -gt 0 ]; do case "$1" in -H) hosts=$2; shift 2;; *) shift;; esac; done
echo "$hosts $(date +%s%N)" >> "$LOG"
sleep 0.2
echo "$hosts $(date +%s%N)" >> "$LOG.end"
case "$hosts" in *h3:*) bw=150;; *) bw=380;; esac
case "$hosts" in h5:8,h6:8|h6:8,h5:8) exit 3;; esac
printf "%12d  %12d  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %6d  %7.2f  %6.2f  %6.2f  %6d\n" 1048576 262144 float sum -1 10.0 1.0 $bw 0 10.0 1.0 $((bw-1)) 0
echo "# Avg bus bandwidth    : $bw"
"""


def test_the_script_measures_every_pair_once_in_disjoint_steps(tmp_path):
    mpirun = tmp_path / "mpirun"
    mpirun.write_text(FAKE_MPIRUN)
    mpirun.chmod(0o755)
    hosts = [f"h{i}" for i in range(1, 8)]
    (tmp_path / "hostfile").write_text("".join(f"{h} slots=8\n" for h in hosts))
    log = tmp_path / "runs"
    argv = pairwise.launcher_args(str(tmp_path / "hostfile"), ["timeout", "60", str(mpirun)], ["-N", "8", "all_reduce_perf"])
    done = subprocess.run(argv, capture_output=True, text=True, env={"LOG": str(log), "PATH": "/usr/bin:/bin"}, timeout=60)
    pairs = parse_pair_lines(done.stdout)
    assert sorted(tuple(sorted((p.a, p.b))) for p in pairs) == list(itertools.combinations(hosts, 2))
    slow = {frozenset((p.a, p.b)) for p in pairs if p.busbw is not None and p.busbw < 300}
    assert slow == {frozenset(p) for p in itertools.combinations(hosts, 2) if "h3" in p}
    failed = [p for p in pairs if p.busbw is None]
    assert [(p.a, p.b, p.rc) for p in failed] in ([("h5", "h6", 3)], [("h6", "h5", 3)])
    assert done.returncode == 1  # a failed pair fails the check
    # the slowest pair's own output ends the log: the Job's figure is the slowest pair's
    assert max(r.out_of_place.bus_bw for r in parse_nccl_log(done.stdout).rows) == 150
    # each host runs in one pair at a time: runs that overlap in time never share a host
    starts = [line.split() for line in log.read_text().splitlines()]
    ends = [line.split() for line in (tmp_path / "runs.end").read_text().splitlines()]
    span = {h: (int(t), int(next(e for x, e in ends if x == h))) for h, t in starts}
    for (p, (s1, e1)), (q, (s2, e2)) in itertools.combinations(span.items(), 2):
        if s1 < e2 and s2 < e1:  # ran at the same time
            assert not ({x.split(":")[0] for x in p.split(",")} & {x.split(":")[0] for x in q.split(",")}), (p, q)


def test_steps_follow_the_schedule_and_scale_the_jobs_backstop():
    from nvcre.sim.fabric import FabricModel

    for n in range(2, 12):  # the script's ring is the circle method the fleet model schedules
        assert pairwise.steps(n) == len(FabricModel.round_robin([f"h{i}" for i in range(n)])), n
    assert pairwise.steps(64) == 63 and pairwise.steps(1) == 1
    assert pairwise.job_seconds(900, 64) == 63 * 900
    assert pairwise.job_seconds(24 * 3600, 256) == pairwise.MAX_JOB_SECONDS  # the API's longest duration
    assert pairwise.format_seconds(63 * 900) == "15h45m" and pairwise.format_seconds(90) == "1m30s"
    nodes = [f"n{i}" for i in range(64)]
    r = _r("communication/nccl-all-reduce")
    backstop = 2 * int(parse_duration(r.timeout_per_job))  # twice timeoutPerJob for one run
    for check, factor in ((False, 1), (True, 63)):
        objs = render_workload(r, name="w", namespace="ns", nodes=nodes, job="j", group="g", pairwise=check)
        deadlines = {o["metadata"]["name"]: o["spec"]["activeDeadlineSeconds"] for o in objs if o["kind"] == "Job"}
        assert deadlines == dict.fromkeys(("w-worker", "w-launcher"), min(backstop * factor, pairwise.MAX_JOB_SECONDS))
