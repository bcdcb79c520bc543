"""The watch cache and its reflectors: paginated lists, resourceVersion, 410 Gone, indexes."""

from __future__ import annotations

import threading

from nvcre.controller.runtime.cache import WatchCache
from nvcre.controller.context import Context
from nvcre.controller.runtime.operator import Controller, reflected_kinds
from nvcre.kube.client import ApiError, TransportError
from nvcre.kube.watch import Reflector, WatchSpec


def _node(name: str, rv: int, **extra) -> dict:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "resourceVersion": str(rv), "labels": {"nvidia.com/gpu.present": "true"},
                         "managedFields": [{"x": 1}]},
            "status": {"images": [{"names": ["big"]}], "conditions": []}, **extra}


class ScriptedKube:
    """list_page/watch answering from a script: pages, and a list of watch rounds."""

    def __init__(self, objects: list[dict], rounds: list, *, gone_on_page: int | None = None) -> None:
        self.objects, self.rounds = objects, list(rounds)
        self.gone_on_page = gone_on_page
        self.pages: list[tuple[int, str | None]] = []
        self.watched_from: list[str] = []

    def list_page(self, api_version, kind, namespace=None, *, label_selector=None, limit=500, continue_token=None):
        start = int(continue_token or 0)
        self.pages.append((start, continue_token))
        if self.gone_on_page is not None and start and len(self.pages) == self.gone_on_page:
            raise ApiError(410, "Expired", "continue token expired")
        chunk = self.objects[start:start + limit]
        more = start + limit < len(self.objects)
        return [dict(o) for o in chunk], "100", (str(start + limit) if more else None)

    def watch(self, api_version, kind, namespace=None, *, label_selector=None, resource_version, timeout_seconds=300):
        self.watched_from.append(resource_version)
        if not self.rounds:
            self.reflector.stop.set()
            return
        round_ = self.rounds.pop(0)
        if isinstance(round_, Exception):
            raise round_
        yield from round_


class RecordingSink(WatchCache):
    def __init__(self) -> None:
        super().__init__()
        self.replaced = 0
        self.events: list[tuple[str, str]] = []

    def replace(self, kind, objects, namespace=None):
        self.replaced += 1
        return super().replace(kind, objects, namespace)

    def apply(self, kind, event_type, obj):
        self.events.append((event_type, obj["metadata"]["name"]))
        super().apply(kind, event_type, obj)


def _run(kube: ScriptedKube, page_size: int = 2) -> tuple[Reflector, RecordingSink]:
    sink = RecordingSink()
    reflector = Reflector(kube, WatchSpec("v1", "Node", "Node"), sink, page_size=page_size, sleep=lambda s: False)
    kube.reflector = reflector
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive()
    return reflector, sink


def test_lists_in_pages_then_watches_from_the_lists_resource_version():
    nodes = [_node(f"n{i}", 10 + i) for i in range(5)]
    kube = ScriptedKube(nodes, [[{"type": "MODIFIED", "object": _node("n1", 120)},
                                 {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "130"}}}]])
    reflector, sink = _run(kube)
    assert [p[0] for p in kube.pages] == [0, 2, 4]
    assert kube.watched_from == ["100", "130"]  # the list's version, then the bookmark's
    assert sink.synced("Node") and sink.count("Node") == 5
    assert sink.events == [("MODIFIED", "n1")]  # bookmarks are not events
    cached = sink.get("Node", "", "n0")
    assert "managedFields" not in cached["metadata"] and "images" not in cached["status"]


def test_a_410_during_pagination_starts_the_list_again():
    kube = ScriptedKube([_node(f"n{i}", i) for i in range(5)], [], gone_on_page=2)
    reflector, sink = _run(kube)
    assert [p[0] for p in kube.pages] == [0, 2, 0, 2, 4]
    assert reflector.lists == 1 and sink.count("Node") == 5


def test_a_410_from_the_watch_relists_and_drops_what_is_gone():
    kube = ScriptedKube([_node("a", 1), _node("b", 2)], [ApiError(410, "Gone", "too old")])
    original = kube.list_page

    def shrink(*args, **kwargs):
        if kube.pages:  # the relist no longer finds b
            kube.objects = [_node("a", 1)]
        return original(*args, **kwargs)

    kube.list_page = shrink
    reflector, sink = _run(kube)
    assert reflector.lists == 2 and sink.replaced == 2
    assert sink.get("Node", "", "b") is None and sink.get("Node", "", "a") is not None


def test_a_broken_connection_resumes_from_the_last_version_without_a_relist():
    kube = ScriptedKube([_node("a", 1)], [[{"type": "MODIFIED", "object": _node("a", 150)}], TransportError("reset")])
    reflector, sink = _run(kube)
    assert reflector.lists == 1
    assert kube.watched_from == ["100", "150", "150"]


