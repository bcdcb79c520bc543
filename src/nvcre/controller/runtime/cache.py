"""The controller's one watch cache: the latest body of every object it reads.

Fed by the watches (Nodes, workload Pods and batch Jobs through ``nvcre.kube.watch``
reflectors; our own kinds through kopf), read by every reconciler and by the metrics
collector, so no reconcile pass lists anything. Indexes answer the questions the
reconcilers ask per pass in O(answer) instead of a scan: the pods and batch Jobs of an
nvcre Job, the Jobs of a Workflow, the unfinished Jobs on a node.

Bodies are stored as delivered, minus what no reconciler reads (``slim``): managedFields,
a Node's image list, and a Pod's spec beyond the fields the controller reads
(``POD_SPEC_READ``), with keys and short strings interned (``shared``). The rest of a
pod spec is the rendered template, and a pinned group's template names every node of
the group in its node affinity, so whole pods of a full-scale run held ``nodes x
nodes`` names (136 MB at 1024 nodes, ~2 GB at 4096; ``bench/controller_memory.py``).
``test_cache_slim.py`` records what the reconcilers read of a pod and checks that it
survives. Bodies are handed out without copying: callers treat them as read-only (a
watch event always brings a new dict, so a stored body never changes under a reader).
A kind counts as *synced* once its first complete list arrived; until then readers
fall back to a live read.
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict

from nvcre.controller import labels as L
from nvcre.controller import workload_state as ws
from nvcre.objpath import dig

Key = tuple[str, str]  # (namespace, name)


def kind_key(obj: dict) -> str:
    """The cache's name for an object's kind: ``batch.Job`` apart from nvcre's ``Job``."""
    api = str(obj.get("apiVersion") or "")
    kind = str(obj.get("kind") or "")
    return "batch.Job" if api.startswith("batch/") and kind == "Job" else kind


#: what the controller reads of a pod's spec (``workload_state``, ``faults``, ``decide/job_end``,
#: ``measurements``): where it ran, how it restarts, the containers' names and resources
#: (GPU ranks, the main container) and its claims; the rest (affinity, volumes, commands,
#: env, probes) is the rendered template, which the controller already has.
POD_SPEC_READ = frozenset({"nodeName", "hostname", "subdomain", "restartPolicy", "resourceClaims", "schedulingGates",
                           "containers", "initContainers"})
CONTAINER_READ = frozenset({"name", "resources", "restartPolicy"})
SHARED_MAX = 96  # strings up to this long are interned (names, label values, condition reasons)


def slim(obj: dict) -> dict:
    """The body without what no reconciler reads (a shallow copy where something goes)."""
    meta = obj.get("metadata") or {}
    if "managedFields" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    if obj.get("kind") == "Node" and "images" in (obj.get("status") or {}):
        obj = {**obj, "status": {k: v for k, v in obj["status"].items() if k != "images"}}
    if obj.get("kind") == "Pod" and isinstance(obj.get("spec"), dict):
        obj = {**obj, "spec": _pod_spec(obj["spec"])}
    if obj.get("kind") in ("Node", "Pod"):
        obj = shared(obj)
    return obj


