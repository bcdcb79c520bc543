import threading
import time

from nvcre.controller.runtime.queue import WorkQueue, run_workers


def test_dedupes_and_requeues_while_active():
    q = WorkQueue()
    k = ("Job", "ns", "a")
    q.add(k)
    q.add(k)
    assert q.get(0.1) == k
    assert q.get(0.05) is None  # deduplicated
    q.add(k)  # while active: runs again once done
    q.done(k)
    assert q.get(0.1) == k
    q.done(k)


def test_delayed_and_workers():
    q = WorkQueue()
    seen = []
    stop = threading.Event()

    def handle(key):
        seen.append(key)
        return 0.05 if len(seen) < 3 else None

    run_workers(q, handle, count=2, stop=stop)
    q.add(("K", "", "x"))
    deadline = time.time() + 3
    while len(seen) < 3 and time.time() < deadline:
        time.sleep(0.02)
    stop.set()
    q.close()
    assert len(seen) == 3


def test_one_pending_delayed_requeue_per_key():
    q = WorkQueue()
    k = ("Job", "ns", "a")
    for _ in range(50):
        q.add_after(k, 0.05)
    q.add_after(k, 0.01)  # an earlier one replaces the later
    assert q.get(0.5) == k
    q.done(k)
    assert q.get(0.15) is None


def test_node_fingerprint_ignores_heartbeats():
    from nvcre.controller.runtime.operator import node_fingerprint

    node = {"metadata": {"name": "n", "labels": {"a": "b"}}, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": "t1"}]}}
    beat = {**node, "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": "t2"}]}}
    sick = {**node, "status": {"conditions": [{"type": "GpuHealthy", "status": "False", "reason": "Xid79"}]}}
    assert node_fingerprint(node) == node_fingerprint(beat)
    assert node_fingerprint(node) != node_fingerprint(sick)


def _pass(q: WorkQueue, key) -> None:
    assert q.get(timeout=0.01) == key
    q.done(key)


def test_spaced_adds_wait_for_the_spacing_after_the_last_pass():
    """A burst of events right after a pass is one more pass, ``spacing`` seconds later."""
    q = WorkQueue()
    key = ("Job", "ns", "a")
    q.add(key, spacing=0.3)  # never looked at: no wait
    _pass(q, key)
    for _ in range(100):
        q.add(key, spacing=0.3)
    assert q.get(timeout=0.1) is None  # still inside the spacing
    assert q.get(timeout=0.5) == key
    q.done(key)
    assert q.get(timeout=0.05) is None  # the hundred adds were one pass


def test_a_plain_add_is_not_held_back_by_spacing():
    q = WorkQueue()
    key = ("Job", "ns", "a")
    q.add(key, spacing=5.0)
    _pass(q, key)
    q.add(key)  # e.g. the Job's own status changed
    assert q.get(timeout=0.05) == key


def test_a_spaced_add_during_a_pass_runs_once_more_after_the_spacing():
    q = WorkQueue()
    key = ("Job", "ns", "a")
    q.add(key)
    assert q.get(timeout=0.01) == key
    q.add(key, spacing=0.2)  # while the pass runs
    q.done(key)
    assert q.get(timeout=0.05) is None
    assert q.get(timeout=0.4) == key


def test_a_jobs_event_spacing_grows_with_its_group_past_1024_nodes():
    from nvcre.controller.runtime.operator import piece_event_spacing

    assert piece_event_spacing(None) == 1.0  # not cached yet
    assert piece_event_spacing({"spec": {"nodes": ["n"] * 256}}) == 1.0
    assert piece_event_spacing({"spec": {"nodes": ["n"] * 4096}}) == 4.0


def _job_pod(name: str, *, ended: bool, rv: int) -> dict:
    state = {"terminated": {"exitCode": 0}} if ended else {"running": {}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": str(rv), "labels": {"nvcre.nvidia.com/job": "j"}},
            "spec": {"nodeName": "n", "restartPolicy": "Never", "containers": [{"name": "main"}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "main", "state": state}]}}


def test_the_end_of_a_jobs_last_running_pod_skips_the_spacing():
    """A 4096-node Job's pod events are spaced 4 s apart, but its verdict waits for the last
    pod's end: that one event is looked at at once; a later update of an ended pod is not."""
    from fake_kube import FakeKube

    from nvcre.controller.context import Context, Settings
    from nvcre.controller.runtime.operator import Controller

    ctx = Context(kube=FakeKube([]), settings=Settings())
    ctl = Controller(ctx, {})
    ctx.cache.put({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"},
                   "spec": {"nodes": [f"n{i}" for i in range(4096)]}})
    key = ("Job", "ns", "j")
    for i in range(3):
        ctl.apply("Pod", "ADDED", _job_pod(f"p{i}", ended=False, rv=10 + i))
    _pass(ctl.queue, key)
    ctl.apply("Pod", "MODIFIED", _job_pod("p0", ended=True, rv=20))
    ctl.apply("Pod", "MODIFIED", _job_pod("p1", ended=True, rv=21))
    assert ctl.queue.get(timeout=0.05) is None  # two of three ended: within the spacing
    ctl.apply("Pod", "MODIFIED", _job_pod("p2", ended=True, rv=22))
    assert ctl.queue.get(timeout=0.05) == key  # the last one: at once
    ctl.queue.done(key)
    ended = _job_pod("p2", ended=True, rv=23)
    ended["status"]["phase"] = "Succeeded"  # the kubelet's phase update after the containers' end
    ctl.apply("Pod", "MODIFIED", ended)
    assert ctl.queue.get(timeout=0.05) is None
