"""Objects shaped as the API server serves them: the simulated fleet's Nodes and a rendered
workload's pods with uid, resourceVersion, managedFields, the server's defaults and the
simulated kubelet's status. Shared by ``bench/controller_memory.py`` (sizes that match a
real cluster's) and ``test_cache_slim.py`` (what the controller reads of them)."""

from __future__ import annotations

import json

from nvcre.controller.context import format_time
from nvcre.sim.fleet import GPU_HEALTH_CONDITION

NOW = 1_800_000_000.0
STAMP = format_time(NOW)


def fields_v1(obj) -> dict:
    """The managedFields ``fieldsV1`` set of an object, as the API server records it."""
    if isinstance(obj, dict):
        return {f"f:{k}": fields_v1(v) for k, v in obj.items()}
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        out = {}
        for x in obj:
            key = {k: x[k] for k in ("name", "type", "containerPort", "mountPath") if k in x} or {"i": len(out)}
            out["k:" + json.dumps(key, separators=(",", ":"))] = {".": {}, **fields_v1(x)}
        return out
    return {}  # a scalar or an atomic list (a node selector's values, a command)


def served(obj: dict, uid: str, managers: list[tuple[str, str, dict]]) -> dict:
    meta = obj["metadata"]
    meta.update(uid=uid, resourceVersion="1001", creationTimestamp=STAMP)
    meta["managedFields"] = [{"manager": m, "operation": "Update", "apiVersion": "v1", "time": STAMP,
                              "fieldsType": "FieldsV1", "fieldsV1": fields_v1(part),
                              **({"subresource": sub} if sub else {})} for m, sub, part in managers]
    return obj


def served_node(node: dict, index: int) -> dict:
    node = json.loads(json.dumps(node))
    return served(node, f"0b6c1c1e-0000-4000-8000-{index:012d}", [
        ("kubelet", "", {"metadata": node["metadata"], "spec": node["spec"]}),
        ("kubelet", "status", {"status": node["status"]}),
    ])


def served_pod(batch: dict, index: int, node: str, phase: str, code: int | None) -> dict:
    """One pod of a rendered batch Job as the API server serves it once it ran (or, with
    ``phase`` Pending, as first created)."""
    template = batch["spec"]["template"]  # shared where not changed below: the node affinity is large
    tmpl = {"metadata": json.loads(json.dumps(template["metadata"])),
            "spec": {**template["spec"], "containers": json.loads(json.dumps(template["spec"]["containers"]))}}
    bname, ns = batch["metadata"]["name"], batch["metadata"]["namespace"]
    indexed = batch["spec"].get("completionMode") == "Indexed"
    labels = {**tmpl["metadata"].get("labels", {}), "batch.kubernetes.io/controller-uid": batch["metadata"]["uid"],
              "batch.kubernetes.io/job-name": bname, "controller-uid": batch["metadata"]["uid"], "job-name": bname}
    annotations = dict(tmpl["metadata"].get("annotations") or {})
    if indexed:
        labels["batch.kubernetes.io/job-completion-index"] = annotations["batch.kubernetes.io/job-completion-index"] = str(index)
    spec = tmpl["spec"]
    spec.update(dnsPolicy="ClusterFirst", enableServiceLinks=True, preemptionPolicy="PreemptLowerPriority", priority=0,
                schedulerName="default-scheduler", securityContext={}, serviceAccount="default",
                serviceAccountName="default", terminationGracePeriodSeconds=30)
    spec["volumes"] = spec.get("volumes", []) + [{"name": f"kube-api-access-{index:05x}", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}]
    for ctr in spec["containers"]:
        ctr.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log", terminationMessagePolicy="File")
        ctr["volumeMounts"] = ctr.get("volumeMounts", []) + [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                                                              "name": f"kube-api-access-{index:05x}", "readOnly": True}]
    if indexed:
        spec["hostname"] = f"{bname}-{index}"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": f"{bname}-{index}-{index * 7919 % 100000:05d}" if indexed else f"{bname}-{index:05d}",
        "generateName": f"{bname}-", "namespace": ns, "labels": labels, "annotations": annotations,
        "finalizers": ["batch.kubernetes.io/job-tracking"],
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": bname, "uid": batch["metadata"]["uid"],
                             "controller": True, "blockOwnerDeletion": True}]}, "spec": spec, "status": {"phase": "Pending"}}
    if phase != "Pending":
        spec["nodeName"] = node
        pod["status"] = pod_status(pod, index, phase, code)
    return served(pod, f"5d1e0c2a-0000-4000-8000-{index:012d}", [
        ("kube-controller-manager", "", {"metadata": pod["metadata"], "spec": spec}),
        ("kubelet", "status", {"status": pod["status"]}),
    ])


def pod_status(pod: dict, index: int, phase: str, code: int) -> dict:
    """What the simulated kubelet posts for an ended pod (``sim/podrunner.py``)."""
    ip = f"10.{64 + index // 256}.{index % 256}.2"
    conds = [{"type": t, "status": s, "lastProbeTime": None, "lastTransitionTime": STAMP, **({"reason": "PodCompleted"} if s == "False" else {})}
             for t, s in (("PodReadyToStartContainers", "False"), ("Initialized", "True"), ("Ready", "False"),
                          ("ContainersReady", "False"), ("PodScheduled", "True"))]
    term = {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "startedAt": format_time(NOW - 60),
            "finishedAt": STAMP, "containerID": f"containerd://{index:064x}"}
    cstat = [{"name": ctr["name"], "state": {"terminated": term}, "lastState": {}, "ready": False, "restartCount": 0,
              "image": ctr["image"], "imageID": ctr["image"] + "@sha256:" + "ab" * 32, "containerID": term["containerID"],
              "started": False} for ctr in pod["spec"]["containers"]]
    return {"phase": phase, "conditions": conds, "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
            "podIP": ip, "podIPs": [{"ip": ip}], "startTime": format_time(NOW - 61), "qosClass": "BestEffort",
            "containerStatuses": cstat}


def off_bus(node: dict) -> dict:
    """The Node update the simulated kubelet sends when a GPU falls off the bus (XID 79)."""
    for cond in node["status"]["conditions"]:
        if cond["type"] == GPU_HEALTH_CONDITION:
            cond.update(status="False", reason="GpuFellOffBus", message="GPU 1 (PCI 0000:09:00.0) has fallen off the bus: XID 79")
    node["status"]["allocatable"]["nvidia.com/gpu"] = str(int(node["status"]["allocatable"]["nvidia.com/gpu"]) - 1)
    node["metadata"]["resourceVersion"] = "1002"
    return node
