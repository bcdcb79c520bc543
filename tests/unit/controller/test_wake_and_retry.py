"""Work comes from events and the queue's backoff, not from fixed re-looks.

Objects waiting for target nodes sit in a bounded index and are woken by a Node that
joins or changes (never by a heartbeat); a Certification's pass returns its give-up
deadline. Errors expected to pass (an API refusal, an unreadable rendered workload)
raise ``Retry`` and are retried with the key's exponential backoff; a previous
attempt's batch Job still going away is waited for by its delete event.
"""

from __future__ import annotations

import copy
import threading
import time

import pytest

from nvcre.controller import conditions as c
from nvcre.controller.context import Context, Settings
from nvcre.controller.reconcilers.certification import reconcile_certification
from nvcre.controller.reconcilers.job import reconcile_job
from nvcre.controller.reconcilers.workloadrun import reconcile_workloadrun
from nvcre.controller.runtime.operator import Controller
from nvcre.controller.runtime.queue import Backoff, Retry, WorkQueue, run_workers
from nvcre.sim.fleet import FleetSpec, build_fleet

from fake_kube import FakeKube

API = "nvcre.nvidia.com/v1alpha1"
CREATED = 1_795_996_800.0  # FakeKube's creationTimestamp, 2026-11-30T00:00:00Z
POOL = {"example.com/pool": "p1"}


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _drain(queue: WorkQueue) -> list:
    keys = []
    while (key := queue.get(timeout=0.01)) is not None:
        keys.append(key)
        queue.done(key)
    return keys


def _world(kube_class, target: dict):
    """Four GPU nodes and a Certification of one loopback category over ``target``."""
    fleet = build_fleet(FleetSpec(nodes=4, racks=1))
    kube = kube_class(fleet.nodes)
    clock = Clock(CREATED + 10)
    ctx = Context(kube=kube, settings=Settings(), clock=clock)
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "cert", "namespace": "ns"},
              "spec": {"target": target, "categories": [{"domain": "communication", "variant": "nccl-loopback",
                                                         "options": {"testScale": "intra-node"}}]}})
    return fleet, kube, clock, ctx


@pytest.fixture
def waiting_world():
    """Four GPU nodes, none in the pool the Certification and the WorkloadRun target."""
    fleet, kube, clock, ctx = _world(FakeKube, {"nodeSelector": POOL})
    kube.add({"apiVersion": API, "kind": "WorkloadRun", "metadata": {"name": "run", "namespace": "ns"},
              "spec": {"target": {"nodeSelector": POOL}, "image": "example.com/app:1", "numNodes": 1,
                       "framework": {"exec": {"command": ["true"]}}}})
    controller = Controller(ctx, {})
    controller.replace("Node", [o for (k, _, _), o in kube.objects.items() if k == "v1/Node"])
    _drain(controller.queue)
    return kube, ctx, clock, controller, fleet.nodes


def _joined(kube, template: dict, name: str) -> dict:
    node = copy.deepcopy(template)
    node["metadata"]["name"] = name
    node["metadata"]["labels"] = {**node["metadata"]["labels"], **POOL}
    return kube.add(dict(node, apiVersion="v1", kind="Node"))


