"""The watch cache's transform keeps every field of a pod the controller reads.

Pods shaped as the API server serves them (``served_objects``: the rendered template
with its node affinity, server defaults, managedFields, the kubelet's status) go through
the real Job, Workflow and Certification reconcilers twice: once stored whole with every
read recorded, once slimmed as the cache stores them. Every path read of a whole pod must
hold the same value in the slimmed one, and both runs must write the same statuses.
"""

from __future__ import annotations

import json

import pytest

from nvcre.controller import conditions as c
from nvcre.controller.context import Context, Settings
from nvcre.controller.reconcilers.certification import reconcile_certification
from nvcre.controller.reconcilers.job import reconcile_job
from nvcre.controller.reconcilers.workflow import reconcile_workflow
from nvcre.controller.runtime import cache as cache_mod
from nvcre.controller.runtime.operator import Controller
from nvcre.sim.fleet import FleetSpec, build_fleet

from fake_kube import FakeKube
from served_objects import NOW, STAMP, off_bus, served_node, served_pod

API = "nvcre.nvidia.com/v1alpha1"
NODES = 24
EVERY = "*"  # a path read whole (iterated, copied): all of it must survive
ANY = "[]"  # any element of a list


class Tracked(dict):
    """A pod body (or part of one) that records the paths read from it."""

    def __init__(self, data: dict, path: tuple, seen: set) -> None:
        super().__init__(data)
        self._path, self._seen = path, seen

    def _read(self, key, value):
        self._seen.add(self._path + (key,))
        return _wrap(value, self._path + (key,), self._seen)

    def __getitem__(self, key):
        return self._read(key, dict.__getitem__(self, key))

    def get(self, key, default=None):
        return self._read(key, dict.get(self, key, default))

    def __contains__(self, key):
        self._seen.add(self._path + (key,))
        return dict.__contains__(self, key)

    def _whole(self):
        self._seen.add(self._path + (EVERY,))

    def items(self):
        self._whole()
        return [(k, _wrap(v, self._path + (k,), self._seen)) for k, v in dict.items(self)]

    def values(self):
        return [v for _, v in self.items()]

    def keys(self):
        self._whole()
        return dict.keys(self)

    def __iter__(self):
        self._whole()
        return dict.__iter__(self)

    def __reduce_ex__(self, protocol):  # copy/deepcopy/pickle: the whole subtree
        self._whole()
        return dict, (dict(dict.items(self)),)


class TrackedList(list):
    def __init__(self, data: list, path: tuple, seen: set) -> None:
        super().__init__(data)
        self._path, self._seen = path + (ANY,), seen

    def __getitem__(self, index):
        value = list.__getitem__(self, index)
        return [_wrap(v, self._path, self._seen) for v in value] if isinstance(index, slice) else _wrap(value, self._path, self._seen)

    def __iter__(self):
        return (_wrap(v, self._path, self._seen) for v in list.__iter__(self))


def _wrap(value, path: tuple, seen: set):
    if isinstance(value, dict) and not isinstance(value, Tracked):
        return Tracked(value, path, seen)
    if isinstance(value, list) and not isinstance(value, TrackedList):
        return TrackedList(value, path, seen)
    return value


def _at(obj, path: tuple) -> list:
    """Every value at ``path`` (lists expanded at ANY); a missing key reads as None."""
    found = [obj]
    for key in path:
        nxt = []
        for item in found:
            if key == ANY:
                nxt += item if isinstance(item, list) else [None]
            else:
                nxt.append(item.get(key) if isinstance(item, dict) else None)
        found = nxt
    return found


def _scenario(kind: str):
    """(phase, exit code, Pending-unschedulable?) for the launcher and each rank."""
    if kind == "healthy":
        return lambda launcher, bad: ("Succeeded", 0, False)
    if kind == "one-gpu-off-bus":
        return lambda launcher, bad: ("Failed", 1, False) if launcher or bad else ("Succeeded", 0, False)
    if kind == "ended-before-phase":  # containers terminated, the kubelet's phase update not yet in
        return lambda launcher, bad: ("Running", 0, False)
    return lambda launcher, bad: ("Failed", 1, False) if launcher else ("Pending", None, True)  # workers never scheduled


def _unschedulable(pod: dict) -> dict:
    pod["status"] = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "lastTransitionTime": STAMP, "message": "0/24 nodes are available: 24 Insufficient nvidia.com/gpu."}]}
    return pod


