"""Opt-in NCCL gauges under the reference's names, for dashboards built for the reference.

nvcre's own bandwidth gauges are per workflow in bytes per second (metrics.py). The
reference exports ``nvcre_nccl_busbw_gbs`` and ``nvcre_nccl_algbw_gbs`` in GB/s (10^9
bytes per second) per measurement and message size, plus the deprecated ``_gbps``
aliases with the same values, and removes them when the BandwidthMeasurement completes
or is deleted. With ``--reference-metrics`` this collector adds exactly those: it
projects every BandwidthMeasurement in the watch cache that has results and is not
Complete at scrape time, so the lifecycle is the reference's by construction (a
completed or deleted measurement has no series). The cost is cardinality: one series
per running measurement and message size, times four names.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.objpath import dig

LABELS = ["namespace", "measurement", "job", "workflow", "nccl_test", "message_size_bytes"]
# reference name -> (BandwidthMeasurement result field, HELP)
GAUGES = {
    "nvcre_nccl_busbw_gbs": ("busBW", "NCCL bus bandwidth of a running BandwidthMeasurement at one message size, in GB/s (10^9 bytes per second); the reference's name."),
    "nvcre_nccl_algbw_gbs": ("algBW", "NCCL algorithm bandwidth of a running BandwidthMeasurement at one message size, in GB/s (10^9 bytes per second); the reference's name."),
}
# deprecated aliases the reference still exports: same values, never to be summed with the above
ALIASES = {"nvcre_nccl_busbw_gbps": "nvcre_nccl_busbw_gbs", "nvcre_nccl_algbw_gbps": "nvcre_nccl_algbw_gbs"}
NAMES = (*GAUGES, *ALIASES)


def _float(value) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out else None  # NaN is no measurement


def running_rows(obj: dict) -> list[tuple[list[str], dict]]:
    """(label values, result row) for each message size of a measurement still measuring."""
    status = obj.get("status") or {}
    if c.is_true(status.get("conditions"), "Complete"):
        return []
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    labels = meta.get("labels") or {}
    base = [meta.get("namespace") or "", meta.get("name") or "", dig(spec, "jobRef", "name") or labels.get(L.JOB) or "",
            labels.get(L.WORKFLOW) or "", spec.get("testType") or ""]
    return [([*base, str(row.get("sizeBytes", ""))], row) for row in status.get("results") or []]


class ReferenceNcclCollector(Collector):
    def __init__(self, store) -> None:
        self.store = store

    def collect(self) -> Iterable:
        families = {name: GaugeMetricFamily(name, doc, labels=LABELS) for name, (_, doc) in GAUGES.items()}
        for alias, name in ALIASES.items():
            families[alias] = GaugeMetricFamily(alias, f"Deprecated alias of {name} (same value; do not aggregate with it).", labels=LABELS)
        for obj in self.store.of_kind("BandwidthMeasurement"):
            for values, row in running_rows(obj):
                for name, (field, _) in GAUGES.items():
                    if (v := _float(row.get(field))) is not None:
                        families[name].add_metric(values, v)
                for alias, name in ALIASES.items():
                    if (v := _float(row.get(GAUGES[name][0]))) is not None:
                        families[alias].add_metric(values, v)
        yield from families.values()
