"""The Job reconciler end to end against an in-memory API, its watches synced.

A four-node full-scale all-reduce: the Job creates its MPI workload, then each pass
reads pods, batch Jobs and Nodes from the watch cache (no LIST), and the verdict of a
launcher that failed while workers were still Pending reads as scheduling.
"""

from __future__ import annotations

import copy

import pytest

from nvcre.controller import conditions as c
from nvcre.controller.reconcilers.certification import reconcile_certification
from nvcre.controller.context import Context, Settings, format_time
from nvcre.controller.reconcilers.job import reconcile_job
from nvcre.controller.reconcilers.workflow import reconcile_workflow
from nvcre.sim.fleet import FleetSpec, build_fleet

from fake_kube import FakeKube

API = "nvcre.nvidia.com/v1alpha1"
NOW = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def world():
    fleet = build_fleet(FleetSpec(nodes=4, racks=1))
    kube = FakeKube(fleet.nodes)
    clock = Clock()
    ctx = Context(kube=kube, settings=Settings(), clock=clock)
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "cert", "namespace": "ns"},
              "spec": {"target": {}, "categories": [
                  {"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "full-scale"}}]}})
    reconcile_certification(ctx, "ns", "cert")
    wf = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf)
    reconcile_workflow(ctx, "ns", wf)
    job = next(n for k, n in kube.creates if k == "Job")
    reconcile_job(ctx, "ns", job)  # creates the workload
    # the watches have delivered their first complete lists
    ctx.cache.replace("Node", [o for (k, _, _), o in kube.objects.items() if k == "v1/Node"])
    ctx.cache.replace("batch.Job", [o for (k, _, _), o in kube.objects.items() if k == "batch/v1/Job"])
    ctx.cache.replace("Pod", [])
    return kube, ctx, clock, job, [n["metadata"]["name"] for n in fleet.nodes]


def _batch(kube, ctx, job: str, role: str) -> dict:
    obj = kube.objects[("batch/v1/Job", "ns", f"{job}-workload-{role}")]
    return obj


def _set_batch_status(kube, ctx, job: str, role: str, status: dict) -> None:
    obj = _batch(kube, ctx, job, role)
    obj["status"] = status
    ctx.cache.put(dict(obj))


def _pod(job: str, name: str, role: str, *, node: str | None, phase: str, state: dict | None = None,
         scheduled: dict | None = None) -> dict:
    status: dict = {"phase": phase, "conditions": []}
    if scheduled:
        status["conditions"].append(scheduled)
    if state is not None:
        status["containerStatuses"] = [{"name": "main", "state": state}]
    spec: dict = {"restartPolicy": "Never",  # as the MPI adapters render launcher and workers
                  "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": "8"}} if role == "worker" else {}}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "labels": {"nvcre.nvidia.com/job": job, "nvcre.nvidia.com/role": role}},
            "spec": spec, "status": status}


FAILED_AT = format_time(NOW)


def _launcher_failed(kube, ctx, job: str) -> None:
    _set_batch_status(kube, ctx, job, "launcher", {"failed": 1, "conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit",
         "lastTransitionTime": FAILED_AT}]})


def _job(kube, name):
    return kube.get(API, "Job", name, "ns")


def test_a_pass_on_synced_watches_lists_nothing(world):
    kube, ctx, clock, job, nodes = world
    ctx.cache.put(_pod(job, f"{job}-l", "launcher", node=nodes[0], phase="Running", state={"running": {"startedAt": FAILED_AT}}))
    for i, n in enumerate(nodes):
        ctx.cache.put(_pod(job, f"{job}-w{i}", "worker", node=n, phase="Running", state={"running": {"startedAt": FAILED_AT}}))
    _set_batch_status(kube, ctx, job, "worker", {"active": 4})
    _set_batch_status(kube, ctx, job, "launcher", {"active": 1})
    kube.lists.clear()
    delay = reconcile_job(ctx, "ns", job)
    assert kube.lists == []
    st = _job(kube, job)["status"]
    assert c.reason_of(st["conditions"], c.IN_PROGRESS) == "WorkloadRunning"
    assert st["nodesRan"] == sorted(nodes)
    assert delay == pytest.approx(3600.0)  # the next clock deadline (timeoutPerJob 1h from the start), no cap


