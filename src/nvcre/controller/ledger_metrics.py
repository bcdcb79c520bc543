"""The per-node readiness gauge, projected from the NodeReadiness ledger (not from runs).

One series per node (labels: node, stage cleared or "none"), so it stays when a run
ends and its cardinality is the fleet's node count, however many runs there were.
The stage label is one of the four readiness stages or "none": a record whose stage
is anything else (hand-edited, or from a newer controller) reads as "none", so the
label can never add series beyond one per node. Value: 1 when the node's latest
results all passed, 0 otherwise. Projected at scrape time from the watch cache, which
a NodeReadiness reflector keeps current: a deleted record loses its series at once.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from nvcre.judge.ledger import PASSED
from nvcre.judge.stages import STAGE_RANK
from nvcre.objpath import dig

NO_STAGE = "none"
STAGE_LABELS = (*STAGE_RANK, NO_STAGE)  # every value the stage label can take


def stage_label(status: dict) -> str:
    """The record's cleared stage when it is a known stage, else "none"."""
    stage = status.get("stageCleared")
    return stage if stage in STAGE_RANK else NO_STAGE


class ReadinessCollector(Collector):
    def __init__(self, store) -> None:
        self.store = store

    def collect(self) -> Iterable:
        family = GaugeMetricFamily(
            "nvcre_node_readiness_status",
            "Node readiness from the NodeReadiness ledger, one series per node: 1 when its latest results passed; "
            "stage is the readiness stage it cleared (bring-up, burn-in, preproduction, production) or none.",
            labels=["node", "stage"],
        )
        for record in self.store.of_kind("NodeReadiness"):
            st = record.get("status") or {}
            node = dig(record, "spec", "nodeName") or dig(record, "metadata", "name") or ""
            family.add_metric([node, stage_label(st)], 1.0 if st.get("lastResult") == PASSED else 0.0)
        yield family