def test_a_waiting_certification_returns_its_deadline_and_is_woken_by_a_node_that_joins(waiting_world):
    kube, ctx, clock, controller, nodes = waiting_world
    delay = reconcile_certification(ctx, "ns", "cert")
    st = kube.get(API, "Certification", "cert", "ns")["status"]
    assert c.reason_of(st["conditions"], c.IN_PROGRESS) == "WaitingForNodes"
    assert delay == pytest.approx(ctx.settings.waiting_for_nodes_seconds - 10)  # the give-up deadline, not a poll
    assert ("Certification", "ns", "cert") in ctx.waiting_for_nodes()
    # a heartbeat of a known node wakes nothing
    beat = copy.deepcopy(kube.get("v1", "Node", nodes[0]["metadata"]["name"]))
    for cond in beat.get("status", {}).get("conditions") or []:
        cond["lastHeartbeatTime"] = "2026-11-30T00:00:09Z"
    controller.apply("Node", "MODIFIED", beat)
    assert _drain(controller.queue) == []
    # a node that joins the pool wakes it, once
    node = _joined(kube, nodes[0], "pool-node-0")
    controller.apply("Node", "ADDED", node)
    assert _drain(controller.queue) == [("Certification", "ns", "cert")]
    reconcile_certification(ctx, "ns", "cert")
    st = kube.get(API, "Certification", "cert", "ns")["status"]
    assert [e["status"] for e in st["categoryStatuses"]] == ["InProgress"]
    assert ctx.waiting_for_nodes() == []  # started: no longer woken by Nodes
    controller.apply("Node", "ADDED", _joined(kube, nodes[1], "pool-node-1"))
    assert _drain(controller.queue) == []


def test_a_node_that_becomes_eligible_wakes_the_waiting(waiting_world):
    kube, ctx, clock, controller, nodes = waiting_world
    reconcile_certification(ctx, "ns", "cert")
    labelled = kube.get("v1", "Node", nodes[2]["metadata"]["name"])
    labelled["metadata"]["labels"].update(POOL)  # a label change, not a join
    controller.apply("Node", "MODIFIED", labelled)
    assert _drain(controller.queue) == [("Certification", "ns", "cert")]


def test_the_waiting_message_names_the_deadline_and_is_not_rewritten(waiting_world):
    kube, ctx, clock, controller, nodes = waiting_world
    reconcile_certification(ctx, "ns", "cert")
    first = kube.get(API, "Certification", "cert", "ns")
    clock.now += 7
    delay = reconcile_certification(ctx, "ns", "cert")
    again = kube.get(API, "Certification", "cert", "ns")
    assert delay == pytest.approx(ctx.settings.waiting_for_nodes_seconds - 17)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]  # nothing written
    message = c.message_of(again["status"]["conditions"], c.IN_PROGRESS)
    assert "example.com/pool=p1" in message and "2026-11-30T00:05:00Z" in message and "300s" in message


def test_past_the_deadline_it_fails_and_leaves_the_index(waiting_world):
    kube, ctx, clock, controller, nodes = waiting_world
    reconcile_certification(ctx, "ns", "cert")
    clock.now = CREATED + ctx.settings.waiting_for_nodes_seconds
    assert reconcile_certification(ctx, "ns", "cert") is None
    failed = kube.get(API, "Certification", "cert", "ns")["status"]["conditions"]
    assert "No schedulable target nodes were found within 300s" in c.message_of(failed, c.FAILED)
    assert ctx.waiting_for_nodes() == []


def test_a_waiting_workloadrun_is_woken_by_a_node_and_forgotten_when_deleted(waiting_world):
    kube, ctx, clock, controller, nodes = waiting_world
    assert reconcile_workloadrun(ctx, "ns", "run") is None  # no poll: a Node event or the resync wakes it
    st = kube.get(API, "WorkloadRun", "run", "ns")["status"]
    assert c.reason_of(st["conditions"], c.IN_PROGRESS) == "WaitingForNodes"
    controller.apply("Node", "ADDED", _joined(kube, nodes[0], "pool-node-0"))
    assert _drain(controller.queue) == [("WorkloadRun", "ns", "run")]
    controller.observe("WorkloadRun", kube.get(API, "WorkloadRun", "run", "ns"), "DELETED")
    _drain(controller.queue)
    assert ctx.waiting_for_nodes() == []


def test_the_waiting_index_is_bounded(waiting_world):
    kube, ctx, clock, controller, nodes = waiting_world
    limit = ctx.memos.waiting_for_nodes.limit
    for i in range(limit + 5):
        ctx.waiting({"kind": "Certification", "metadata": {"namespace": "ns", "name": f"c{i}"}}, True)
    assert len(ctx.waiting_for_nodes()) == limit