def test_launcher_failing_while_workers_pending_reads_as_scheduling(world):
    kube, ctx, clock, job, nodes = world
    unschedulable = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/4 nodes are available: 4 Insufficient hugepages-2Mi."}
    ctx.cache.put(_pod(job, f"{job}-l", "launcher", node=nodes[0], phase="Failed",
                       state={"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": FAILED_AT}}))
    ctx.cache.put(_pod(job, f"{job}-w0", "worker", node=nodes[0], phase="Running", state={"running": {"startedAt": FAILED_AT}}))
    for i in (1, 2, 3):
        ctx.cache.put(_pod(job, f"{job}-w{i}", "worker", node=None, phase="Pending", scheduled=unschedulable))
    _launcher_failed(kube, ctx, job)
    clock.now += 5
    # a worker still runs: the verdict waits for it (not before the last pod ends), with no
    # fixed re-look: its end comes as a pod event, the settle deadline (30 s after the end) is the timer...
    assert reconcile_job(ctx, "ns", job) == pytest.approx(25.0)
    assert not c.is_terminal(_job(kube, job)["status"]["conditions"])
    # ...until it has ended
    ctx.cache.put(_pod(job, f"{job}-w0", "worker", node=nodes[0], phase="Succeeded",
                       state={"terminated": {"exitCode": 0, "finishedAt": FAILED_AT}}))
    clock.now += 1
    reconcile_job(ctx, "ns", job)
    st = _job(kube, job)["status"]
    assert c.reason_of(st["conditions"], c.FAILED) == "WorkloadSchedulingBlocked", st["conditions"]
    assert "3 of 4 workers had not started" in c.message_of(st["conditions"], c.FAILED)
    assert not st.get("failedNodes")


def test_launcher_failing_after_all_workers_ran_blames_the_group(world):
    kube, ctx, clock, job, nodes = world
    ctx.cache.put(_pod(job, f"{job}-l", "launcher", node=nodes[0], phase="Failed",
                       state={"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": FAILED_AT}}))
    for i, n in enumerate(nodes):
        ctx.cache.put(_pod(job, f"{job}-w{i}", "worker", node=n, phase="Succeeded",
                           state={"terminated": {"exitCode": 0, "finishedAt": FAILED_AT}}))
    _launcher_failed(kube, ctx, job)
    reconcile_job(ctx, "ns", job)
    st = _job(kube, job)["status"]
    assert c.reason_of(st["conditions"], c.FAILED) == "WorkloadFailed"
    assert sorted(n["name"] for n in st["failedNodes"]) == sorted(nodes)


def test_the_verdict_comes_in_the_pass_that_sees_the_last_container_end(world):
    """A kubelet posts a container's end before the pod's phase: the verdict does not wait for
    the phase update (one more status round trip per decision at fleet scale)."""
    kube, ctx, clock, job, nodes = world
    ctx.cache.put(_pod(job, f"{job}-l", "launcher", node=nodes[0], phase="Failed",
                       state={"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": FAILED_AT}}))
    for i, n in enumerate(nodes):  # sshd stopped by the launcher's end; the phase update still on its way
        ctx.cache.put(_pod(job, f"{job}-w{i}", "worker", node=n, phase="Running",
                           state={"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": FAILED_AT}}))
    _launcher_failed(kube, ctx, job)
    assert reconcile_job(ctx, "ns", job) is None
    st = _job(kube, job)["status"]
    assert c.reason_of(st["conditions"], c.FAILED) == "WorkloadFailed", st["conditions"]
    assert sorted(n["name"] for n in st["failedNodes"]) == sorted(nodes)


def test_a_failed_jobs_evidence_is_read_at_the_same_time(world):
    """The failure log, the launcher log and the pods' tails overlap: the verdict waits for the
    slowest read, not for their sum."""
    import threading
    import time

    kube, ctx, clock, job, nodes = world
    ctx.cache.put(_pod(job, f"{job}-l", "launcher", node=nodes[0], phase="Failed",
                       state={"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": FAILED_AT}}))
    for i, n in enumerate(nodes):
        ctx.cache.put(_pod(job, f"{job}-w{i}", "worker", node=n, phase="Succeeded",
                           state={"terminated": {"exitCode": 0, "finishedAt": FAILED_AT}}))
    _launcher_failed(kube, ctx, job)
    inner, active, peak, lock = kube.pod_log, [0], [0], threading.Lock()

    def slow_log(*args, **kwargs):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.2)
        with lock:
            active[0] -= 1
        return inner(*args, **kwargs)

    kube.pod_log = slow_log
    reconcile_job(ctx, "ns", job)
    assert c.reason_of(_job(kube, job)["status"]["conditions"], c.FAILED) == "WorkloadFailed"
    assert len(_job(kube, job)["status"]["podLogs"]) == 5  # the launcher and four workers
    assert peak[0] >= 5, f"at most {peak[0]} log reads at once"


