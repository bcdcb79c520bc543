"""Benchmark: /metrics series count and scrape time for a certification of 4096 nodes.

The controller's store is filled as it would be mid-run on a 4096-node fleet in
8-node groups: five NCCL categories with 512 Jobs each (every Job with a
BandwidthMeasurement of 25 message sizes), a diagnose child Workflow of 64 pair
tests per category, one training Workflow, hardware failures on 1% of the nodes in
every Job that ran on them, and every reconcile and queue metric touched. Then it
scrapes through the real text exposition and counts series. Budgets: at most
12,000 series by default (the per-object status gauges dominate; bandwidth and
counters are per workflow), per-node detail adds at most its limit + 1, and one
scrape takes at most 1.0 s. Exits 1 on a miss.
"""

from __future__ import annotations

import sys
import time

from prometheus_client import generate_latest

from nvcre.controller import conditions as c
from nvcre.controller.ledger_metrics import STAGE_LABELS
from nvcre.controller.runtime.metrics import ControllerMetrics

NODES = 4096
GROUP = 8
NCCL_CATEGORIES = ("nccl-all-reduce", "nccl-all-gather", "nccl-reduce-scatter", "nccl-alltoall", "nccl-sendrecv")
SIZES = [8 * 2**i for i in range(25)]
PAIR_TESTS = 64
SERIES_BUDGET = 12_000  # everything but the readiness gauge
READINESS = "nvcre_node_readiness_status"
NODE_DETAIL_LIMIT = 64
SCRAPE_BUDGET_S = 1.0
NS = "gpu-cert"


def _conds(phase: str, reason: str) -> list[dict]:
    out: list[dict] = []
    c.set_phase(out, phase, reason)
    return out