class RefusingKube(FakeKube):
    """Refuses to create the kinds named (an admission webhook, a quota)."""

    def __init__(self, nodes, refuse: set[str]) -> None:
        super().__init__(nodes)
        self.refuse = refuse

    def create(self, obj, namespace=None):
        if obj["kind"] in self.refuse:
            raise RuntimeError(f"admission webhook denied {obj['kind']}")
        return super().create(obj, namespace)


def test_a_workloadrun_whose_workflow_is_refused_raises_retry_and_says_so():
    fleet = build_fleet(FleetSpec(nodes=2, racks=1))
    kube = RefusingKube(fleet.nodes, {"Workflow"})
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: CREATED)
    kube.add({"apiVersion": API, "kind": "WorkloadRun", "metadata": {"name": "run", "namespace": "ns"},
              "spec": {"target": {}, "image": "example.com/app:1", "numNodes": 1, "framework": {"exec": {"command": ["true"]}}}})
    with pytest.raises(Retry, match="admission webhook denied"):
        reconcile_workloadrun(ctx, "ns", "run")
    assert ("Warning", "WorkflowCreationError") in kube.events


def _job(**status) -> dict:
    return {"apiVersion": API, "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
            "spec": {"nodes": ["n0"], "workload": {"native": {"objects": [
                {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j-workload-launcher"},
                 "spec": {"template": {"spec": {"restartPolicy": "Never",
                                                "containers": [{"name": "main", "image": "x"}]}}}}]}}},
            "status": status}


def test_a_refused_workload_create_raises_retry_with_the_event():
    kube = RefusingKube([], {"Job"})
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: CREATED)
    kube.add(_job())
    with pytest.raises(Retry, match="not created"):
        reconcile_job(ctx, "ns", "j")
    assert ("Warning", "WorkloadCreationError") in kube.events
    assert not c.is_terminal(kube.get(API, "Job", "j", "ns")["status"].get("conditions"))  # not a verdict


def test_an_unreadable_rendered_workload_raises_retry_with_the_event():
    kube = FakeKube([])
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: CREATED)
    job = _job()
    job["spec"]["workload"]["native"] = {"objectsRef": {"name": "j-workload-objects", "key": "objects.json.gz"}}
    kube.add(job)
    with pytest.raises(Retry, match="does not exist"):
        reconcile_job(ctx, "ns", "j")
    assert ("Warning", "WorkloadCreationError") in kube.events


def _previous_attempt(kube: FakeKube, ctx: Context, *, deleting: bool) -> dict:
    kube.add(_job(restartCount=1))
    old = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "j-workload-launcher", "namespace": "ns", "labels": {"nvcre.nvidia.com/job": "j"}},
           "status": {} if deleting else {"failed": 1, "conditions": [{"type": "Failed", "status": "True"}]}}
    if deleting:
        old["metadata"]["deletionTimestamp"] = "2026-11-30T00:00:05Z"
    return kube.add(old)


@pytest.mark.parametrize("deleting", [True, False])
def test_a_previous_attempt_going_away_is_waited_for_by_its_delete_event(deleting):
    kube = FakeKube([])
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: CREATED)
    old = _previous_attempt(kube, ctx, deleting=deleting)
    ctx.cache.replace("batch.Job", [old])  # watched and synced
    assert reconcile_job(ctx, "ns", "j") is None  # no 2 s poll
    assert kube.get("batch/v1", "Job", "j-workload-launcher", "ns") is None or deleting
    kube.delete("batch/v1", "Job", "j-workload-launcher", "ns")  # it goes away
    controller = Controller(ctx, {})
    controller.apply("batch.Job", "DELETED", old)
    assert _drain(controller.queue) == [("Job", "ns", "j")]
    ctx.cache.replace("batch.Job", [])
    reconcile_job(ctx, "ns", "j")  # gone: the new attempt's object is created
    assert ("Job", "j-workload-launcher") in kube.creates