def test_indexes_answer_without_a_scan():
    cache = WatchCache()
    job = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
           "metadata": {"name": "j", "namespace": "ns", "labels": {"nvcre.nvidia.com/workflow": "wf"}},
           "spec": {"nodes": ["n1", "n2"]}}
    unpinned = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "u", "namespace": "ns"}, "spec": {}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "labels": {"nvcre.nvidia.com/job": "j"}}}
    batch = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "b", "namespace": "ns", "labels": {"nvcre.nvidia.com/job": "j"}}}
    for obj in (job, unpinned, pod, batch):
        cache.put(obj)
    assert cache.jobs_on("n1") == [("ns", "j"), ("ns", "u")] and cache.jobs_on("n9") == [("ns", "u")]
    assert list(cache.jobs_of("ns", "wf")) == ["j"]
    assert [p["metadata"]["name"] for p in cache.pieces_of("ns", "j", "Pod")] == ["p"]
    assert [p["metadata"]["name"] for p in cache.pieces_of("ns", "j", "batch.Job")] == ["b"]
    assert cache.of_kind("Job") and all(o["apiVersion"].startswith("nvcre") for o in cache.of_kind("Job"))
    moved = dict(job, spec={"nodes": ["n3"]})
    cache.put(moved)
    assert cache.jobs_on("n1") == [("ns", "u")] and ("ns", "j") in cache.jobs_on("n3")
    cache.drop("Pod", "ns", "p")
    assert cache.pieces_of("ns", "j", "Pod") == []


def test_an_older_copy_does_not_overwrite_a_newer_one():
    cache = WatchCache()
    cache.put(_node("a", 20))
    cache.put(_node("a", 10))
    assert cache.get("Node", "", "a")["metadata"]["resourceVersion"] == "20"


def test_a_namespaced_relist_leaves_other_namespaces_alone():
    cache = WatchCache()
    pod = lambda ns, n: {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n, "namespace": ns}}  # noqa: E731
    cache.replace("Pod", [pod("a", "1")], "a")
    cache.replace("Pod", [pod("b", "2")], "b")
    cache.replace("Pod", [], "a")
    assert [p["metadata"]["name"] for p in cache.of_kind("Pod")] == ["2"]
    assert cache.synced("Pod", "b") and not cache.synced("Pod") and not cache.synced("Pod", "c")


