"""The per-node readiness gauge, projected from the NodeReadiness ledger (not from runs).

One series per node (labels: node, stage cleared or "none"), so it stays when a run
ends and its cardinality is the fleet's node count, however many runs there were.
Value: 1 when the node's latest results all passed, 0 otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from nvcre.judge.ledger import PASSED
from nvcre.objpath import dig


class ReadinessCollector(Collector):
    def __init__(self, store) -> None:
        self.store = store

    def collect(self) -> Iterable:
        family = GaugeMetricFamily(
            "nvcre_node_readiness_status", "Node readiness from the ledger: 1 when its latest results passed (stage: cleared)",
            labels=["node", "stage"],
        )
        for record in self.store.of_kind("NodeReadiness"):
            st = record.get("status") or {}
            node = dig(record, "spec", "nodeName") or dig(record, "metadata", "name") or ""
            family.add_metric([node, st.get("stageCleared") or "none"], 1.0 if st.get("lastResult") == PASSED else 0.0)
        yield family