def test_a_worker_that_never_ends_holds_the_verdict_only_for_the_settle_time(world):
    kube, ctx, clock, job, nodes = world
    ctx.cache.put(_pod(job, f"{job}-l", "launcher", node=nodes[0], phase="Failed",
                       state={"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": FAILED_AT}}))
    for i, n in enumerate(nodes):
        ctx.cache.put(_pod(job, f"{job}-w{i}", "worker", node=n, phase="Running", state={"running": {"startedAt": FAILED_AT}}))
    _launcher_failed(kube, ctx, job)
    reconcile_job(ctx, "ns", job)
    assert not c.is_terminal(_job(kube, job)["status"]["conditions"])
    clock.now += 31
    reconcile_job(ctx, "ns", job)
    assert c.reason_of(_job(kube, job)["status"]["conditions"], c.FAILED) == "WorkloadFailed"


def test_ended_pods_logs_are_read_while_the_verdict_waits_and_not_again(world):
    """The evidence of pods that have ended is read while the verdict waits for the last
    ones (``ended_logs``): the terminal pass reads only what ended since, and the memo goes
    with the Job's other memos once it is terminal."""
    kube, ctx, clock, job, nodes = world
    launcher = f"{job}-l"
    kube.logs[launcher] = "launcher: worker 3 lost its GPU\n"
    kube.logs.update({f"{job}-w{i}": f"rank {i} done\n" for i in range(4)})
    ctx.cache.put(_pod(job, launcher, "launcher", node=nodes[0], phase="Failed",
                       state={"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": FAILED_AT}}))
    for i, n in enumerate(nodes[:3]):
        ctx.cache.put(_pod(job, f"{job}-w{i}", "worker", node=n, phase="Succeeded",
                           state={"terminated": {"exitCode": 0, "finishedAt": FAILED_AT}}))
    ctx.cache.put(_pod(job, f"{job}-w3", "worker", node=nodes[3], phase="Running", state={"running": {"startedAt": FAILED_AT}}))
    _launcher_failed(kube, ctx, job)
    kube.log_reads.clear()
    assert reconcile_job(ctx, "ns", job) is not None  # waits for w3
    early = list(kube.log_reads)
    assert launcher in early and f"{job}-w0" in early and f"{job}-w3" not in early, early
    ctx.cache.put(_pod(job, f"{job}-w3", "worker", node=nodes[3], phase="Succeeded",
                       state={"terminated": {"exitCode": 0, "finishedAt": FAILED_AT}}))
    clock.now += 1
    kube.log_reads.clear()
    reconcile_job(ctx, "ns", job)
    st = _job(kube, job)["status"]
    assert c.reason_of(st["conditions"], c.FAILED) == "WorkloadFailed"
    assert kube.log_reads == [f"{job}-w3"], kube.log_reads  # only the pod that ended since
    assert "lost its GPU" in st["failureLog"]["tail"]  # the early read is the evidence
    assert {e["podName"] for e in st["podLogs"]} == {launcher} | {f"{job}-w{i}" for i in range(4)}
    assert len(ctx.memos.ended_logs) == 0  # dropped with the terminal Job's memos


def test_a_running_pods_log_is_never_served_from_memory(world):
    from nvcre.controller import ended_logs

    kube, ctx, clock, job, nodes = world
    body = _job(kube, job)
    running = _pod(job, f"{job}-w0", "worker", node=nodes[0], phase="Running", state={"running": {"startedAt": FAILED_AT}})
    kube.logs[f"{job}-w0"] = "step 1"
    assert ended_logs.pod_log(ctx, body, running, tail_lines=10) == "step 1"
    kube.logs[f"{job}-w0"] = "step 2"
    assert ended_logs.pod_log(ctx, body, running, tail_lines=10) == "step 2"
    ended = _pod(job, f"{job}-w0", "worker", node=nodes[0], phase="Succeeded", state={"terminated": {"exitCode": 0}})
    assert ended_logs.pod_log(ctx, body, ended, tail_lines=10) == "step 2"
    kube.logs[f"{job}-w0"] = "rotated away"
    assert ended_logs.pod_log(ctx, body, ended, tail_lines=10) == "step 2"  # from memory
    assert ended_logs.pod_log(ctx, body, ended, tail_lines=20) == "rotated away"  # another read is another key