def shared(obj):
    """A copy whose keys and short strings are interned: each watch event is decoded on its
    own, so without this every Node and Pod holds its own copy of the same label keys,
    condition types and values (``"nvidia.com/gpu.product"``, ``"True"``): ~40 % of them."""
    if isinstance(obj, dict):
        return {sys.intern(k) if type(k) is str else k: shared(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [shared(v) for v in obj]
    if type(obj) is str and len(obj) <= SHARED_MAX:
        return sys.intern(obj)
    return obj


def _pod_spec(spec: dict) -> dict:
    out = {k: v for k, v in spec.items() if k in POD_SPEC_READ}
    for key in ("containers", "initContainers"):
        if isinstance(out.get(key), list):
            out[key] = [{k: v for k, v in c.items() if k in CONTAINER_READ} if isinstance(c, dict) else c for c in out[key]]
    return out


def job_nodes(job: dict) -> set[str]:
    """The nodes an nvcre Job runs on: its pinned group, and where its pods ran."""
    spec, st = job.get("spec") or {}, job.get("status") or {}
    return set(spec.get("nodes") or L.group_nodes(job)) | set(st.get("nodesRan") or [])


class WatchCache:
    """Thread-safe store of watched objects by kind key and (namespace, name), with indexes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, dict[Key, dict]] = defaultdict(dict)
        self._synced: set[tuple[str, str | None]] = set()  # (kind, namespace or None for all)
        self._pieces: dict[Key, set[tuple[str, str]]] = defaultdict(set)  # (ns, nvcre Job) -> {(kind key, name)}
        self._of_workflow: dict[Key, set[str]] = defaultdict(set)  # (ns, Workflow) -> nvcre Job names
        self._on_node: dict[str, set[Key]] = defaultdict(set)  # node -> nvcre Jobs
        self._unpinned: set[Key] = set()  # nvcre Jobs without a node list (Unpinned placement)
        self._unended: dict[Key, set[str]] = defaultdict(set)  # (ns, nvcre Job) -> its pods that have not ended

    # ------------------------------------------------------------ writes
    def put(self, obj: dict) -> bool:
        """Store the body; True when it is the end of the last of its nvcre Job's pods that
        had not ended (the pass the Job's verdict waits for)."""
        obj = slim(obj)
        kind = kind_key(obj)
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace") or "", meta.get("name") or "")
        job = (key[0], dig(meta.get("labels"), L.JOB) or "")
        with self._lock:
            old = self._objects[kind].get(key)
            if old is not None:
                old_rv, new_rv = _rv(old), _rv(obj)
                if old_rv and new_rv and new_rv < old_rv:
                    return False  # an older copy (a status write's answer arriving after the watch's newer event)
            # a Job's status write leaves its nodes as they were: 2 x 4096 index updates saved per write
            nodes = kind != "Job" or old is None or _node_fields(old) != _node_fields(obj)
            if old is not None:
                self._unindex(kind, key, old, nodes=nodes)
            self._objects[kind][key] = obj
            self._index(kind, key, obj, nodes=nodes)
            return (kind == "Pod" and bool(job[1]) and old is not None and ws.pod_ended(old) is None and ws.pod_ended(obj) is not None
                    and not self._unended.get(job))

    def drop(self, kind: str, namespace: str, name: str) -> None:
        key = (namespace or "", name)
        with self._lock:
            old = self._objects[kind].pop(key, None)
            if old is not None:
                self._unindex(kind, key, old)

    def replace(self, kind: str, objects: list[dict], namespace: str | None = None) -> list[dict]:
        """A complete list of a kind, cluster-wide or of one namespace (first sync or relist);
        returns the bodies that disappeared."""
        fresh = {}
        for obj in objects:
            obj = slim(obj)
            meta = obj.get("metadata") or {}
            fresh[(meta.get("namespace") or "", meta.get("name") or "")] = obj
        with self._lock:
            store = self._objects[kind]
            scope = [k for k in store if namespace is None or k[0] == namespace]
            gone = [store[k] for k in scope if k not in fresh]
            for key in scope:
                self._unindex(kind, key, store.pop(key))
            store.update(fresh)
            for key, obj in fresh.items():
                self._index(kind, key, obj)
            self._synced.add((kind, namespace))
        return gone

    def apply(self, kind: str, event_type: str, obj: dict) -> bool:
        """A watch event; True when it ended the last running pod of an nvcre Job (``put``)."""
        if event_type == "DELETED":
            meta = obj.get("metadata") or {}
            self.drop(kind, meta.get("namespace") or "", meta.get("name") or "")
            return False
        return self.put(obj)

    # ------------------------------------------------------------ reads
    def synced(self, kind: str, namespace: str | None = None) -> bool:
        """Whether a complete list of the kind (cluster-wide, or of ``namespace``) has arrived."""
        with self._lock:
            return (kind, None) in self._synced or (namespace is not None and (kind, namespace) in self._synced)

    def get(self, kind: str, namespace: str | None, name: str) -> dict | None:
        with self._lock:
            return self._objects[kind].get((namespace or "", name))

    def of_kind(self, kind: str) -> list[dict]:
        with self._lock:
            return list(self._objects[kind].values())

    def count(self, kind: str) -> int:
        with self._lock:
            return len(self._objects[kind])

    def nodes(self, names: list[str] | set[str]) -> list[dict]:
        """The named Nodes that are cached, in the order asked."""
        with self._lock:
            store = self._objects["Node"]
            return [n for n in (store.get(("", name)) for name in names) if n is not None]

    def pieces_of(self, namespace: str, job: str, kind: str) -> list[dict]:
        """The pods (``Pod``) or batch Jobs (``batch.Job``) labelled with an nvcre Job."""
        with self._lock:
            store = self._objects[kind]
            found = (store.get((namespace, name)) for k, name in self._pieces.get((namespace, job), ()) if k == kind)
            return sorted((o for o in found if o is not None), key=lambda o: o["metadata"]["name"])

    def jobs_of(self, namespace: str, workflow: str) -> dict[str, dict]:
        """The nvcre Jobs labelled with a Workflow, by name."""
        with self._lock:
            store = self._objects["Job"]
            names = self._of_workflow.get((namespace, workflow), ())
            return {n: store[(namespace, n)] for n in names if (namespace, n) in store}

    def jobs_on(self, node: str) -> list[Key]:
        """The nvcre Jobs pinned to or run on a node, plus every Unpinned one."""
        with self._lock:
            return sorted(self._on_node.get(node, set()) | self._unpinned)

    # ------------------------------------------------------------ indexes
    def _index(self, kind: str, key: Key, obj: dict, *, nodes: bool = True) -> None:
        labels = dig(obj, "metadata", "labels") or {}
        if kind in ("Pod", "batch.Job") and labels.get(L.JOB):
            self._pieces[(key[0], labels[L.JOB])].add((kind, key[1]))
            if kind == "Pod" and ws.pod_ended(obj) is None:
                self._unended[(key[0], labels[L.JOB])].add(key[1])
        elif kind == "Job":
            if labels.get(L.WORKFLOW):
                self._of_workflow[(key[0], labels[L.WORKFLOW])].add(key[1])
            if not nodes:
                return
            for node in job_nodes(obj):
                self._on_node[node].add(key)
            if not dig(obj, "spec", "nodes") and not L.group_nodes(obj):
                self._unpinned.add(key)

    def _unindex(self, kind: str, key: Key, obj: dict, *, nodes: bool = True) -> None:
        labels = dig(obj, "metadata", "labels") or {}
        if kind in ("Pod", "batch.Job") and labels.get(L.JOB):
            _discard(self._pieces, (key[0], labels[L.JOB]), (kind, key[1]))
            if kind == "Pod":
                _discard(self._unended, (key[0], labels[L.JOB]), key[1])
        elif kind == "Job":
            if labels.get(L.WORKFLOW):
                _discard(self._of_workflow, (key[0], labels[L.WORKFLOW]), key[1])
            if not nodes:
                return
            for node in job_nodes(obj):
                _discard(self._on_node, node, key)
            self._unpinned.discard(key)


def _node_fields(job: dict) -> tuple:
    """What ``job_nodes`` and the Unpinned index read of a Job."""
    return (dig(job, "spec", "nodes"), dig(job, "metadata", "annotations", L.GROUP_NODES), dig(job, "status", "nodesRan"))


def _discard(index: dict, key, value) -> None:
    members = index.get(key)
    if members is not None:
        members.discard(value)
        if not members:
            del index[key]


def _rv(obj: dict) -> int:
    try:
        return int(dig(obj, "metadata", "resourceVersion") or 0)
    except ValueError:
        return 0
