"""The controller process: kopf watches feed a work queue drained by reconcilers.

kopf owns what is tedious to get right: watch streams with resumption, reconnects,
API discovery of CRDs that appear later, and the asyncio plumbing. It only tells us
which object changed; the work queue deduplicates those hints and worker threads run
the level-triggered reconcilers, which read fresh state and write through
``nvcre.kube``. kopf's own persistence, finalizers and event posting are switched
off, so it never writes to our objects. A periodic resync re-queues every
unfinished object as a safety net for a missed watch event.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

import kopf

from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller import workload_state as ws
from nvcre.controller.context import Context
from nvcre.controller.queue import Key, WorkQueue, run_workers
from nvcre.kube.resources import NVCRE_GROUP, NVCRE_VERSION

log = logging.getLogger(__name__)

OWN_KINDS = {
    "certifications": "Certification",
    "workflows": "Workflow",
    "jobs": "Job",
    "workloadruns": "WorkloadRun",
    "bandwidthmeasurements": "BandwidthMeasurement",
    "goodputmeasurements": "GoodputMeasurement",
}
PARENT_OF = {"Workflow": ("Certification", "WorkloadRun", "Workflow"), "Job": ("Workflow",)}


class Controller:
    """Wires watches, the queue, the workers and the reconcilers together."""

    def __init__(self, ctx: Context, reconcilers: dict[str, Callable[[Context, str, str], float | None]]) -> None:
        self.ctx = ctx
        self.reconcilers = reconcilers
        self.queue = WorkQueue()
        self.stop = threading.Event()
        self._node_prints: dict[str, tuple] = {}
        ctx.enqueue = lambda key, delay: self.queue.add_after(key, delay)

    # ------------------------------------------------------------ dispatch
    def handle(self, key: Key) -> float | None:
        kind, namespace, name = key
        reconcile = self.reconcilers.get(kind)
        if reconcile is None:
            return None
        try:
            delay = reconcile(self.ctx, namespace, name)
            self.ctx.metrics.reconciles.labels(kind=kind, result="requeue" if delay is not None else "success").inc()
            return delay
        except Exception:
            self.ctx.metrics.reconciles.labels(kind=kind, result="error").inc()
            raise

    def observe(self, kind: str, body: dict, event_type: str | None) -> None:
        """A watch event: remember the body for metrics, queue the object and its parent."""
        meta = body.get("metadata") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name") or ""
        if event_type == "DELETED":
            self.ctx.cache.drop(kind, namespace, name)
        else:
            self.ctx.cache.put(body)
        self.queue.add((kind, namespace, name))
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") in PARENT_OF.get(kind, ()):
                self.queue.add((ref["kind"], namespace, ref["name"]))

    def observe_workload_piece(self, body: dict) -> None:
        """A pod or batch Job of a workload changed: look at the nvcre Job that owns it."""
        meta = body.get("metadata") or {}
        job = (meta.get("labels") or {}).get(L.JOB)
        if job:
            key = (meta.get("namespace") or "", job)
            if (record := ws.placement_record(body)) is not None:  # a bound pod (a batch Job has no nodeName)
                self.ctx.placements.setdefault(key, {})[record["metadata"]["name"]] = record
            self.queue.add(("Job",) + key)

    def observe_node(self, body: dict) -> None:
        """A node's health-relevant state changed: look at the unfinished Jobs on it.

        Heartbeats (only lastHeartbeatTime moves) are ignored, so a large fleet's status
        updates do not turn into a reconcile storm.
        """
        name = (body.get("metadata") or {}).get("name", "")
        fingerprint = node_fingerprint(body)
        if self._node_prints.get(name) == fingerprint:
            return
        first = name not in self._node_prints
        self._node_prints[name] = fingerprint
        if first:
            return  # the initial listing: nothing changed yet
        for job in self.ctx.cache.of_kind("Job"):
            st = job.get("status") or {}
            if c.is_terminal(st.get("conditions")):
                continue
            if name in ((job.get("spec") or {}).get("nodes") or []) or name in (st.get("nodesRan") or []) or not (job.get("spec") or {}).get("nodes"):
                meta = job["metadata"]
                self.queue.add(("Job", meta.get("namespace", ""), meta["name"]))

    def resync(self) -> None:
        """Safety net: re-queue every object that is not finished yet."""
        while not self.stop.wait(self.ctx.settings.resync_seconds):
            for kind in self.reconcilers:
                for obj in self.ctx.cache.of_kind(kind):
                    if kind in ("BandwidthMeasurement", "GoodputMeasurement") or not c.is_terminal(
                        (obj.get("status") or {}).get("conditions")
                    ):
                        meta = obj["metadata"]
                        self.queue.add((kind, meta.get("namespace", ""), meta["name"]))

    # ------------------------------------------------------------ kopf
    def register(self, registry: kopf.OperatorRegistry) -> None:
        for plural, kind in OWN_KINDS.items():

            def on_own(body, type, _kind=kind, **_):  # noqa: A002 - kopf's argument name
                self.observe(_kind, dict(body), type)

            kopf.on.event(NVCRE_GROUP, NVCRE_VERSION, plural, registry=registry)(on_own)

        def on_pod(body, **_):
            self.observe_workload_piece(dict(body))

        kopf.on.event("", "v1", "pods", labels={L.JOB: kopf.PRESENT}, registry=registry)(on_pod)
        kopf.on.event("batch", "v1", "jobs", labels={L.JOB: kopf.PRESENT}, registry=registry)(on_pod)

        def on_node(body, type, **_):  # noqa: A002
            if type != "DELETED":
                self.observe_node(dict(body))

        kopf.on.event("", "v1", "nodes", labels={"nvidia.com/gpu.present": kopf.PRESENT}, registry=registry)(on_node)

    def start_workers(self) -> None:
        run_workers(self.queue, self.handle, count=self.ctx.settings.workers, stop=self.stop)
        threading.Thread(target=self.resync, name="nvcre-resync", daemon=True).start()

    def shutdown(self) -> None:
        self.stop.set()
        self.queue.close()


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
    auth = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
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

    controller.start_workers()
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
