"""A WorkloadRun keeps its pods' output: the Job's terminal write carries each pod's node,
exit code and bounded log tail, before the workload (and so its pods) is deleted, and
the report shows them with the nodes the run used."""

from __future__ import annotations

from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller import workload_state as ws
from nvcre.controller.context import Context, Settings, format_time
from nvcre.controller.reconcilers.job import reconcile_job
from nvcre.controller.reconcilers.workflow import reconcile_workflow
from nvcre.controller.reconcilers.workloadrun import reconcile_workloadrun
from nvcre.report.build import RunObjects, build_report
from nvcre.report.text import render_text
from nvcre.sim.fleet import FleetSpec, build_fleet

from fake_kube import FakeKube

API = "nvcre.nvidia.com/v1alpha1"
NOW = 1_800_000_000.0
AT = format_time(NOW)
RUN = {
    "apiVersion": API, "kind": "WorkloadRun", "metadata": {"name": "smoke", "namespace": "ns"},
    "spec": {"image": "nvcr.io/nvidia/pytorch:26.01-py3", "numNodes": 2,
             "framework": {"mpi": {"binary": "/usr/local/bin/all_reduce_perf_mpi", "args": ["-b", "8", "-e", "1G"]}}},
}


def _pod(job: str, name: str, role: str, node: str, log_lines: int) -> tuple[dict, str]:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "ns", "labels": {L.JOB: job, "nvcre.nvidia.com/role": role}},
           "spec": {"nodeName": node, "containers": [{"name": "main"}]},
           "status": {"phase": "Succeeded", "containerStatuses": [
               {"name": "main", "state": {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": AT}}}]}}
    return pod, "".join(f"{name} line {i}\n" for i in range(log_lines))


def test_the_terminal_write_keeps_every_pods_tail_before_the_cleanup():
    fleet = build_fleet(FleetSpec(nodes=2, racks=1))
    kube = FakeKube(fleet.nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: NOW)
    kube.add(RUN)
    reconcile_workloadrun(ctx, "ns", "smoke")
    reconcile_workflow(ctx, "ns", "smoke")
    reconcile_workflow(ctx, "ns", "smoke")
    job = next(n for k, n in kube.creates if k == "Job")
    assert kube.get(API, "Job", job, "ns")["metadata"]["labels"][L.WORKLOAD_RUN] == "smoke"
    reconcile_job(ctx, "ns", job)  # creates the workload
    nodes = [n["metadata"]["name"] for n in fleet.nodes]
    pods = [_pod(job, f"{job}-launcher", "launcher", nodes[0], 5000)]
    pods += [_pod(job, f"{job}-worker-{i}", "worker", n, 3) for i, n in enumerate(nodes)]
    for pod, text in pods:
        ctx.cache.put(pod)
        kube.logs[pod["metadata"]["name"]] = text
    ctx.cache.replace("Pod", [p for p, _ in pods])
    for (kind, ns, name), obj in list(kube.objects.items()):
        if kind == "batch/v1/Job":
            obj["status"] = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": AT}]}
    reconcile_job(ctx, "ns", job)

    st = kube.get(API, "Job", job, "ns")["status"]
    assert c.is_true(st["conditions"], c.SUCCEEDED), st["conditions"]
    logs = st["podLogs"]
    assert [x["podName"] for x in logs] == [f"{job}-launcher", f"{job}-worker-0", f"{job}-worker-1"]  # launcher first
    assert [x["nodeName"] for x in logs] == [nodes[0], nodes[0], nodes[1]]
    assert all(x["exitCode"] == 0 and x["reason"] == "Completed" for x in logs)
    launcher = logs[0]["tail"]
    assert launcher.endswith(f"{job}-launcher line 4999\n") and len(launcher.encode()) <= ws.POD_LOG_BYTES
    assert len(launcher.splitlines()) <= ws.POD_LOG_LINES
    assert logs[1]["tail"] == f"{job}-worker-0 line 0\n{job}-worker-0 line 1\n{job}-worker-0 line 2\n"
    assert not [k for k in kube.objects if k[0] == "batch/v1/Job"], "the workload was cleaned up after the write"

    # the report, after the pods are gone: the nodes it ran on and each pod's tail
    reconcile_workloadrun(ctx, "ns", "smoke")
    objects = RunObjects(kube.get(API, "WorkloadRun", "smoke", "ns"), [kube.get(API, "Workflow", "smoke", "ns")],
                         [kube.get(API, "Job", job, "ns")])
    category = build_report(objects).categories[0]
    assert [p.node_name for p in category.pod_logs] == [nodes[0], nodes[0], nodes[1]]
    text = render_text(build_report(objects), 120)
    assert f"Ran on:    2 nodes: {nodes[0]}, {nodes[1]}" in text
    assert f"{job}-launcher on {nodes[0]}, exit 0 (Completed)" in text and f"{job}-launcher line 4999" in text
    assert f"{job}-worker-1 line 2" in text


def test_a_certification_job_keeps_no_pod_logs():
    fleet = build_fleet(FleetSpec(nodes=1, racks=1))
    kube = FakeKube(fleet.nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: NOW)
    from nvcre.controller.reconcilers.certification import reconcile_certification

    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "cert", "namespace": "ns"},
              "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-loopback"}]}})
    reconcile_certification(ctx, "ns", "cert")
    wf = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf)
    reconcile_workflow(ctx, "ns", wf)
    job = next(n for k, n in kube.creates if k == "Job")
    reconcile_job(ctx, "ns", job)
    pod, text = _pod(job, f"{job}-0", "worker", fleet.nodes[0]["metadata"]["name"], 3)
    ctx.cache.replace("Pod", [pod])
    kube.logs[pod["metadata"]["name"]] = text
    for (kind, ns, name), obj in list(kube.objects.items()):
        if kind == "batch/v1/Job":
            obj["status"] = {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": AT}]}
    reconcile_job(ctx, "ns", job)
    st = kube.get(API, "Job", job, "ns")["status"]
    assert c.is_terminal(st["conditions"]) and "podLogs" not in st


def test_the_html_report_carries_the_pod_logs_too():
    from nvcre.report.model import CategoryReport, FailureLog, Report
    from nvcre.report.render import render

    logs = [FailureLog(pod_name="smoke-job-workload-launcher-x", node_name="gpu-node-01", exit_code=0, reason="Completed",
                       tail="# Avg bus bandwidth    : 412.3 <done>\n")]
    report = Report(kind="WorkloadRun", name="smoke", categories=[CategoryReport(domain="workloadrun", variant="smoke",
                                                                               pod_logs=logs)])
    html = render(report, "html")
    assert "<code>smoke-job-workload-launcher-x</code> on <code>gpu-node-01</code>, exit 0 (Completed)" in html
    assert "# Avg bus bandwidth    : 412.3 &lt;done&gt;" in html  # escaped


def _cert_job(nodes: int):
    fleet = build_fleet(FleetSpec(nodes=nodes, racks=1))
    kube = FakeKube(fleet.nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: NOW)
    from nvcre.controller.reconcilers.certification import reconcile_certification

    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "cert", "namespace": "ns"},
              "spec": {"target": {}, "categories": [{"domain": "communication", "variant": "nccl-loopback"}]}})
    reconcile_certification(ctx, "ns", "cert")
    wf = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf)
    reconcile_workflow(ctx, "ns", wf)
    job = next(n for k, n in kube.creates if k == "Job")
    reconcile_job(ctx, "ns", job)
    return fleet, kube, ctx, job