def fill(m: ControllerMetrics) -> None:
    m.store.put({"kind": "Certification", "metadata": {"name": "fleet", "namespace": NS}, "status": {"conditions": _conds(c.IN_PROGRESS, "WorkflowsRunning")}})
    workflows = [*NCCL_CATEGORIES, "nemotron5-8b"]
    for wf in workflows:
        m.store.put({"kind": "Workflow", "metadata": {"name": wf, "namespace": NS, "labels": {"nvcre.nvidia.com/certification": "fleet"}},
                     "status": {"conditions": _conds(c.IN_PROGRESS, "JobsRunning")}})
    for wf in NCCL_CATEGORIES:
        diag = f"{wf}-diagnose"
        m.store.put({"kind": "Workflow", "metadata": {"name": diag, "namespace": NS, "labels": {"nvcre.nvidia.com/certification": "fleet"}},
                     "status": {"conditions": _conds(c.IN_PROGRESS, "IsolatingFaults")}})
        jobs = [(wf, f"{wf}-g{g:03d}", GROUP) for g in range(NODES // GROUP)] + [(diag, f"{diag}-p{p:02d}", 2) for p in range(PAIR_TESTS)]
        for workflow, job, size in jobs:
            labels = {"nvcre.nvidia.com/workflow": workflow, "nvcre.nvidia.com/job": job}
            m.store.put({"kind": "Job", "metadata": {"name": job, "namespace": NS, "labels": labels},
                         "status": {"conditions": _conds(c.SUCCEEDED, "ThresholdsMet")}})
            rows = [{"sizeBytes": s, "algBW": f"{min(s / 2**20, 180.0):.2f}", "busBW": f"{min(s / 2**19, 360.0):.2f}", "samples": 1} for s in SIZES]
            m.store.put({"kind": "BandwidthMeasurement", "metadata": {"name": f"{job}-bandwidth", "namespace": NS, "labels": labels},
                         "spec": {"jobRef": {"name": job}, "testType": wf.removeprefix("nccl-").replace("-", "_")}, "status": {"results": rows}})
            m.workloads_created.labels(namespace=NS, job=job, workflow=workflow).inc()
    m.store.put({"kind": "Job", "metadata": {"name": "nemotron5-8b-job", "namespace": NS, "labels": {"nvcre.nvidia.com/workflow": "nemotron5-8b"}},
                 "status": {"conditions": _conds(c.IN_PROGRESS, "WorkloadRunning")}})
    m.store.put({"kind": "GoodputMeasurement", "metadata": {"name": "nemotron5-8b-goodput", "namespace": NS, "labels": {"nvcre.nvidia.com/workflow": "nemotron5-8b"}},
                 "status": {"result": "0.93", "avgTFLOPSPerGPU": "410.5", "avgStepTimeSec": "2.1", "trainingTimeSec": "3600"}})
    for wf in NCCL_CATEGORIES:
        for n in range(0, NODES, 100):  # ~1% of the nodes fail a health check in each category
            m.hardware_failures.labels(namespace=NS, job=f"{wf}-g{n // GROUP:03d}", workflow=wf, node=f"gpu-node-{n:04d}").inc()
    for n in range(NODES):  # the ledger: every node has a record; 1% failed its latest run
        failed = n % 100 == 0
        stage = STAGE_LABELS[n % 4] if not failed else None
        m.store.put({"kind": "NodeReadiness", "metadata": {"name": f"gpu-node-{n:04d}", "namespace": "nvcre-system"},
                     "spec": {"nodeName": f"gpu-node-{n:04d}"}, "status": {"stageCleared": stage, "lastResult": "Failed" if failed else "Passed"}})
    for kind in ("Certification", "Workflow", "Job", "WorkloadRun", "BandwidthMeasurement", "GoodputMeasurement"):
        for result in ("success", "requeue", "error"):
            m.reconciles.labels(kind=kind, result=result).inc()
        m.reconcile_duration.labels(kind=kind).observe(0.05)
    m.queue.added()
    m.queue.waited(0.001)
    m.queue.worked(0.02)
    m.queue.retried()


def series(m: ControllerMetrics) -> tuple[int, float, str]:
    start = time.perf_counter()
    text = generate_latest(m.registry).decode()
    elapsed = time.perf_counter() - start
    return sum(1 for line in text.splitlines() if line and not line.startswith("#")), elapsed, text


def _by_family(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name = line.split("{", 1)[0].split(" ", 1)[0]
            out[name] = out.get(name, 0) + 1
    return out


def main() -> int:
    default = ControllerMetrics()
    fill(default)
    count, scrape_s, text = series(default)
    detail = ControllerMetrics(node_detail_limit=NODE_DETAIL_LIMIT)
    fill(detail)
    detail_count, detail_s, _ = series(detail)
    reference = ControllerMetrics(reference_compatible=True)
    fill(reference)
    reference_count, reference_s, _ = series(reference)
    jobs = len(default.store.of_kind("Job"))
    measurements = len(default.store.of_kind("BandwidthMeasurement"))
    by_family = _by_family(text)
    readiness = by_family.get(READINESS, 0)
    rest = count - readiness
    total_budget = SERIES_BUDGET + NODES
    print(f"metrics at {NODES} nodes: {jobs} Jobs, {measurements} BandwidthMeasurements x {len(SIZES)} sizes")
    print(f"  series (default):          {count}  ({count / total_budget:.0%} of the {total_budget} budget: {SERIES_BUDGET} + one readiness series per node)")
    print(f"    readiness, per node:     {readiness}  (exactly {NODES} allowed)")
    print(f"    everything else:         {rest}  ({rest / SERIES_BUDGET:.0%} of {SERIES_BUDGET})")
    print(f"  series (node detail {NODE_DETAIL_LIMIT}):    {detail_count}  (+{detail_count - count}; budget +{NODE_DETAIL_LIMIT + 1} per workflow label set)")
    print(f"  series (--reference-metrics, every measurement still running): {reference_count}  "
          f"(+{reference_count - count}: {measurements} x {len(SIZES)} sizes x 4 names; no budget, opt-in), scrape {reference_s:.3f} s")
    print(f"  scrape time:               {scrape_s:.3f} s  ({scrape_s / SCRAPE_BUDGET_S:.0%} of the {SCRAPE_BUDGET_S} s budget); with detail {detail_s:.3f} s")
    for name, n in sorted(by_family.items(), key=lambda kv: -kv[1])[:5]:
        print(f"    {name:<52} {n}")
    extra_budget = (NODE_DETAIL_LIMIT + 1) * len(NCCL_CATEGORIES)
    ok = (readiness == NODES and rest <= SERIES_BUDGET and detail_count - count <= extra_budget
          and reference_count - count == measurements * len(SIZES) * 4 and max(scrape_s, detail_s) <= SCRAPE_BUDGET_S)
    if not ok:
        print("FAIL: over budget", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