def test_a_health_detector_reads_the_cached_node(world):
    kube, ctx, clock, job, nodes = world
    ctx.cache.put(_pod(job, f"{job}-l", "launcher", node=nodes[0], phase="Running", state={"running": {"startedAt": FAILED_AT}}))
    _set_batch_status(kube, ctx, job, "launcher", {"active": 1})
    node = dict(ctx.cache.get("Node", "", nodes[2]))
    node["spec"] = {**(node.get("spec") or {}), "unschedulable": True}
    ctx.cache.put(node)
    kube.lists.clear()
    reconcile_job(ctx, "ns", job)
    assert kube.lists == []
    st = _job(kube, job)["status"]
    assert [n["name"] for n in st["failedNodes"]] == [nodes[2]]
    assert c.is_true(st["conditions"], c.HARDWARE_FAILED)


def test_a_terminal_job_forgets_its_memos(world):
    kube, ctx, clock, job, nodes = world
    uid = _job(kube, job)["metadata"]["uid"]
    ctx.memos.stall_checked.put(uid, NOW)
    ctx.placements[("ns", job)] = {"p": {}}
    ctx.cache.put(_pod(job, f"{job}-l", "launcher", node=nodes[0], phase="Succeeded",
                       state={"terminated": {"exitCode": 0, "finishedAt": FAILED_AT}}))
    _set_batch_status(kube, ctx, job, "launcher", {"succeeded": 1, "conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": FAILED_AT}]})
    reconcile_job(ctx, "ns", job)
    assert c.is_terminal(_job(kube, job)["status"]["conditions"])
    assert ctx.memos.stall_checked.get(uid) is None and ("ns", job) not in ctx.placements


def test_a_crash_between_the_verdict_and_the_freeze_is_repaired_before_cleanup(world, fixtures_dir):
    """Killed right after the terminal write: on restart the terminal Job freezes its
    measurement from the logs (still there) before it deletes the workload."""
    kube, ctx, clock, job, nodes = world
    launcher = f"{job}-l"
    kube.logs[launcher] = (fixtures_dir / "nccl" / "gcp-a3mega-h100-allreduce-2node-16gpu.txt").read_text()
    ctx.cache.put(_pod(job, launcher, "launcher", node=nodes[0], phase="Succeeded",
                       state={"terminated": {"exitCode": 0, "finishedAt": FAILED_AT}}))
    _set_batch_status(kube, ctx, job, "launcher", {"succeeded": 1, "conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": FAILED_AT}]})
    workload = dict(_batch(kube, ctx, job, "launcher"))
    reconcile_job(ctx, "ns", job)
    assert c.is_true(_job(kube, job)["status"]["conditions"], c.SUCCEEDED)
    bm = next(o for (k, _, _), o in kube.objects.items() if k == f"{API}/BandwidthMeasurement")
    assert bm["status"]["phase"] == "Complete" and bm["status"]["results"]
    # the crash: the verdict is stored, the freeze and the cleanup never happened
    bm.pop("status")
    kube.objects[("batch/v1/Job", "ns", f"{job}-workload-launcher")] = workload
    ctx.cache.put(dict(bm, apiVersion=API, kind="BandwidthMeasurement"))
    reconcile_job(ctx, "ns", job)
    bm = kube.get(API, "BandwidthMeasurement", bm["metadata"]["name"], "ns")
    assert bm["status"]["phase"] == "Complete" and bm["status"]["results"], bm.get("status")
    assert c.is_true(bm["status"]["conditions"], "Complete")
    assert ("batch/v1/Job", "ns", f"{job}-workload-launcher") not in kube.objects  # and then the cleanup


def test_an_object_deleted_while_the_watch_was_away_leaves_the_cache(world):
    """kopf's relist after 410 sends no DELETED: the reconciler that finds it gone drops it."""
    kube, ctx, clock, job, nodes = world
    ghost = {"apiVersion": API, "kind": "Job", "metadata": {"name": "ghost", "namespace": "ns", "uid": "u-ghost"},
             "spec": {}, "status": {}}
    ctx.cache.put(ghost)
    assert ctx.cache.get("Job", "ns", "ghost") is not None
    assert reconcile_job(ctx, "ns", "ghost") is None
    assert ctx.cache.get("Job", "ns", "ghost") is None
    assert all(o["metadata"]["name"] != "ghost" for o in ctx.cache.of_kind("Job"))