def test_a_failed_certification_job_keeps_its_nodes_own_pod_whole_lines():
    fleet, kube, ctx, job = _cert_job(1)
    node = fleet.nodes[0]["metadata"]["name"]
    pod, _ = _pod(job, f"{job}-0", "worker", node, 0)
    pod["status"] = {"phase": "Failed", "containerStatuses": [
        {"name": "main", "state": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": AT}}}]}
    ctx.cache.replace("Pod", [pod])
    # longer than the byte cap: the cap falls mid-line, and that fragment is not kept
    kube.logs[pod["metadata"]["name"]] = "".join(f"rank 0 step {i:05d}: NCCL WARN net_ib.cc completion error 12\n"
                                                 for i in range(150))
    for (kind, ns, name), obj in list(kube.objects.items()):
        if kind == "batch/v1/Job":
            obj["status"] = {"failed": 1, "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                                                          "lastTransitionTime": AT}]}
    reconcile_job(ctx, "ns", job)
    st = kube.get(API, "Job", job, "ns")["status"]
    assert c.is_true(st["conditions"], c.FAILED), st["conditions"]
    (log,) = st["podLogs"]
    assert (log["podName"], log["nodeName"], log["exitCode"]) == (f"{job}-0", node, 1)
    assert len(log["tail"].encode()) <= ws.POD_LOG_BYTES
    assert all(line.startswith("rank 0 step ") and line.endswith("error 12") for line in log["tail"].splitlines())
    assert log["tail"].endswith("step 00149: NCCL WARN net_ib.cc completion error 12\n")


def test_whole_line_tail():
    text = "".join(f"line {i:03d}\n" for i in range(100))
    assert ws.whole_line_tail(text, 200, 25) == "line 098\nline 099\n"  # 25 bytes would start mid "line 097"
    assert ws.whole_line_tail(text, 2, 1000) == "line 098\nline 099\n"
    assert ws.whole_line_tail("one long line without end", 10, 8) == " without end"[-8:]  # nothing whole: the cut stays
    assert ws.whole_line_tail("", 10, 8) == ""
