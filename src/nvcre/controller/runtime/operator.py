"""The controller process: watches fill the one cache and feed a work queue drained by reconcilers.

Two feeds, one cache (``nvcre.controller.runtime.cache``): our own kinds come through kopf,
which handles watch resumption, reconnects and API discovery of CRDs that appear
later; the kinds we only read (GPU Nodes, workload Pods and batch Jobs) come through
``nvcre.kube.watch`` reflectors: paginated lists at one resourceVersion, watches from
it, a relist on 410 Gone, and a known *synced* moment after which reconcilers read
them from the cache only. Every event queues the object (and its owner) once: the
work queue deduplicates, and worker threads run the level-triggered reconcilers.
kopf's own persistence, finalizers and event posting are switched off, so it never
writes to our objects. A periodic resync re-queues every unfinished object as a
safety net for a missed watch event.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import kopf

from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller import workload_state as ws
from nvcre.controller.runtime.cache import slim
from nvcre.controller.runtime.namespaces import ledger_namespace
from nvcre.controller.runtime.queue import Key, Retry, WorkQueue, run_workers
from nvcre.kube import watch
from nvcre.kube.resources import NVCRE_API_VERSION, NVCRE_GROUP, NVCRE_VERSION
from nvcre.objpath import dig

if TYPE_CHECKING:  # the context is built by main and handed in; the runtime never makes one
    from nvcre.controller.context import Context

log = logging.getLogger(__name__)

OWN_KINDS = {
    "certifications": "Certification",
    "workflows": "Workflow",
    "jobs": "Job",
    "workloadruns": "WorkloadRun",
    "bandwidthmeasurements": "BandwidthMeasurement",
    "goodputmeasurements": "GoodputMeasurement",
    "reportexports": "ReportExport",
}
PARENT_OF = {"Workflow": ("Certification", "WorkloadRun", "Workflow"), "Job": ("Workflow",)}
GPU_PRESENT = "nvidia.com/gpu.present"
# A Job is looked at again for its pods', batch Jobs' and nodes' events at most once a
# second per 1024 nodes of its group: a thousand pods ending together are one pass, not a
# thousand, and as a pass reads every node of the group (health, placement), a Job's pass
# work per second stays the same at any group size (4096 pods placed over minutes made
# one 4096-node pass a second, ~2x the CPU per node of a 256-node run).
PIECE_EVENT_SPACING_S = 1.0
SPACING_NODES = 1024


def piece_event_spacing(job: dict | None) -> float:
    """Seconds between event-driven passes of ``job`` (its cached body; None: not cached yet)."""
    nodes = len(dig(job, "spec", "nodes") or ()) if job is not None else 0
    return PIECE_EVENT_SPACING_S * max(1.0, nodes / SPACING_NODES)
READ_KINDS = (  # what the reconcilers only read: reflected into the cache
    watch.WatchSpec("v1", "Node", "Node", label_selector=GPU_PRESENT),
    watch.WatchSpec("v1", "Pod", "Pod", label_selector=L.JOB),
    watch.WatchSpec("batch/v1", "Job", "batch.Job", label_selector=L.JOB),
)
READINESS = "NodeReadiness"  # the ledger: reflected only so its gauge follows creates and deletes
# RoleBindings: reflected only for their events (a Workflow waiting for namespace permissions
# is woken by one), never cached: a cluster may hold many and no reconciler reads them
BINDINGS = watch.WatchSpec("rbac.authorization.k8s.io/v1", "RoleBinding", "RoleBinding")


class Controller:
    """Wires watches, the queue, the workers and the reconcilers together."""

    def __init__(self, ctx: Context, reconcilers: dict[str, Callable[[Context, str, str], float | None]],
                 followers: dict[str, Callable[[Context, dict], list[Key]]] | None = None) -> None:
        """``followers``: per kind, the other objects an event of it wakes (a Certification's
        report exports); given by ``main`` so the runtime imports no reconciler."""
        self.ctx = ctx
        self.reconcilers = reconcilers
        self.followers = followers or {}
        self.queue = WorkQueue()
        ctx.metrics.queue.attach(self.queue)
        self.stop = threading.Event()
        self._node_prints: dict[str, tuple] = {}
        self.reflectors: list[watch.Reflector] = []
        ctx.enqueue = lambda key, delay: self.queue.add_after(key, delay)

    # ------------------------------------------------------------ dispatch
    def handle(self, key: Key) -> float | None:
        kind, namespace, name = key
        reconcile = self.reconcilers.get(kind)
        if reconcile is None:
            return None
        started = time.monotonic()
        try:
            delay = reconcile(self.ctx, namespace, name)
            self.ctx.metrics.reconciles.labels(kind=kind, result="requeue" if delay is not None else "success").inc()
            return delay
        except Retry:  # expected to pass: the queue backs off (a requeue, not an error)
            self.ctx.metrics.reconciles.labels(kind=kind, result="requeue").inc()
            raise
        except Exception:
            self.ctx.metrics.reconciles.labels(kind=kind, result="error").inc()
            raise
        finally:
            self.ctx.metrics.reconcile_duration.labels(kind=kind).observe(time.monotonic() - started)

    def observe(self, kind: str, body: dict, event_type: str | None) -> None:
        """A watch event of our own kinds: cache the body, queue the object and its parent."""
        meta = body.get("metadata") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name") or ""
        if event_type == "DELETED":
            self.ctx.cache.drop(kind, namespace, name)
            self.ctx.forget(meta.get("uid"), namespace, name, kind=kind)
        else:
            self.ctx.cache.put(body)
        self.queue.add((kind, namespace, name))
        for key in self.followers[kind](self.ctx, body) if kind in self.followers else ():
            self.queue.add(key)  # e.g. a Certification's exports snapshot and deliver when it ends
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") in PARENT_OF.get(kind, ()):
                self.queue.add((ref["kind"], namespace, ref["name"]))

    # ------------------------------------------------------------ the reflectors' sink
    def replace(self, kind_key: str, objects: list[dict], namespace: str | None = None) -> None:
        """A reflector's complete list (first sync or relist after 410): cache it, then treat each
        object, and each one that disappeared, as an event."""
        if kind_key == BINDINGS.key:  # a list is not a change: forget the answers, wake the waiting once
            self.observe_bindings(namespace, changed=False)
            return
        first = kind_key in ("Node", "Pod") and not self.ctx.cache.synced(kind_key, namespace)
        gone = self.ctx.cache.replace(kind_key, objects, namespace)
        if first:  # the Jobs' reads now come from the cache: look at each once (see wake_unfinished_jobs)
            self.wake_unfinished_jobs(None if kind_key == "Node" else namespace)
        if kind_key == "Node":  # one wake of the waiting objects for the whole list, not one per node
            if any([self.observe_node(obj, wake=False) for obj in objects + gone]):
                self.wake_waiting()
            return
        for obj in objects:
            self._dispatch(kind_key, obj)
        for obj in gone:
            self._dispatch(kind_key, obj)

    def apply(self, kind_key: str, event_type: str, obj: dict) -> None:
        if kind_key == BINDINGS.key:
            self.observe_bindings(dig(obj, "metadata", "namespace") or "")
            return
        last_end = self.ctx.cache.apply(kind_key, event_type, obj)
        self._dispatch(kind_key, obj, last_end=last_end)

    def _dispatch(self, kind_key: str, obj: dict, *, last_end: bool = False) -> None:
        if kind_key == READINESS:
            return  # no reconciler reads it; the cache alone feeds nvcre_node_readiness_status
        if kind_key == "Node":
            self.observe_node(obj)
        else:
            self.observe_workload_piece(obj, last_end=last_end)

    def observe_workload_piece(self, body: dict, *, last_end: bool = False) -> None:
        """A pod or batch Job of a workload changed: look at the nvcre Job that owns it, after
        the group's event spacing; at once for the end of its last running pod (``last_end``):
        the verdict waits for exactly that."""
        meta = body.get("metadata") or {}
        job = dig(meta.get("labels"), L.JOB)
        if job:
            key = (meta.get("namespace") or "", job)
            if (record := ws.placement_record(body)) is not None:  # a bound pod (a batch Job has no nodeName)
                self.ctx.placements.setdefault(key, {})[record["metadata"]["name"]] = record
            self.queue.add(("Job",) + key, spacing=0.0 if last_end else piece_event_spacing(self.ctx.cache.get("Job", *key)))

    def observe_node(self, body: dict, *, wake: bool = True) -> bool:
        """A node's health-relevant state changed: look at the unfinished Jobs on it, and at
        the objects waiting for target nodes (it may have joined or become eligible). True
        when it changed.

        Heartbeats (only lastHeartbeatTime moves) are ignored, so a large fleet's status
        updates do not turn into a reconcile storm. A node's first sighting has no Job on it
        yet; it wakes only the waiting objects (``wake``: the caller wakes them once per list).
        """
        name = (dig(body.get("metadata"), "name") or "")
        fingerprint = node_fingerprint(body)
        if self._node_prints.get(name) == fingerprint:
            return False
        first = name not in self._node_prints
        self._node_prints[name] = fingerprint
        if not first:
            for namespace, job_name in self.ctx.cache.jobs_on(name):  # an index, not a scan of every Job
                job = self.ctx.cache.get("Job", namespace, job_name)
                if job is not None and not c.is_terminal(dig(job, "status", "conditions")):
                    self.queue.add(("Job", namespace, job_name), spacing=piece_event_spacing(job))
        if wake:
            self.wake_waiting()
        return True

    def observe_bindings(self, namespace: str | None, *, changed: bool = True) -> None:
        """A RoleBinding in ``namespace`` changed (or a list of them arrived; None: of every
        namespace): the controller's permissions there may have changed, so forget the cached
        answers and queue the Workflows waiting for them (a bounded index, usually empty)."""
        self.ctx.access.changed(namespace, settle=changed)
        for key in self.ctx.access_waiters(namespace):
            self.queue.add(key)

    def wake_unfinished_jobs(self, namespace: str | None) -> None:
        """Queue every unfinished Job (of ``namespace``; None: all) whose Pods and Nodes have both
        synced, once, when the later of the two first lists arrives: a pass before read them
        live, and a change between that read and the list sent no event. This replaces each
        running Job polling until the watches synced."""
        if not self.ctx.cache.synced("Node"):
            return
        for job in self.ctx.cache.of_kind("Job"):
            meta = job["metadata"]
            ns = meta.get("namespace") or ""
            if ((namespace is None or ns == namespace) and self.ctx.cache.synced("Pod", ns)
                    and not c.is_terminal(dig(job, "status", "conditions"))):
                self.queue.add(("Job", ns, meta["name"]))

    def wake_waiting(self) -> None:
        """Queue the Certifications and WorkloadRuns waiting for target nodes (a bounded index,
        usually empty: never every object)."""
        for key in self.ctx.waiting_for_nodes():
            self.queue.add(key)

    def resync(self) -> None:
        """Safety net: re-queue every object that is not finished yet."""
        while not self.stop.wait(self.ctx.settings.resync_seconds):
            for kind in self.reconcilers:
                for obj in self.ctx.cache.of_kind(kind):
                    if kind in ("BandwidthMeasurement", "GoodputMeasurement") or not c.is_terminal(
                        dig(obj, "status", "conditions")
                    ):
                        meta = obj["metadata"]
                        self.queue.add((kind, meta.get("namespace", ""), meta["name"]))

    # ------------------------------------------------------------ kopf
    def register(self, registry: kopf.OperatorRegistry) -> None:
        for plural, kind in OWN_KINDS.items():

            def on_own(body, type, _kind=kind, **_):  # noqa: A002 - kopf's argument name
                self.observe(_kind, dict(body), type)

            kopf.on.event(NVCRE_GROUP, NVCRE_VERSION, plural, registry=registry)(on_own)

    def start_workers(self, *, reflect: bool = True, namespaces: list[str] | None = None) -> None:
        run_workers(self.queue, self.handle, count=self.ctx.settings.workers, stop=self.stop)
        threading.Thread(target=self.resync, name="nvcre-resync", daemon=True).start()
        if reflect:
            self.reflectors = [watch.Reflector(self.ctx.kube, spec, self, shrink=slim) for spec in reflected_kinds(namespaces)]
            watch.start(self.reflectors)

    def shutdown(self) -> None:
        self.stop.set()
        for reflector in self.reflectors:
            reflector.stop.set()
        self.queue.close()


def reflected_kinds(namespaces: list[str] | None) -> list[watch.WatchSpec]:
    """Nodes cluster-wide; workload pieces and RoleBindings cluster-wide, or per namespace when
    the controller is namespaced; the NodeReadiness ledger in the controller's namespace, so a
    deleted record's series goes without a restart."""
    specs = []
    for spec in READ_KINDS + (BINDINGS,):
        if spec.kind == "Node" or not namespaces:
            specs.append(spec)
        else:
            specs += [watch.WatchSpec(spec.api_version, spec.kind, spec.key, spec.label_selector, ns) for ns in namespaces]
    specs.append(watch.WatchSpec(NVCRE_API_VERSION, READINESS, READINESS, namespace=ledger_namespace()))
    return specs


