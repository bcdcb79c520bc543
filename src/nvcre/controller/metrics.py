"""Prometheus metrics on /metrics, built at scrape time from the objects last seen.

The status gauges are a projection of the latest status of each object, not state
kept beside it, so they cannot drift from what ``kubectl get`` shows: a Certification,
Workflow or Job contributes 1 to the series of its phase and 0 to the others. A Job
that timed out counts as failed only, even if a writer left InProgress True beside
it. Bandwidth and goodput gauges carry the workflow as a label so dashboards can
group by category run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from nvcre.controller import conditions as c
from nvcre.controller import labels as L

STATUS_VALUES = ("in_progress", "succeeded", "failed")
_PHASE_TO_STATUS = {c.IN_PROGRESS: "in_progress", c.SUCCEEDED: "succeeded", c.FAILED: "failed"}

GOODPUT_GAUGES = {
    "nvcre_goodput_ratio": "result",
    "nvcre_goodput_avg_tflops_per_gpu": "avgTFLOPSPerGPU",
    "nvcre_goodput_avg_step_time_seconds": "avgStepTimeSec",
    "nvcre_goodput_training_time_seconds": "trainingTimeSec",
    "nvcre_goodput_lost_work_time_seconds": "lostWorkTimeSec",
    "nvcre_goodput_reschedule_time_seconds": "rescheduleTimeSec",
    "nvcre_goodput_resume_time_seconds": "resumeTimeSec",
    "nvcre_goodput_checkpoint_save_time_seconds": "checkpointSaveTimeSec",
}


def status_of(obj: dict) -> str | None:
    """in_progress | succeeded | failed for an object's conditions (Failed wins)."""
    phase = c.phase_of((obj.get("status") or {}).get("conditions"))
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

    def drop(self, kind: str, namespace: str, name: str) -> None:
        with self._lock:
            self._objects.pop((kind, namespace, name), None)

    def of_kind(self, kind: str) -> list[dict]:
        with self._lock:
            return [o for (k, _, _), o in self._objects.items() if k == kind]


def _float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class StatusCollector(Collector):
    """Projects the store's objects into gauges on every scrape."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def collect(self) -> Iterable:
        yield from self._phase_gauge(
            "nvcre_certification_status", "Certification phase (1 for the current one)", "Certification",
            ["namespace", "certification"], lambda o: [],
        )
        yield from self._phase_gauge(
            "nvcre_workflow_status", "Workflow phase (1 for the current one)", "Workflow",
            ["namespace", "workflow", "certification"],
            lambda o: [(o["metadata"].get("labels") or {}).get(L.CERTIFICATION, "")],
        )
        yield from self._phase_gauge(
            "nvcre_job_status", "Job phase (1 for the current one; a timed-out Job is failed)", "Job",
            ["namespace", "job", "workflow"],
            lambda o: [(o["metadata"].get("labels") or {}).get(L.WORKFLOW, "")],
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
        names = ["namespace", "measurement", "job", "workflow", "nccl_test", "message_size_bytes"]
        bus = GaugeMetricFamily("nvcre_nccl_busbw_gbs", "NCCL bus bandwidth per message size (GB/s)", labels=names)
        alg = GaugeMetricFamily("nvcre_nccl_algbw_gbs", "NCCL algorithm bandwidth per message size (GB/s)", labels=names)
        for obj in self.store.of_kind("BandwidthMeasurement"):
            meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
            labels = meta.get("labels") or {}
            base = [
                meta.get("namespace", ""),
                meta.get("name", ""),
                (spec.get("jobRef") or {}).get("name", labels.get(L.JOB, "")),
                labels.get(L.WORKFLOW, ""),
                spec.get("testType", "") or "",
            ]
            for row in status.get("results") or []:
                size = str(row.get("sizeBytes", ""))
                if (v := _float(row.get("busBW"))) is not None:
                    bus.add_metric([*base, size], v)
                if (v := _float(row.get("algBW"))) is not None:
                    alg.add_metric([*base, size], v)
        yield bus
        yield alg

    def _goodput(self) -> Iterable:
        names = ["namespace", "measurement", "job", "workflow"]
        families = {m: GaugeMetricFamily(m, f"Goodput measurement field {f}", labels=names) for m, f in GOODPUT_GAUGES.items()}
        for obj in self.store.of_kind("GoodputMeasurement"):
            meta, spec, status = obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}
            labels = meta.get("labels") or {}
            base = [
                meta.get("namespace", ""),
                meta.get("name", ""),
                (spec.get("jobRef") or {}).get("name", labels.get(L.JOB, "")),
                labels.get(L.WORKFLOW, ""),
            ]
            for metric, field in GOODPUT_GAUGES.items():
                if (v := _float(status.get(field))) is not None:
                    families[metric].add_metric(base, v)
        yield from families.values()


class ControllerMetrics:
    """The registry served on /metrics: projected gauges plus a few counters."""

    def __init__(self, store: ObjectStore | None = None) -> None:
        self.store = store or ObjectStore()
        self.registry = CollectorRegistry()
        self.registry.register(StatusCollector(self.store))
        from nvcre.controller.ledger_metrics import ReadinessCollector

        self.registry.register(ReadinessCollector(self.store))
        self.reconciles = Counter(
            "nvcre_reconcile_total", "Reconcile passes", ["kind", "result"], registry=self.registry
        )
        self.workloads_created = Counter(
            "nvcre_workload_created_total", "Workload objects created", ["namespace", "job", "workflow"],
            registry=self.registry,
        )
        self.hardware_failures = Counter(
            "nvcre_hardware_failures_detected_total", "Node health detector hits",
            ["namespace", "job", "workflow", "node"], registry=self.registry,
        )

    def count_requests(self, kube) -> None:
        """Expose the kube client's request counts (requests per Job is a budget we measure)."""
        self.registry.register(_RequestCollector(kube))

    def serve(self, port: int, addr: str = "127.0.0.1") -> None:
        from prometheus_client import start_http_server

        start_http_server(port, addr=addr, registry=self.registry)


class _RequestCollector(Collector):
    def __init__(self, kube) -> None:
        self.kube = kube

    def collect(self) -> Iterable:
        from prometheus_client.core import CounterMetricFamily

        family = CounterMetricFamily("nvcre_api_requests", "API requests the reconcilers made", labels=["verb", "kind"])
        for key, count in sorted(dict(self.kube.requests).items()):
            verb, _, kind = key.partition(" ")
            family.add_metric([verb, kind], float(count))
        yield family
