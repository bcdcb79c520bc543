"""Benchmark: the node readiness ledger update and the outlier pass at 4096 nodes.

The costly path the controller runs when a Workflow ends at fleet scale:
1. node_results over a 4096-node Workflow (1024 groups of 4, a slow NIC in a few),
2. one ledger update per node on records that already hold a long life (32 results,
   16 history entries each), including regression detection, and the encoded size,
3. the outlier pass over 1024 same-shape groups, and over 4096 intra-node groups,
4. node_results over a finished testScale diagnose of 4096 nodes (the real planner
   against the simulator, one slow NIC; set-up, not timed): its verdict read per node.
Budgets: ledger decisions for 4096 nodes under 2.0 s (0.5 ms a node, below the one
GET + PUT per record the write costs anyway), the diagnose verdict included; outlier
pass under 0.05 s; a record under 48 KB. Exits non-zero on a miss.
"""

from __future__ import annotations

import json
import random
import sys
import time

from nvcre.controller import ledger as W
from nvcre.controller import outlier_check
from nvcre.judge import ledger as J

NODES = 4096
LEDGER_BUDGET_S = 2.0  # 0.5 ms a node: well under the GET + PUT the write itself costs
OUTLIER_BUDGET_S = 0.05
RECORD_BUDGET_BYTES = 48_000


def workflow(rng: random.Random, per_group: int) -> dict:
    groups = []
    slow = set(rng.sample(range(NODES // per_group), 6))
    for i in range(NODES // per_group):
        nodes = [f"gpu-node-{i * per_group + j:04d}" for j in range(per_group)]
        value = rng.uniform(368, 376) * (0.5 if i in slow else 1.0)
        groups.append({"name": f"group-{i}", "nodes": nodes, "phase": "Succeeded", "headline": round(value, 2)})
    judging = {"judged": True, "state": "stage", "stage": "production", "gpusPerNode": 8, "image": "nvcr.io/nvidia/pytorch:26.01-py3",
               "derived": [{"key": "busBandwidthGBps", "bar": 370.0, "stage": "production"}]}
    return {"metadata": {"name": "wf", "namespace": "ns", "annotations": {}, "generation": 1},
            "spec": {"category": "communication/nccl-all-reduce"},
            "status": {"orchestration": {"testScale": "full-scale", "judging": judging, "groups": groups}, "conditions": []}}


def diagnosed_workflow() -> tuple[dict, str]:
    """A diagnose Workflow of NODES nodes as the controller ends it, and its one faulty node."""
    from nvcre.controller.diagnose import _verdict
    from nvcre.planning.diagnose import DiagnosePolicy, Round, next_round, record, start
    from nvcre.planning.diagnose_sim import Fleet, Scenario, cluster

    nodes, topo = cluster(NODES)
    sc = Scenario(nodes, topo, bad_nodes={nodes[77]: 0.5}, seed=1)
    state = start(nodes, topo, DiagnosePolicy(threshold=sc.threshold, cross_check_after_faults=True, link_check="search"))
    fleet = Fleet(sc)
    while isinstance(step := next_round(state), Round):
        state = record(state, [fleet.run(g, t) for g, t in zip(step.groups, step.tags)])
    st = {"orchestration": {"testScale": "diagnose", "diagnose": state.to_dict(), "groups": []}, "conditions": []}
    _verdict(st, step, 1, "2026-12-02T05:00:00Z")
    judging = {"judged": True, "state": "user", "gpusPerNode": 8}
    st["orchestration"]["judging"] = judging
    return {"metadata": {"name": "wf-d", "namespace": "ns"}, "spec": {"category": "communication/nccl-all-reduce"},
            "status": st}, nodes[77]


def long_lived_record(node: str) -> dict:
    record = None
    for k in range(48):
        category = "communication/nccl-all-reduce" if k % 32 == 0 else f"communication/cat-{k % 32}"
        res = J.NodeResult(node=node, category=category, scope="4 nodes x 8 GPUs, inter-node",
                           result=J.PASSED, time=f"2026-11-{1 + k // 24:02d}T{k % 24:02d}:00:00Z", run=f"ns/run-{k}",
                           stage="production", value=372.0, environment={"nccl": "2.27.7", "driver": "570.133.20"})
        record, _ = J.update(record, [res])
    return record


def main() -> int:
    rng = random.Random(14)
    wf = workflow(rng, 4)
    labels = {f"gpu-node-{i:04d}": {"nvidia.com/cuda.driver-version.full": "570.133.20",
                                    "nvidia.com/cuda.runtime.major": "12", "nvidia.com/cuda.runtime.minor": "8"}
              for i in range(NODES)}
    template = long_lived_record("x")
    records = {n: {**json.loads(json.dumps(template)), "node": n} for n in labels}  # as read from the API server

    start = time.perf_counter()
    results = W.node_results(wf, "ns/run-new", "2026-12-02T05:00:00Z", [], labels)
    per_node: dict[str, list] = {}
    for r in results:
        per_node.setdefault(r.node, []).append(r)
    regressions = 0
    updated = {}
    for node, new in per_node.items():
        updated[node], regs = J.update(records[node], new)
        regressions += len(regs)
    ledger_s = time.perf_counter() - start
    sizes = [len(json.dumps(updated[n])) for n in list(updated)[:256]]  # every record has the same shape

    start = time.perf_counter()
    st = wf["status"]
    events = outlier_check.apply(st, wf, 1)
    outlier_s = time.perf_counter() - start
    intra = workflow(rng, 1)
    start = time.perf_counter()
    outlier_check.apply(intra["status"], intra, 1)
    intra_s = time.perf_counter() - start

    diagnosed, bad = diagnosed_workflow()
    start = time.perf_counter()
    verdicts = W.node_results(diagnosed, "ns/run-d", "2026-12-02T05:00:00Z", [], labels)
    diagnose_s = time.perf_counter() - start
    failed = [r.node for r in verdicts if r.result == J.FAILED]

    largest = max(sizes)
    print(f"ledger: {len(per_node)} nodes decided and folded in {ledger_s:.3f}s (budget {LEDGER_BUDGET_S}s, "
          f"ratio {ledger_s / LEDGER_BUDGET_S:.2f}); {regressions} regressions; largest record {largest} B "
          f"(budget {RECORD_BUDGET_BYTES} B)")
    print(f"outliers: 1024 groups of 4 in {outlier_s * 1000:.1f} ms, {len(events)} outliers; 4096 intra-node groups in "
          f"{intra_s * 1000:.1f} ms (budget {OUTLIER_BUDGET_S * 1000:.0f} ms)")
    print(f"diagnose: {len(verdicts)} nodes of a finished diagnosis read in {diagnose_s * 1000:.0f} ms "
          f"(budget {LEDGER_BUDGET_S}s); failed {failed}")
    ok = ledger_s + diagnose_s <= LEDGER_BUDGET_S and len(verdicts) == NODES and failed == [bad]
    ok = ok and max(outlier_s, intra_s) <= OUTLIER_BUDGET_S and largest <= RECORD_BUDGET_BYTES
    ok = ok and len(events) == 6 and regressions == 6 * 4
    if not ok:
        print("MISS", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
