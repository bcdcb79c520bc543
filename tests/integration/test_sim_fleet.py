"""The simulated fleet under the real control plane: nodes, pods, logs, scheduling, faults.

Everything above the kubelet is real: the API server proxies ``kubectl logs`` to the
fake kubelet over verified TLS, the scheduler places pods, the Job controller runs
the native adapter's Jobs.
"""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from nvcre.catalog.resolve import resolve_category
from nvcre.workloads.render import render_workload
from nvcre.measure.nccl import parse_nccl_log
from nvcre.testbed.waiting import wait_until


def _pod(name, command, *, node=None, gpus=0, restart="Never", selector=None):
    container = {"name": "main", "image": "busybox:1.36", "command": command}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec = {"restartPolicy": restart, "containers": [container], "terminationGracePeriodSeconds": 5}
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if selector:
        spec["nodeSelector"] = selector
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _apply(kubectl, namespace, *objects):
    kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))


def _pod_obj(kubectl, namespace, name):
    return json.loads(kubectl("get", "pod", "-n", namespace, name, "-o", "json").stdout)


def _phase(kubectl, namespace, name):
    return _pod_obj(kubectl, namespace, name).get("status", {}).get("phase")


def test_nodes_register_ready_and_renew_leases(fleet, kubectl):
    handle = fleet(3, racks=1)
    nodes = json.loads(kubectl("get", "nodes", "-l", f"sim.nvcre.nvidia.com/fleet={handle.config.fleet_name}",
                               "-o", "json").stdout)["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    for node in nodes:
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"][0]
        assert ready["status"] == "True"
        assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
        assert node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == handle.port
    lease = json.loads(kubectl("get", "lease", "-n", "kube-node-lease", "gpu-node-01", "-o", "json").stdout)
    first = lease["spec"]["renewTime"]
    assert lease["spec"]["holderIdentity"] == "gpu-node-01"
    wait_until(lambda: json.loads(kubectl("get", "lease", "-n", "kube-node-lease", "gpu-node-01", "-o", "json").stdout)
               ["spec"]["renewTime"] != first, timeout_s=25, what="the lease to be renewed")


def test_pinned_pod_runs_and_kubectl_logs_shows_its_output(fleet, kubectl, namespace):
    fleet(2, racks=1)
    _apply(kubectl, namespace, _pod("hello", ["sh", "-c", "echo hello from $(HOSTNAME); sleep 2; echo done"],
                                     node="gpu-node-02"))
    wait_until(lambda: _phase(kubectl, namespace, "hello") == "Succeeded", timeout_s=30, what="pod Succeeded")
    pod = _pod_obj(kubectl, namespace, "hello")
    assert pod["spec"]["nodeName"] == "gpu-node-02"
    state = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert state["exitCode"] == 0 and state["reason"] == "Completed"
    assert pod["status"]["podIP"].startswith("10.")
    logs = kubectl("logs", "-n", namespace, "hello").stdout
    assert logs == "hello from hello\ndone\n"
    stamped = kubectl("logs", "-n", namespace, "hello", "--timestamps", "--tail=1").stdout
    assert stamped.endswith(" done\n") and stamped[4] == "-" and stamped[10] == "T"


def test_failing_pod_restarts_and_previous_logs(fleet, kubectl, namespace):
    fleet(1, racks=1)
    _apply(kubectl, namespace, _pod("crash", ["sh", "-c", "echo attempt; exit 3"], node="gpu-node-01",
                                     restart="OnFailure"))

    def restarted():
        statuses = _pod_obj(kubectl, namespace, "crash").get("status", {}).get("containerStatuses") or []
        return statuses and statuses[0]["restartCount"] >= 1 and statuses[0]["lastState"].get("terminated")

    status = wait_until(restarted, timeout_s=30, what="a restart")
    assert status["exitCode"] == 3 and status["reason"] == "Error"
    assert kubectl("logs", "-n", namespace, "crash", "--previous").stdout == "attempt\n"
    reasons = {e["reason"] for e in json.loads(kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
               if e["involvedObject"]["name"] == "crash"}
    assert {"Started", "BackOff"} <= reasons


def test_deleting_a_running_pod_finishes_quickly(fleet, kubectl, namespace):
    fleet(1, racks=1)
    _apply(kubectl, namespace, _pod("sleeper", ["sleep", "infinity"], node="gpu-node-01"))
    wait_until(lambda: _phase(kubectl, namespace, "sleeper") == "Running", timeout_s=30, what="Running")
    kubectl("delete", "pod", "-n", namespace, "sleeper", "--wait=true", "--timeout=30s")


def test_pod_asking_for_more_gpus_than_a_node_has_stays_pending(fleet, kubectl, namespace):
    fleet(2, racks=1, faults=["too-few-gpus:node=gpu-node-02,allocatable=6"])
    _apply(kubectl, namespace,
           _pod("greedy", ["sleep", "1"], gpus=9),
           _pod("short", ["sleep", "1"], gpus=8, node="gpu-node-02"))

    def unschedulable(name):
        conds = _pod_obj(kubectl, namespace, name).get("status", {}).get("conditions") or []
        return [c for c in conds if c["type"] == "PodScheduled" and c["status"] == "False"
                and c.get("reason") == "Unschedulable"]

    for name in ("greedy", "short"):
        cond = wait_until(lambda: unschedulable(name), timeout_s=30, what=f"{name} Unschedulable")[0]
        assert "Insufficient nvidia.com/gpu" in cond["message"]
        assert _phase(kubectl, namespace, name) == "Pending"


def _nccl_objects(namespace, nodes, name="ar"):
    resolved = resolve_category(
        {"domain": "communication", "variant": "nccl-all-reduce",
         "options": {"maxBytes": "4G", "numIterations": 20, "numCycles": 2}},
        platform="aws", gpu_arch="h100",
    )
    return render_workload(resolved, name=name, namespace=namespace, nodes=nodes, job="it", group="group-0")


def _run_nccl(kubectl, namespace, nodes):
    objects = _nccl_objects(namespace, nodes)
    _apply(kubectl, namespace, *objects)
    launcher = next(o for o in objects if o["kind"] == "Job" and o["metadata"]["name"].endswith("launcher"))
    name = launcher["metadata"]["name"]

    def finished():
        job = json.loads(kubectl("get", "job", "-n", namespace, name, "-o", "json").stdout)
        conds = {c["type"]: c["status"] for c in job.get("status", {}).get("conditions") or []}
        return conds.get("Complete") == "True" or conds.get("Failed") == "True"

    wait_until(finished, timeout_s=90, what=f"Job {name} to finish")
    return kubectl("logs", "-n", namespace, f"job/{name}").stdout, name


def test_two_node_nccl_run_from_the_native_adapter_matches_the_fabric_model(fleet, kubectl, namespace):
    handle = fleet(4, racks=1)
    log, launcher = _run_nccl(kubectl, namespace, ["gpu-node-01", "gpu-node-02"])
    result = parse_nccl_log(log)
    assert result.test_name == "all_reduce_perf" and result.concluded and not result.errors
    assert result.ranks == 16 and result.transports == ["IB"]
    assert sorted({d.host for d in result.devices}) == ["ar-worker-0", "ar-worker-1"]
    peak = max(row.out_of_place.bus_bw for row in result.rows)
    expected = handle.expected_busbw(["gpu-node-01", "gpu-node-02"], size=4 << 30)
    assert peak == pytest.approx(expected, rel=0.05)
    job = json.loads(kubectl("get", "job", "-n", namespace, launcher, "-o", "json").stdout)
    assert job["status"].get("succeeded") == 1
    # the workers were released by the launcher and completed too
    wait_until(lambda: json.loads(kubectl("get", "job", "-n", namespace, "ar-worker", "-o", "json").stdout)
               ["status"].get("succeeded") == 2, timeout_s=30, what="workers to complete")


def test_degraded_nic_drops_the_group_bandwidth_as_modelled(fleet, kubectl, namespace):
    handle = fleet(4, racks=1, faults=["degraded-nic:node=gpu-node-02,factor=0.5"])
    log, _ = _run_nccl(kubectl, namespace, ["gpu-node-01", "gpu-node-02"])
    peak = max(row.out_of_place.bus_bw for row in parse_nccl_log(log).rows)
    expected = handle.expected_busbw(["gpu-node-01", "gpu-node-02"], size=4 << 30)
    healthy = handle.expected_busbw(["gpu-node-01", "gpu-node-03"], size=4 << 30)
    assert expected == pytest.approx(healthy / 2, rel=0.02)
    assert peak == pytest.approx(expected, rel=0.05)


def test_gpu_off_bus_changes_the_node_and_fails_the_job(fleet, kubectl, namespace):
    fleet(2, racks=1, faults=["gpu-off-bus:node=gpu-node-02,gpu=3,atFraction=0.5"])
    pod = _pod("diag", ["dcgmi", "diag", "-r", "2"], gpus=8, node="gpu-node-02")
    pod["spec"]["containers"][0]["terminationMessagePolicy"] = "FallbackToLogsOnError"
    _apply(kubectl, namespace, pod)
    wait_until(lambda: _phase(kubectl, namespace, "diag") == "Failed", timeout_s=60, what="diag Failed")
    state = _pod_obj(kubectl, namespace, "diag")["status"]["containerStatuses"][0]["state"]["terminated"]
    assert state["exitCode"] == 226 and "Fail - GPU: 3" in state["message"]
    node = json.loads(kubectl("get", "node", "gpu-node-02", "-o", "json").stdout)
    health = [c for c in node["status"]["conditions"] if c["type"] == "GpuHealthy"][0]
    assert health["status"] == "False" and "XID 79" in health["message"]
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "7"
    assert "Fail - GPU: 3" in kubectl("logs", "-n", namespace, "diag").stdout
    events = json.loads(kubectl("get", "events", "-n", "default", "--field-selector",
                                "involvedObject.name=gpu-node-02,reason=GpuFellOffBus", "-o", "json").stdout)["items"]
    assert events and events[0]["type"] == "Warning" and events[0]["source"]["component"] == "kubelet"


def test_dra_fleet_publishes_resource_slices(fleet, kubectl):
    fleet(2, racks=1, dra=True)
    slices = json.loads(kubectl("get", "resourceslices", "-o", "json").stdout)["items"]
    ours = [s for s in slices if s["spec"]["driver"] == "gpu.nvidia.com"]
    assert sorted(s["spec"]["nodeName"] for s in ours) == ["gpu-node-01", "gpu-node-02"]
    node = json.loads(kubectl("get", "node", "gpu-node-01", "-o", "json").stdout)
    assert "nvidia.com/gpu.product" not in node["metadata"]["labels"]


def test_teardown_removes_nodes(fleet, kubectl, api_client):
    handle = fleet(2, racks=1)
    handle.stop(delete=True)
    core = client.CoreV1Api(api_client)
    names = [n.metadata.name for n in core.list_node(label_selector=f"sim.nvcre.nvidia.com/fleet={handle.config.fleet_name}").items]
    assert names == []
    assert not handle.alive()


def test_follow_streams_until_the_container_ends(fleet, kubectl, namespace):
    fleet(1, racks=1, time_scale=10.0)
    _apply(kubectl, namespace, _pod("ticker", ["sh", "-c", "echo one; sleep 10; echo two; sleep 10; echo three"],
                                     node="gpu-node-01"))
    wait_until(lambda: _phase(kubectl, namespace, "ticker") == "Running", timeout_s=30, what="Running")
    followed = kubectl("logs", "-n", namespace, "ticker", "-f", timeout=30).stdout
    assert followed == "one\ntwo\nthree\n"
    assert _phase(kubectl, namespace, "ticker") in ("Running", "Succeeded")
    assert kubectl("logs", "-n", namespace, "ticker", "--tail=1").stdout == "three\n"


def test_init_containers_run_first(fleet, kubectl, namespace):
    fleet(1, racks=1)
    pod = _pod("init", ["sh", "-c", "echo main"], node="gpu-node-01")
    pod["spec"]["initContainers"] = [{"name": "prepare", "image": "busybox", "command": ["sh", "-c", "echo prepared"]}]
    _apply(kubectl, namespace, pod)
    wait_until(lambda: _phase(kubectl, namespace, "init") == "Succeeded", timeout_s=30, what="Succeeded")
    status = _pod_obj(kubectl, namespace, "init")["status"]
    init = status["initContainerStatuses"][0]["state"]["terminated"]
    main = status["containerStatuses"][0]["state"]["terminated"]
    assert init["reason"] == "Completed" and init["finishedAt"] <= main["startedAt"]
    assert kubectl("logs", "-n", namespace, "init", "-c", "prepare").stdout == "prepared\n"
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions["Initialized"] == "True" and conditions["Ready"] == "False"


def test_dra_claim_is_allocated_by_the_scheduler_and_the_pod_runs(fleet, kubectl, namespace):
    fleet(1, racks=1, dra=True)
    version = json.loads(kubectl("get", "--raw", "/apis/resource.k8s.io").stdout)["preferredVersion"]["groupVersion"]
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}
    if version.endswith("v1beta1"):
        request = {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 2}
    template = {"apiVersion": version, "kind": "ResourceClaimTemplate", "metadata": {"name": "two-gpus"},
                "spec": {"spec": {"devices": {"requests": [request]}}}}
    pod = _pod("dra", ["sh", "-c", "echo claimed"])
    pod["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}]
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpus"}]}
    _apply(kubectl, namespace, template, pod)
    wait_until(lambda: _phase(kubectl, namespace, "dra") == "Succeeded", timeout_s=60, what="the DRA pod to run")
    assert _pod_obj(kubectl, namespace, "dra")["spec"]["nodeName"] == "gpu-node-01"
    assert kubectl("logs", "-n", namespace, "dra").stdout == "claimed\n"


def test_a_service_pod_keeps_running(fleet, kubectl, namespace):
    fleet(1, racks=1)
    _apply(kubectl, namespace, _pod("server", ["/usr/bin/controller", "--port", "8080"], node="gpu-node-01",
                                     restart="Always"))
    wait_until(lambda: _phase(kubectl, namespace, "server") == "Running", timeout_s=30, what="Running")
    time.sleep(2)
    status = _pod_obj(kubectl, namespace, "server")["status"]
    assert status["phase"] == "Running" and status["containerStatuses"][0]["restartCount"] == 0
    assert status["containerStatuses"][0]["ready"] is True


def test_active_deadline_fails_the_pod(fleet, kubectl, namespace):
    fleet(1, racks=1, time_scale=1.0)
    pod = _pod("late", ["sleep", "600"], node="gpu-node-01")
    pod["spec"]["activeDeadlineSeconds"] = 2
    _apply(kubectl, namespace, pod)
    wait_until(lambda: _phase(kubectl, namespace, "late") == "Failed", timeout_s=30, what="DeadlineExceeded")
    status = _pod_obj(kubectl, namespace, "late")["status"]
    assert status["reason"] == "DeadlineExceeded"
    assert status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