def _finish_with_log(kube, ctx, job: str, text: str) -> dict:
    launcher = f"{job}-l"
    kube.logs[launcher] = text
    ctx.cache.put(_pod(job, launcher, "launcher", node=None, phase="Succeeded",
                       state={"terminated": {"exitCode": 0, "finishedAt": FAILED_AT}}))
    _set_batch_status(kube, ctx, job, "launcher", {"succeeded": 1, "conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": FAILED_AT}]})
    for _ in range(3):  # a wedge would leave it non-terminal however often it is reconciled
        reconcile_job(ctx, "ns", job)
    return _job(kube, job)


NCCL_HEADER = ("# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20\n"
               "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
               "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
ROW = "{size:>12} {count:>13}     float     sum      -1    123.0    {bw}    {bw}      0    122.7    {bw}    {bw}      0\n"


@pytest.mark.parametrize("hostile, line", [
    (ROW.format(size=8388608, count=2097152, bw="1e999"), 4),
    ("\x00\xff\x1b[31m\ufffd" * 40 + " 8388608 2097152 float sum -1 \x00 1.0\n", 4),
    ("    8388608       2097152     float     sum      -1    " + "9" * 1_000_000 + "\n", 4),
])
def test_a_hostile_launcher_log_ends_the_job_with_a_measurement_error_naming_the_line(world, hostile, line):
    """Issue 13: one `1e999` row wedged a Job in WorkloadPending; binary garbage and a 1 MB
    line are the same class. The Job must reach a terminal state and say which line."""
    kube, ctx, clock, job, nodes = world
    obj = _finish_with_log(kube, ctx, job, NCCL_HEADER + hostile)
    conditions = obj["status"]["conditions"]
    assert c.is_terminal(conditions), conditions
    bm = next(o for (k, _, _), o in kube.objects.items() if k == f"{API}/BandwidthMeasurement")
    said = " ".join(str(x.get("message", "")) for x in conditions + bm["status"].get("conditions", []))
    said += " " + str(bm["status"].get("message", ""))
    assert f"line {line}" in said, (said[:2000], bm["status"])


def test_hostile_rows_among_good_ones_are_named_and_the_good_ones_measured(world):
    kube, ctx, clock, job, nodes = world
    good = "".join(ROW.format(size=8 << i, count=2 << i, bw="410.50") for i in range(20, 24))
    text = NCCL_HEADER + good + ROW.format(size=8 << 24, count=2 << 24, bw="1e999") + "\x00\xff garbage\n"
    obj = _finish_with_log(kube, ctx, job, text)
    assert c.is_terminal(obj["status"]["conditions"])
    bm = next(o for (k, _, _), o in kube.objects.items() if k == f"{API}/BandwidthMeasurement")
    assert bm["status"]["results"], bm["status"]
    assert "line 8" in str(bm["status"]), bm["status"]


def test_thresholds_waiting_for_an_unreadable_log_retry_with_backoff_up_to_the_timeout(world, fixtures_dir):
    """Succeeded, thresholds set, the launcher log not readable (the kubelet did not answer):
    no fixed 5 s re-look, but ``Retry`` (the key's backoff) capped by what is left of
    measurementTimeout, the last try landing on the deadline; a readable log decides it."""
    import time

    from nvcre.controller.runtime.queue import RETRY_MAX_S, Retry

    kube, ctx, clock, job, nodes = world
    clock.now = float(int(time.time()))  # condition times are stamped from the wall clock, in seconds
    spec = kube.objects[(f"{API}/Job", "ns", job)]["spec"]
    spec["thresholds"] = {"busBandwidthGBps": "value >= 1"}
    spec["measurementTimeout"] = "2m"
    launcher = f"{job}-l"
    ctx.cache.put(_pod(job, launcher, "launcher", node=nodes[0], phase="Succeeded",
                       state={"terminated": {"exitCode": 0, "finishedAt": FAILED_AT}}))
    _set_batch_status(kube, ctx, job, "launcher", {"succeeded": 1, "conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": FAILED_AT}]})
    with pytest.raises(Retry) as raised:  # the terminal pass: Succeeded written, the verdict pending
        reconcile_job(ctx, "ns", job)
    assert c.is_true(_job(kube, job)["status"]["conditions"], c.SUCCEEDED)
    assert raised.value.cap == RETRY_MAX_S
    clock.now += 100
    with pytest.raises(Retry) as raised:  # a later look: 20 s left, so no backoff step goes past it
        reconcile_job(ctx, "ns", job)
    assert raised.value.cap == pytest.approx(20.0, abs=1.0)  # the stamp is whole seconds of the wall clock
    assert c.find(_job(kube, job)["status"]["conditions"], c.VALIDATION_FAILED) is None
    kube.logs[launcher] = (fixtures_dir / "nccl" / "gcp-a3mega-h100-allreduce-2node-16gpu.txt").read_text()
    assert reconcile_job(ctx, "ns", job) is None
    conds = _job(kube, job)["status"]["conditions"]
    assert c.find(conds, c.VALIDATION_FAILED)["reason"] == "ThresholdsMet", conds