def node_fingerprint(node: dict) -> tuple:
    """What node-health detectors look at, without the heartbeat timestamps."""
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    conditions = tuple(sorted((x.get("type"), x.get("status"), x.get("reason")) for x in status.get("conditions") or []))
    taints = tuple(sorted((t.get("key"), t.get("value"), t.get("effect")) for t in spec.get("taints") or []))
    return (
        tuple(sorted((meta.get("labels") or {}).items())),
        tuple(sorted((meta.get("annotations") or {}).items())),
        bool(spec.get("unschedulable")),
        taints,
        conditions,
        tuple(sorted((status.get("allocatable") or {}).items())),
        tuple(sorted((status.get("capacity") or {}).items())),
    )


def connection_info(ctx: Context) -> kopf.ConnectionInfo:
    """kopf logs in with the same credentials as our client (kubeconfig or in-cluster)."""
    cfg = ctx.kube.configuration
    token = None
    auth = dig(cfg.api_key, "authorization") or dig(cfg.api_key, "BearerToken")
    if auth:
        token = auth.split(" ", 1)[1] if auth.lower().startswith("bearer ") else auth
    return kopf.ConnectionInfo(
        server=cfg.host,
        ca_path=cfg.ssl_ca_cert,
        insecure=not cfg.verify_ssl,
        certificate_path=cfg.cert_file,
        private_key_path=cfg.key_file,
        token=token,
        username=cfg.username or None,
        password=cfg.password or None,
    )


