"""Prometheus metrics on /metrics, named and labelled by the Prometheus conventions.

The status gauges are a projection of the latest status of each object, not state
kept beside it, so they cannot drift from what ``kubectl get`` shows: a Certification,
Workflow or Job contributes 1 to the series of its phase and 0 to the others. A Job
that timed out counts as failed only, even if a writer left InProgress True beside
it. One series per live object is what kube-state-metrics does too: bounded by the
objects in the cluster, and gone when they are.

Everything else has bounded labels by default: NCCL bandwidth is aggregated per
workflow (the slowest and fastest group's peak bus bandwidth, in bytes per second,
not one series per job and message size), goodput per workflow, counters per
namespace and workflow. Per-node hardware-failure series are opt-in and capped
(``node_detail_limit`` distinct nodes; the rest count under ``node="_other"``); the
one always-on per-node gauge is the ledger's readiness (ledger_metrics.py: one series
per node, stage label bounded). The reference's per-measurement NCCL gauges are
opt-in (``reference_compatible``, reference_metrics.py). The work queue uses client-go's
``workqueue_*`` names and buckets, so Go-operator queue dashboards work; reconcile
passes are ``nvcre_reconcile_total`` and ``nvcre_reconcile_duration_seconds`` (the
reference's names, not controller-runtime's ``controller_runtime_reconcile_*``). No
``_created`` series; the process collector is on.
Design record: docs/design/170-install-metrics-logs.md.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from prometheus_client import (
    CollectorRegistry,
    Counter,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller.reference_metrics import _float  # one reading of a status figure for both exporters
from nvcre.objpath import dig

STATUS_VALUES = ("in_progress", "succeeded", "failed")
_PHASE_TO_STATUS = {c.IN_PROGRESS: "in_progress", c.SUCCEEDED: "succeeded", c.FAILED: "failed"}
GB = 1e9  # nccl-tests reports algbw and busbw in GB/s (10^9 bytes per second)
TFLOPS = 1e12
OTHER_NODES = "_other"
QUEUE_NAME = "nvcre"
# 10 ms .. ~20 s, doubling: a reconcile is an API round trip or a few.
RECONCILE_BUCKETS = tuple(0.01 * 2**i for i in range(12))
# client-go's workqueue buckets: 1 ns .. 10^9 ns (ExponentialBuckets(10e-9, 10, 10)).
QUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(10))

# metric name -> (GoodputMeasurement status field, scale to the base unit, HELP)
GOODPUT_GAUGES = {
    "nvcre_goodput_ratio": ("result", 1.0, "Goodput: the share of wall-clock training time spent on useful steps (0..1)."),
    "nvcre_goodput_gpu_flops_per_second": (
        "avgTFLOPSPerGPU", TFLOPS, "Average model throughput per GPU over the non-warmup steps, in FLOP/s."),
    "nvcre_goodput_step_duration_seconds": ("avgStepTimeSec", 1.0, "Average training step time over the non-warmup steps."),
    "nvcre_goodput_training_duration_seconds": ("trainingTimeSec", 1.0, "Wall-clock time of the training run."),
    "nvcre_goodput_lost_work_duration_seconds": (
        "lostWorkTimeSec", 1.0, "Training time lost to work redone after restarts (steps since the last checkpoint)."),
    "nvcre_goodput_reschedule_duration_seconds": ("rescheduleTimeSec", 1.0, "Time spent waiting for pods to be rescheduled after a failure."),
    "nvcre_goodput_resume_duration_seconds": ("resumeTimeSec", 1.0, "Time spent loading the checkpoint when resuming."),
    "nvcre_goodput_checkpoint_save_duration_seconds": ("checkpointSaveTimeSec", 1.0, "Time spent writing checkpoints."),
}


def status_of(obj: dict) -> str | None:
    """in_progress | succeeded | failed for an object's conditions (Failed wins)."""
    phase = c.phase_of(dig(obj, "status", "conditions"))
    return _PHASE_TO_STATUS.get(phase) if phase else None