def test_thresholds_without_data_fail_at_the_timeout(world):
    import time

    kube, ctx, clock, job, nodes = world
    clock.now = float(int(time.time()))  # condition times are stamped from the wall clock, in seconds
    spec = kube.objects[(f"{API}/Job", "ns", job)]["spec"]
    spec["thresholds"] = {"busBandwidthGBps": "value >= 1"}
    spec["measurementTimeout"] = "2m"
    ctx.cache.put(_pod(job, f"{job}-l", "launcher", node=nodes[0], phase="Succeeded",
                       state={"terminated": {"exitCode": 0, "finishedAt": FAILED_AT}}))
    _set_batch_status(kube, ctx, job, "launcher", {"succeeded": 1, "conditions": [
        {"type": "Complete", "status": "True", "lastTransitionTime": FAILED_AT}]})
    from nvcre.controller.runtime.queue import Retry

    with pytest.raises(Retry):
        reconcile_job(ctx, "ns", job)
    # the wait began at a wall-clock stamp (whole seconds) that can fall a second or two after
    # clock.now on a loaded host: step past the 2m with that slack
    clock.now += 123
    assert reconcile_job(ctx, "ns", job) is None
    conds = _job(kube, job)["status"]["conditions"]
    assert c.find(conds, c.VALIDATION_FAILED)["reason"] == "MeasurementTimeout", conds


def test_creating_the_workload_sets_no_timer(world):
    """The workloadRef write and the created objects' watch events bring the next pass: the
    create pass asks for no fixed re-look (it was ``poll_seconds``, 10 s)."""
    kube, ctx, clock, job, nodes = world
    kube.objects[(f"{API}/Job", "ns", job)]["status"].pop("workloadRef")
    ctx.cache.put(copy.deepcopy(kube.objects[(f"{API}/Job", "ns", job)]))  # as the watch delivers the change
    assert reconcile_job(ctx, "ns", job) is None  # adopts the objects the fixture's pass made
    st = _job(kube, job)["status"]
    assert st["workloadRef"] and c.reason_of(st["conditions"], c.IN_PROGRESS) == "WorkloadAdopted"


def test_a_running_job_is_read_from_the_cache_and_a_ghost_leaves_it(world):
    """A running Job's pass reads the watch cache (no GET of a large object per pod event);
    a cached running Job deleted while the watch was away is dropped at its first write."""
    kube, ctx, clock, job, nodes = world
    ctx.cache.put(copy.deepcopy(kube.objects[(f"{API}/Job", "ns", job)]))
    read_live = []
    real_get = kube.get
    kube.get = lambda api, kind, *a, **kw: read_live.append((api, kind)) or real_get(api, kind, *a, **kw)
    reconcile_job(ctx, "ns", job)
    assert (API, "Job") not in read_live
    kube.get = real_get
    ghost = copy.deepcopy(kube.objects.pop((f"{API}/Job", "ns", job)))
    ctx.cache.put(ghost)
    reconcile_job(ctx, "ns", job)
    assert ctx.cache.get("Job", "ns", job) is None


def test_a_pass_reads_only_the_workload_objects_that_have_a_phase():
    from nvcre.controller.reconcilers.job import phase_objects

    mpi = [{"apiVersion": "v1", "kind": "Secret"}, {"apiVersion": "v1", "kind": "Service"},
           {"apiVersion": "v1", "kind": "ConfigMap"}, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "w"}},
           {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "l"}}]
    assert [o["kind"] for o in phase_objects(mpi)] == ["Job", "Job"]
    train = [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob"}, {"apiVersion": "v1", "kind": "ConfigMap"}]
    assert [o["kind"] for o in phase_objects(train)] == ["TrainJob"]
    odd = [{"apiVersion": "v1", "kind": "ConfigMap"}]  # nothing with a phase: every object is looked at, as before
    assert phase_objects(odd) == odd