def run(controller: Controller, *, namespaces: list[str] | None, stop_flag: threading.Event | None = None) -> None:
    """Run until stopped (signal or ``stop_flag``); blocks the calling thread."""
    registry = kopf.OperatorRegistry()
    controller.register(registry)

    @kopf.on.login(registry=registry)
    def _login(**_):
        return connection_info(controller.ctx)

    @kopf.on.startup(registry=registry)
    def _configure(settings: kopf.OperatorSettings, **_):
        settings.posting.enabled = False
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330
        settings.networking.request_timeout = 60
        settings.scanning.disabled = False
        settings.execution.max_workers = 4

    controller.start_workers(namespaces=namespaces)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    stop_future: asyncio.Future | None = None
    if stop_flag is not None:
        stop_future = loop.create_future()

        def watch_flag() -> None:
            stop_flag.wait()
            loop.call_soon_threadsafe(lambda: stop_future.done() or stop_future.set_result(None))

        threading.Thread(target=watch_flag, daemon=True).start()
    try:
        loop.run_until_complete(
            kopf.operator(
                registry=registry,
                standalone=True,
                clusterwide=not namespaces,
                namespaces=namespaces or [],
                stop_flag=stop_future,
            )
        )
    finally:
        controller.shutdown()
        loop.close()