def test_a_previous_attempt_going_away_unwatched_is_retried_with_backoff():
    kube = FakeKube([])
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: CREATED)
    _previous_attempt(kube, ctx, deleting=True)  # no synced batch Job watch: nothing would wake it
    with pytest.raises(Retry, match="still being deleted") as raised:
        reconcile_job(ctx, "ns", "j")
    assert raised.value.cap <= 10


def test_backoff_doubles_to_the_retrys_cap():
    backoff = Backoff()
    key = ("Job", "ns", "j")
    assert [backoff.failed(key, 3.0) for _ in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    backoff.succeeded(key)
    assert backoff.failed(key) == 0.5
    assert max(backoff.failed(key) for _ in range(200)) == 120.0  # the queue's own cap, no overflow


def test_the_workers_retry_a_retry_with_backoff_not_at_once():
    queue, stop = WorkQueue(), threading.Event()
    seen: list[float] = []

    def handle(key):
        seen.append(time.monotonic())
        if len(seen) < 3:
            raise Retry("not yet")
        return None

    run_workers(queue, handle, count=1, stop=stop)
    queue.add(("Job", "ns", "j"))
    deadline = time.monotonic() + 5
    while len(seen) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    queue.close()
    assert len(seen) == 3
    assert seen[1] - seen[0] >= 0.45 and seen[2] - seen[1] >= 0.95  # 0.5 s, then 1 s


# ---------------------------------------------------------------- namespace permissions
class GatedKube(FakeKube):
    """A FakeKube whose SelfSubjectAccessReviews say no until ``granted`` is set."""

    granted = False
    reviews = 0

    def can_i(self, verb, resource, namespace, group=""):
        self.reviews += 1
        return self.granted, ""


@pytest.fixture
def denied_world():
    """A Certification's Workflow in namespace ``ns``, where the controller may not work yet."""
    fleet, kube, clock, ctx = _world(GatedKube, {})
    reconcile_certification(ctx, "ns", "cert")
    workflow = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    controller = Controller(ctx, {})
    return kube, ctx, clock, controller, workflow


def _workflow_reason(kube, name: str) -> str | None:
    return c.reason_of(kube.get(API, "Workflow", name, "ns")["status"]["conditions"], c.IN_PROGRESS)


def test_a_workflow_without_permissions_returns_its_deadline_and_a_rolebinding_wakes_it(denied_world):
    """No fixed 10 s re-look: the pass returns the give-up deadline (600 s after creation), and
    a RoleBinding change in the namespace forgets the cached answer and queues the Workflow."""
    from nvcre.controller.reconcilers.workflow import reconcile_workflow

    kube, ctx, clock, controller, wf = denied_world
    wait = reconcile_workflow(ctx, "ns", wf)
    assert wait == pytest.approx(CREATED + 600 - clock.now)
    assert _workflow_reason(kube, wf) == "NamespacePermissionsMissing"
    assert ctx.access_waiters("ns") == [("Workflow", "ns", wf)]

    controller.apply("RoleBinding", "ADDED", {"metadata": {"name": "other", "namespace": "elsewhere"}})
    assert _drain(controller.queue) == []  # another namespace's binding wakes nothing
    kube.granted = True
    controller.apply("RoleBinding", "ADDED", {"metadata": {"name": "nvcre-manager-run", "namespace": "ns"}})
    assert _drain(controller.queue) == [("Workflow", "ns", wf)]
    assert ctx.cache.count("RoleBinding") == 0  # events only: RoleBindings are never cached

    reconcile_workflow(ctx, "ns", wf)  # within the answers' 30 s: asks again all the same
    assert _workflow_reason(kube, wf) != "NamespacePermissionsMissing"
    assert ctx.access_waiters("ns") == []


def test_a_denial_right_after_a_rolebinding_change_is_retried_with_backoff(denied_world):
    """The authorizer may learn of a new binding a moment after the controller: a denial in
    the few seconds after a change raises Retry (the key's backoff, capped at the deadline)
    and is not cached; later it waits for the deadline again."""
    from nvcre.controller import access
    from nvcre.controller.reconcilers.workflow import reconcile_workflow

    kube, ctx, clock, controller, wf = denied_world
    ctx.access.clock = clock
    reconcile_workflow(ctx, "ns", wf)
    controller.apply("RoleBinding", "MODIFIED", {"metadata": {"name": "nvcre-manager-run", "namespace": "ns"}})
    with pytest.raises(Retry) as raised:
        reconcile_workflow(ctx, "ns", wf)
    assert raised.value.cap == pytest.approx(CREATED + 600 - clock.now)
    asked = kube.reviews
    with pytest.raises(Retry):
        reconcile_workflow(ctx, "ns", wf)
    assert kube.reviews > asked  # a denial while settling is asked again, not cached
    clock.now += access.SETTLE_SECONDS
    assert reconcile_workflow(ctx, "ns", wf) == pytest.approx(CREATED + 600 - clock.now)


def test_a_rolebinding_list_wakes_the_waiting_once_without_settling(denied_world):
    from nvcre.controller.reconcilers.workflow import reconcile_workflow

    kube, ctx, clock, controller, wf = denied_world
    reconcile_workflow(ctx, "ns", wf)
    controller.replace("RoleBinding", [{"metadata": {"name": f"b{i}", "namespace": "ns"}} for i in range(50)])
    assert _drain(controller.queue) == [("Workflow", "ns", wf)]
    assert not ctx.access.settling("ns")


def test_a_workflow_past_its_permission_deadline_fails_and_leaves_the_index(denied_world):
    from nvcre.controller.reconcilers.workflow import reconcile_workflow

    kube, ctx, clock, controller, wf = denied_world
    reconcile_workflow(ctx, "ns", wf)
    clock.now = CREATED + 600
    assert reconcile_workflow(ctx, "ns", wf) is None
    assert c.reason_of(kube.get(API, "Workflow", wf, "ns")["status"]["conditions"], c.FAILED) == "NamespacePermissionsMissing"
    assert ctx.access_waiters(None) == []


def test_a_deleted_waiting_workflow_leaves_the_index(denied_world):
    from nvcre.controller.reconcilers.workflow import reconcile_workflow

    kube, ctx, clock, controller, wf = denied_world
    reconcile_workflow(ctx, "ns", wf)
    kube.delete(API, "Workflow", wf, "ns")
    assert reconcile_workflow(ctx, "ns", wf) is None
    assert ctx.access_waiters(None) == []


def test_a_measurement_of_an_ended_job_waits_only_what_is_left_of_the_freeze_grace():
    """The Job freezes its own measurement (a write, so an event); the measurement's own final
    read waits for the rest of the grace, not a whole grace again each pass."""
    from nvcre.controller.measurement import JOB_FREEZE_GRACE, reconcile_bandwidth

    kube = FakeKube([])
    ended = CREATED + 100
    clock = Clock(ended + 20)
    ctx = Context(kube=kube, settings=Settings(), clock=clock)
    kube.add({"apiVersion": API, "kind": "Job", "metadata": {"name": "j", "namespace": "ns"}, "spec": {},
              "status": {"conditions": [{"type": "Succeeded", "status": "True",
                                         "lastTransitionTime": "2026-11-30T00:01:40Z"}]}})
    kube.add({"apiVersion": API, "kind": "BandwidthMeasurement", "metadata": {"name": "j-bandwidth", "namespace": "ns"},
              "spec": {"jobRef": {"name": "j"}, "sampleInterval": "60s"}})
    assert reconcile_bandwidth(ctx, "ns", "j-bandwidth") == pytest.approx(JOB_FREEZE_GRACE - 20)