def test_a_node_change_queues_only_the_jobs_on_that_node():
    ctx = Context(kube=object())
    controller = Controller(ctx, {})
    for name, nodes in (("on-n1", ["n1"]), ("on-n2", ["n2"])):
        ctx.cache.put({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": "ns"}, "spec": {"nodes": nodes}})
    controller.replace("Node", [_node("n1", 1), _node("n2", 1)])
    assert len(controller.queue) == 0  # the first listing changes nothing
    controller.apply("Node", "MODIFIED", _node("n1", 2, spec={"unschedulable": True}))
    assert controller.queue.get(timeout=0.1) == ("Job", "ns", "on-n1")
    assert controller.queue.get(timeout=0.1) is None


def test_a_namespaced_controller_reflects_workload_pieces_per_namespace(monkeypatch):
    monkeypatch.setenv("NVCRE_LEDGER_NAMESPACE", "nvcre-ops")
    specs = reflected_kinds(["a", "b"])
    assert [(s.key, s.namespace) for s in specs] == [("Node", None), ("Pod", "a"), ("Pod", "b"), ("batch.Job", "a"), ("batch.Job", "b"),
                                                     ("RoleBinding", "a"), ("RoleBinding", "b"), ("NodeReadiness", "nvcre-ops")]


def _readiness(node: str, rv: int, stage: str | None = "production", result: str = "Passed") -> dict:
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "NodeReadiness",
            "metadata": {"name": node, "namespace": "nvcre-system", "resourceVersion": str(rv)},
            "spec": {"nodeName": node}, "status": {"stageCleared": stage, "lastResult": result}}


def test_a_deleted_readiness_record_drops_its_series_without_a_restart(monkeypatch):
    """The ledger is reflected into the cache the gauge projects: a DELETED event (or a relist
    that no longer has the record) removes the node's series; nothing is queued for it."""
    from prometheus_client import generate_latest

    monkeypatch.setenv("NVCRE_LEDGER_NAMESPACE", "nvcre-system")
    ctx = Context(kube=object())
    controller = Controller(ctx, {})
    (spec,) = [s for s in reflected_kinds(None) if s.kind == "NodeReadiness"]
    scrapes: list[str] = []
    kube = ScriptedKube([_readiness("n1", 1), _readiness("n2", 1, None, "Failed")],
                        [[{"type": "DELETED", "object": _readiness("n1", 2)}]])
    original_watch = kube.watch

    def watch_after_a_scrape(*args, **kwargs):  # the listed state, seen before the watch's events
        scrapes.append(generate_latest(ctx.metrics.registry).decode())
        yield from original_watch(*args, **kwargs)

    kube.watch = watch_after_a_scrape
    reflector = Reflector(kube, spec, controller, sleep=lambda s: False)
    kube.reflector = reflector
    thread = threading.Thread(target=reflector.run, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert 'nvcre_node_readiness_status{node="n1",stage="production"} 1.0' in scrapes[0]
    assert 'nvcre_node_readiness_status{node="n2",stage="none"} 0.0' in scrapes[0]
    text = generate_latest(ctx.metrics.registry).decode()
    assert 'node="n1"' not in text and 'node="n2"' in text  # the DELETED event, no restart
    controller.replace("NodeReadiness", [], spec.namespace)  # a relist after 410: n2 went while the watch was away
    assert "nvcre_node_readiness_status{" not in generate_latest(ctx.metrics.registry).decode()
    assert len(controller.queue) == 0


def test_the_later_of_the_pod_and_node_first_lists_wakes_every_unfinished_job_once():
    """Before the watches sync a running Job reads live and has no events to rely on; it does
    not poll: when its Pods and the Nodes have both been listed, it is looked at once."""
    ctx = Context(kube=object())
    controller = Controller(ctx, {})
    done = {"conditions": [{"type": "Succeeded", "status": "True"}]}
    for name, ns, status in (("run-a", "a", {}), ("run-b", "b", {}), ("done-a", "a", done)):
        ctx.cache.put({"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
                       "metadata": {"name": name, "namespace": ns}, "spec": {"nodes": ["n1"]}, "status": status})
    controller.replace("Pod", [], "a")
    assert len(controller.queue) == 0  # the Nodes are not listed yet
    controller.replace("Node", [_node("n1", 1)])
    assert _keys(controller.queue) == [("Job", "a", "run-a")]  # namespace b's pods are not listed yet
    controller.replace("Pod", [], "b")
    assert _keys(controller.queue) == [("Job", "b", "run-b")]
    controller.replace("Pod", [], "b")  # a relist is not a first sync
    controller.replace("Node", [_node("n1", 1)])
    assert _keys(controller.queue) == []


def _keys(queue) -> list:
    keys = []
    while (key := queue.get(timeout=0.01)) is not None:
        keys.append(key)
        queue.done(key)
    return keys


def test_a_shrinking_reflector_hands_its_sink_only_shrunk_objects():
    """Each page is shrunk as it arrives: the whole raw list is never held (4096 Nodes with their
    managedFields and image lists, beside the cache it replaces, set the controller's peak RSS)."""
    from nvcre.controller.runtime.cache import slim

    kube = ScriptedKube([_node(f"n{i}", i) for i in range(5)], [])
    seen: list[dict] = []

    class Keep(RecordingSink):
        def replace(self, kind, objects, namespace=None):
            seen.extend(objects)
            return super().replace(kind, objects, namespace)

    sink = Keep()
    reflector = Reflector(kube, WatchSpec("v1", "Node", "Node"), sink, page_size=2, sleep=lambda s: False, shrink=slim)
    kube.reflector = reflector
    reflector.run()
    assert len(seen) == 5
    assert all("managedFields" not in o["metadata"] and "images" not in o["status"] for o in seen)


def _job_body(name: str, nodes, ran, rv: int, annotated: bool) -> dict:
    meta = {"name": name, "namespace": "ns", "resourceVersion": str(rv), "labels": {"nvcre.nvidia.com/workflow": "wf"}}
    spec = {}
    if annotated:
        meta["annotations"] = {"nvcre.nvidia.com/group-nodes": ",".join(nodes)}
    elif nodes:
        spec["nodes"] = list(nodes)
    status = {"nodesRan": list(ran)} if ran else {}
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": meta, "spec": spec, "status": status}


def test_the_node_index_matches_the_jobs_after_any_sequence_of_writes():
    """Status writes that leave a Job's nodes alone skip the node index; whatever the order of
    writes, deletes and node changes, ``jobs_on`` answers as a scan of the cached Jobs would."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from nvcre.controller.labels import group_nodes
    from nvcre.controller.runtime.cache import job_nodes

    names = [f"n{i}" for i in range(6)]
    node_sets = st.lists(st.sampled_from(names), max_size=4, unique=True)
    op = st.tuples(st.sampled_from(["a", "b", "c"]), node_sets, node_sets, st.booleans(), st.booleans())

    @settings(max_examples=200, deadline=None)
    @given(st.lists(op, max_size=25))
    def check(ops):
        cache = WatchCache()
        for rv, (name, nodes, ran, annotated, delete) in enumerate(ops, 1):
            if delete:
                cache.drop("Job", "ns", name)
            else:
                cache.put(_job_body(name, nodes, ran, rv, annotated))
        jobs = cache.of_kind("Job")
        for node in names:
            scanned = {("ns", j["metadata"]["name"]) for j in jobs if node in job_nodes(j)}
            unpinned = {("ns", j["metadata"]["name"]) for j in jobs if not (j.get("spec") or {}).get("nodes") and not group_nodes(j)}
            assert set(cache.jobs_on(node)) == scanned | unpinned, (node, ops)
        assert set(cache.jobs_of("ns", "wf")) == {j["metadata"]["name"] for j in jobs}

    check()