def _run(kind: str) -> tuple[dict, list[dict]]:
    """Drives one full-scale Job to its verdict through the cache (with whatever ``slim`` is
    in place); returns the statuses written and the pods as served."""
    fleet = build_fleet(FleetSpec(nodes=NODES, racks=2, platform="onprem", gpu="gb200", name_prefix="dgx-gb200-rack-a01-node"))
    names = [n["metadata"]["name"] for n in fleet.nodes]
    kube = FakeKube(fleet.nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: NOW)
    ctl = Controller(ctx, reconcilers={})
    ctl.replace("Node", [served_node(n, i) for i, n in enumerate(fleet.nodes)])
    for piece in ("Pod", "batch.Job"):
        ctl.replace(piece, [])
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "cert", "namespace": "ns"},
              "spec": {"target": {}, "categories": [
                  {"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "full-scale"}}]}})
    reconcile_certification(ctx, "ns", "cert")
    wf = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf)
    reconcile_workflow(ctx, "ns", wf)
    job = next(n for k, n in kube.creates if k == "Job")
    reconcile_job(ctx, "ns", job)
    bad, outcome, served = names[5], _scenario(kind), []
    if kind == "one-gpu-off-bus":
        ctl.apply("Node", "MODIFIED", off_bus(served_node(fleet.nodes[5], 5)))
    for (k, _, bname), obj in sorted(kube.objects.items()):
        if k != "batch/v1/Job":
            continue
        launcher = "launcher" in bname
        for index, node in enumerate(names[:1] if launcher else names):
            phase, code, unscheduled = outcome(launcher, node == bad)
            pod = served_pod(obj, index, node, phase, code)
            served.append(_unschedulable(pod) if unscheduled else pod)
            ctl.apply("Pod", "MODIFIED", json.loads(json.dumps(pod)))
        done = "Failed" if launcher and kind != "healthy" else "Complete"
        running = kind == "ended-before-phase" or (kind == "workers-pending" and not launcher)  # the job controller has not marked it
        conditions = [] if running else [{"type": done, "status": "True", "lastTransitionTime": STAMP}]
        ctl.apply("batch.Job", "MODIFIED", dict(obj, status={"conditions": conditions}))
    reconcile_job(ctx, "ns", job)
    ctl.observe("Job", kube.get(API, "Job", job, "ns"), "MODIFIED")
    reconcile_workflow(ctx, "ns", wf)
    reconcile_certification(ctx, "ns", "cert")
    statuses = {f"{k}/{name}": o.get("status") for (k, _, name), o in kube.objects.items() if k.startswith(API)}
    return statuses, served


def _untimed(obj):
    """Statuses without their wall-clock stamps (conditions carry the time they were written)."""
    if isinstance(obj, dict):
        return {k: _untimed(v) for k, v in obj.items() if not k.endswith("Time")}
    return [_untimed(v) for v in obj] if isinstance(obj, list) else obj


def _recording(seen: set):
    real = cache_mod.slim

    def transform(obj: dict) -> dict:
        if obj.get("kind") == "Pod":
            meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
            return Tracked({**obj, "metadata": meta}, (), seen)  # whole, bar managedFields (never read)
        return real(obj)

    return transform


@pytest.mark.parametrize("kind", ["healthy", "one-gpu-off-bus", "workers-pending", "ended-before-phase"])
def test_every_pod_field_the_controller_reads_survives_the_cache_transform(kind, monkeypatch):
    seen: set = set()
    monkeypatch.setattr(cache_mod, "slim", _recording(seen))
    whole, served = _run(kind)
    monkeypatch.undo()
    slimmed, _ = _run(kind)
    assert _untimed(whole) == _untimed(slimmed)  # the same verdicts, node results and reports either way
    job = next(s for k, s in whole.items() if k.startswith(f"{API}/Job/"))
    assert c.phase_of(job["conditions"]) == (c.FAILED if kind in ("one-gpu-off-bus", "workers-pending") else c.SUCCEEDED)
    if kind == "ended-before-phase":  # the ends were read from the containers, under the restart policy
        assert ("spec", "restartPolicy") in seen
    assert any(p[:1] == ("spec",) for p in seen) and any(p[:1] == ("status",) for p in seen)
    read = {p for p in seen if not any(q != p and q[:len(p)] == p for q in seen)}  # the deepest reads
    for pod in served:
        slim = cache_mod.slim(pod)
        for path in read:
            where = path[:-1] if path[-1] == EVERY else path
            assert _at(slim, where) == _at(pod, where), f"{'.'.join(map(str, where))} read by the controller, lost by slim"


def test_slim_drops_the_per_node_template_of_a_pinned_pod():
    fleet = build_fleet(FleetSpec(nodes=NODES, racks=2, platform="onprem", gpu="gb200"))
    names = [n["metadata"]["name"] for n in fleet.nodes]
    batch = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "w", "namespace": "ns", "uid": "u"},
             "spec": {"completionMode": "Indexed", "template": {"metadata": {"labels": {"nvcre.nvidia.com/job": "j"}}, "spec": {
                 "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                     {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": names}]}]}}},
                 "restartPolicy": "Never",
                 "containers": [{"name": "node", "image": "x", "command": ["sleep"], "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}}}
    pod = served_pod(batch, 0, names[0], "Succeeded", 0)
    slim = cache_mod.slim(pod)
    assert "affinity" not in slim["spec"] and "managedFields" not in slim["metadata"]
    assert slim["spec"]["containers"] == [{"name": "node", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]
    assert slim["spec"]["nodeName"] == names[0] and slim["status"] == pod["status"]
    assert "affinity" in pod["spec"]  # the delivered body is not changed