class ObjectStore:
    """The latest body of each watched object, keyed by (kind, namespace, name)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[tuple[str, str, str], dict] = {}

    def put(self, obj: dict) -> None:
        meta = obj.get("metadata", {})
        with self._lock:
            self._objects[(obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))] = obj

    def get(self, kind: str, namespace: str, name: str) -> dict | None:
        with self._lock:
            return self._objects.get((kind, namespace, name))

    def drop(self, kind: str, namespace: str, name: str) -> None:
        with self._lock:
            self._objects.pop((kind, namespace, name), None)

    def of_kind(self, kind: str) -> list[dict]:
        with self._lock:
            return [o for (k, _, _), o in self._objects.items() if k == kind]


def _label(obj: dict, key: str) -> str:
    return dig(obj, "metadata", "labels", key) or ""


def peak_bandwidth(results: list[dict], field: str) -> float | None:
    """The measurement's figure: the largest ``field`` over its message sizes, in GB/s
    (the reference's busBandwidthGBps is max(busBW over all sizes))."""
    values = [v for row in results or [] if (v := _float(row.get(field))) is not None]
    return max(values) if values else None


class StatusCollector(Collector):
    """Projects the store's objects into gauges on every scrape."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def collect(self) -> Iterable:
        yield from self._phase_gauge(
            "nvcre_certification_status", "Phase of each Certification: 1 for its current phase, 0 for the others.",
            "Certification", ["namespace", "certification"], lambda o: [],
        )
        yield from self._phase_gauge(
            "nvcre_workflow_status", "Phase of each Workflow (one category run): 1 for its current phase, 0 for the others.",
            "Workflow", ["namespace", "workflow", "certification"], lambda o: [_label(o, L.CERTIFICATION)],
        )
        yield from self._phase_gauge(
            "nvcre_job_status",
            "Phase of each Job (one node group's workload): 1 for its current phase, 0 for the others; a timed-out Job is failed.",
            "Job", ["namespace", "job", "workflow"], lambda o: [_label(o, L.WORKFLOW)],
        )
        yield from self._bandwidth()
        yield from self._goodput()

    def _phase_gauge(self, name, doc, kind, label_names, extra) -> Iterable:
        family = GaugeMetricFamily(name, doc, labels=[*label_names, "status"])
        for obj in self.store.of_kind(kind):
            current = status_of(obj)
            if current is None:
                continue
            meta = obj["metadata"]
            base = [meta.get("namespace", ""), meta.get("name", ""), *extra(obj)]
            for value in STATUS_VALUES:
                family.add_metric([*base, value], 1.0 if value == current else 0.0)
        yield family

    def _bandwidth(self) -> Iterable:
        names = ["namespace", "workflow", "nccl_test"]
        doc = "peak (largest over message sizes) NCCL {what} bandwidth among the workflow's measurements, in bytes per second."
        fams = {
            ("busBW", min): GaugeMetricFamily("nvcre_nccl_bus_bandwidth_min_bytes_per_second", "Lowest " + doc.format(what="bus"), labels=names),
            ("busBW", max): GaugeMetricFamily("nvcre_nccl_bus_bandwidth_max_bytes_per_second", "Highest " + doc.format(what="bus"), labels=names),
            ("algBW", min): GaugeMetricFamily("nvcre_nccl_algorithm_bandwidth_min_bytes_per_second", "Lowest " + doc.format(what="algorithm"), labels=names),
            ("algBW", max): GaugeMetricFamily("nvcre_nccl_algorithm_bandwidth_max_bytes_per_second", "Highest " + doc.format(what="algorithm"), labels=names),
        }
        count = GaugeMetricFamily("nvcre_nccl_measurements", "BandwidthMeasurements with results, per workflow and NCCL test.", labels=names)
        peaks: dict[tuple[str, str, str], dict[str, list[float]]] = {}
        for obj in self.store.of_kind("BandwidthMeasurement"):
            meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
            key = (meta.get("namespace", ""), _label(obj, L.WORKFLOW), spec.get("testType", "") or "")
            for field in ("busBW", "algBW"):
                if (v := peak_bandwidth(status.get("results") or [], field)) is not None:
                    peaks.setdefault(key, {"busBW": [], "algBW": []})[field].append(v * GB)
        for key, by_field in sorted(peaks.items()):
            count.add_metric(list(key), float(max(len(v) for v in by_field.values())))
            for (field, pick), family in fams.items():
                if by_field[field]:
                    family.add_metric(list(key), pick(by_field[field]))
        yield from fams.values()
        yield count

    def _goodput(self) -> Iterable:
        """Per workflow; with several measurements in one workflow, the worst value."""
        names = ["namespace", "workflow"]
        families = {m: GaugeMetricFamily(m, doc, labels=names) for m, (_, _, doc) in GOODPUT_GAUGES.items()}
        worst: dict[str, dict[tuple[str, str], float]] = {m: {} for m in GOODPUT_GAUGES}
        for obj in self.store.of_kind("GoodputMeasurement"):
            status = obj.get("status") or {}
            key = (obj["metadata"].get("namespace", ""), _label(obj, L.WORKFLOW))
            for metric, (field, scale, _) in GOODPUT_GAUGES.items():
                if (v := _float(status.get(field))) is None:
                    continue
                v *= scale
                higher_is_better = metric in ("nvcre_goodput_ratio", "nvcre_goodput_gpu_flops_per_second")
                seen = worst[metric].get(key)
                if seen is None or (v < seen if higher_is_better else v > seen):
                    worst[metric][key] = v
        for metric, values in worst.items():
            for key, v in sorted(values.items()):
                families[metric].add_metric(list(key), v)
        yield from families.values()


class LabelsFor:
    """A counter whose callers pass detailed labels; only the bounded ones are kept.

    The reconcilers say what happened to which job (and node); which of those
    become series is decided here, in one place, by the exposition policy.
    """

    def __init__(self, counter: Counter, keep: tuple[str, ...], nodes: NodeBudget | None = None) -> None:
        self.counter, self.keep, self.nodes = counter, keep, nodes

    def labels(self, **labels: str):
        picked = {k: labels.get(k, "") for k in self.keep}
        if self.nodes is not None:
            picked["node"] = self.nodes.label(labels.get("node", ""))
        return self.counter.labels(**picked)


class NodeBudget:
    """The first ``limit`` distinct node names get their own series; later ones share one."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def label(self, node: str) -> str:
        with self._lock:
            if node in self._seen:
                return node
            if len(self._seen) < self.limit:
                self._seen.add(node)
                return node
        return OTHER_NODES


class QueueMetrics:
    """client-go's workqueue metrics (k8s.io/client-go/util/workqueue) for our queue."""

    def __init__(self, registry: CollectorRegistry, name: str = QUEUE_NAME) -> None:
        self.name = name
        self._adds = Counter("workqueue_adds", "Total number of adds handled by the work queue.", ["name"], registry=registry).labels(name)
        self._retries = Counter("workqueue_retries", "Total number of retries (error backoffs) handled by the work queue.", ["name"], registry=registry).labels(name)
        self._wait = Histogram(
            "workqueue_queue_duration_seconds", "How long in seconds an item stays in the work queue before being requested.",
            ["name"], buckets=QUEUE_BUCKETS, registry=registry,
        ).labels(name)
        self._work = Histogram(
            "workqueue_work_duration_seconds", "How long in seconds processing an item from the work queue takes.",
            ["name"], buckets=QUEUE_BUCKETS, registry=registry,
        ).labels(name)
        self.queue = None  # set by attach(): depth and unfinished work are read at scrape time
        registry.register(_QueueStateCollector(self))

    def attach(self, queue) -> None:
        self.queue = queue
        queue.observer = self

    def added(self) -> None:
        self._adds.inc()

    def waited(self, seconds: float) -> None:
        self._wait.observe(max(seconds, 0.0))

    def worked(self, seconds: float) -> None:
        self._work.observe(max(seconds, 0.0))

    def retried(self) -> None:
        self._retries.inc()


class _QueueStateCollector(Collector):
    def __init__(self, metrics: QueueMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterable:
        queue, name = self.metrics.queue, self.metrics.name
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of the work queue (items ready for a worker).", labels=["name"])
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work are in progress and not yet observed by work_duration; large values mean stuck workers.",
            labels=["name"],
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds", "How many seconds the longest running worker has been on its item.", labels=["name"],
        )
        if queue is not None:
            running = queue.running_seconds()
            depth.add_metric([name], float(queue.depth()))
            unfinished.add_metric([name], sum(running))
            longest.add_metric([name], max(running, default=0.0))
        yield depth
        yield unfinished
        yield longest


class ControllerMetrics:
    """The registry served on /metrics: projected gauges, counters, histograms, process."""

    def __init__(self, store: ObjectStore | None = None, node_detail_limit: int = 0, reference_compatible: bool = False) -> None:
        disable_created_metrics()  # no `_created` series beside every counter and histogram
        self.store = store or ObjectStore()
        self.registry = CollectorRegistry()
        self.registry.register(StatusCollector(self.store))
        from nvcre.controller.ledger_metrics import ReadinessCollector

        self.registry.register(ReadinessCollector(self.store))
        if reference_compatible:  # the reference's per-measurement GB/s gauges, opt-in (cardinality)
            from nvcre.controller.reference_metrics import ReferenceNcclCollector

            self.registry.register(ReferenceNcclCollector(self.store))
        self.reconciles = Counter(
            "nvcre_reconcile", "Reconcile passes by kind and result (success, requeue: asked to run again later, error).",
            ["kind", "result"], registry=self.registry,
        )
        self.reconcile_duration = Histogram(
            "nvcre_reconcile_duration_seconds", "Time one reconcile pass of an object took, by kind.",
            ["kind"], buckets=RECONCILE_BUCKETS, registry=self.registry,
        )
        self.workloads_created = LabelsFor(
            Counter(
                "nvcre_workloads_created", "Workload objects (batch Jobs or TrainJobs) the controller created, per workflow.",
                ["namespace", "workflow"], registry=self.registry,
            ),
            keep=("namespace", "workflow"),
        )
        node_labels = ["namespace", "workflow"] + (["node"] if node_detail_limit > 0 else [])
        self.hardware_failures = LabelsFor(
            Counter(
                "nvcre_hardware_failures_detected",
                "Hardware failures the node health detectors found on nodes running a workload"
                + (f" (per node for the first {node_detail_limit} nodes, then node=\"{OTHER_NODES}\")." if node_detail_limit > 0 else ", per workflow."),
                node_labels, registry=self.registry,
            ),
            keep=("namespace", "workflow"),
            nodes=NodeBudget(node_detail_limit) if node_detail_limit > 0 else None,
        )
        self.queue = QueueMetrics(self.registry)
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self._server = None

    def count_requests(self, kube) -> None:
        """Expose the kube client's request counts (requests per Job is a budget we measure)."""
        self.registry.register(_RequestCollector(kube))

    def serve(self, port: int, addr: str = "127.0.0.1") -> int:
        """Serve /metrics on addr:port (0 picks a free port); returns the bound port."""
        from prometheus_client import start_http_server

        server, _ = start_http_server(port, addr=addr, registry=self.registry)
        self._server = server
        return int(server.server_port)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _RequestCollector(Collector):
    def __init__(self, kube) -> None:
        self.kube = kube

    def collect(self) -> Iterable:
        family = CounterMetricFamily(
            "nvcre_api_requests", "Kubernetes API requests the controller made, by verb and kind.", labels=["verb", "kind"],
        )
        for key, count in sorted(dict(self.kube.requests).items()):
            verb, _, kind = key.partition(" ")
            family.add_metric([verb, kind], float(count))
        yield family
        seconds = CounterMetricFamily(
            "nvcre_api_request_seconds", "Wall seconds the controller waited on Kubernetes API requests, by verb and kind.",
            labels=["verb", "kind"],
        )
        for key, spent in sorted(dict(self.kube.request_seconds).items()):
            verb, _, kind = key.partition(" ")
            seconds.add_metric([verb, kind], spent)
        yield seconds
