"""Report build and render time for a large run (prints figures; not a timed test).

A 4096-node intra-rack style certification: 512 groups of 8 with a 6-size NCCL sweep
each, 1 group in 50 failed with one node blamed. Budget: the report of the largest
target we plan for builds and renders well under a second, so `--wait` can redraw it
every poll.
"""

from __future__ import annotations

import time

from nvcre.report import RunObjects, build_report
from nvcre.report.html import render_html
from nvcre.report.json_report import render_json
from nvcre.report.text import render_text

T0, T1 = "2026-08-06T10:00:00Z", "2026-08-06T10:10:00Z"


def cond(ctype: str, reason: str, message: str = "") -> dict:
    return {"type": ctype, "status": "True", "reason": reason, "message": message, "lastTransitionTime": T0}


def sweep(peak: float) -> list[dict]:
    sizes = [1 << 20, 16 << 20, 256 << 20, 1 << 30, 4 << 30, 16 << 30]
    return [
        {"sizeBytes": s, "algBwGBps": round(peak * (0.2 + 0.16 * i) / 1.875, 2), "busBwGBps": round(peak * (0.2 + 0.16 * i), 2), "samples": 10}
        for i, s in enumerate(sizes)
    ]


def large_run(nodes: int = 4096, per_group: int = 8) -> RunObjects:
    names = [f"gpu-node-{i:04d}" for i in range(nodes)]
    groups, jobs = [], []
    for g in range(nodes // per_group):
        failed = g % 50 == 0
        job_name = f"wf-group-{g}"
        groups.append(
            {
                "name": f"group-{g}", "nodes": names[g * per_group:(g + 1) * per_group],
                "phase": "Failed" if failed else "Succeeded", "startTime": T0, "completionTime": T1,
                "jobRef": {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "name": job_name},
                "bandwidth": sweep(360.0 if failed else 400.0 + g % 7), "transport": "IB",
            }
        )
        jobs.append(
            {
                "metadata": {"name": job_name, "namespace": "big", "labels": {"nvcre.nvidia.com/workflow": "wf"}},
                "status": {
                    "conditions": [cond("Succeeded", "WorkloadCompleted")],
                    "failedNodes": [{"name": names[g * per_group], "reason": "ThresholdViolation", "message": "slow NIC"}] if failed else [],
                },
            }
        )
    cert = {
        "kind": "Certification",
        "metadata": {"name": "big", "namespace": "big"},
        "spec": {"categories": [{"domain": "communication", "variant": "nccl-all-reduce",
                                 "options": {"thresholds": {"busBandwidthGBps": "value >= 380"}}}]},
        "status": {"conditions": [cond("Failed", "WorkflowFailed")],
                   "categoryStatuses": [{"domain": "communication", "variant": "nccl-all-reduce", "status": "Failed", "workflowRef": {"name": "wf"}}]},
    }
    wf = {
        "metadata": {"name": "wf", "namespace": "big"},
        "status": {"conditions": [cond("Failed", "IterationsFailed", "11 groups failed across 1 iterations")],
                   "orchestration": {"totalNodes": nodes, "nodesPerJob": per_group, "totalGroups": len(groups), "groups": groups}},
    }
    node_objs = [{"metadata": {"name": n, "labels": {"nvidia.com/gpu.clique": f"clique-{i // 18}"}}} for i, n in enumerate(names)]
    return RunObjects(root=cert, workflows=[wf], jobs=jobs, nodes=node_objs)


def main() -> None:
    objs = large_run()
    t0 = time.perf_counter()
    report = build_report(objs)
    t1 = time.perf_counter()
    text = render_text(report)
    t2 = time.perf_counter()
    page = render_html(report)
    t3 = time.perf_counter()
    data = render_json(report)
    t4 = time.perf_counter()
    total = t4 - t0
    print("report for 4096 nodes, 512 groups, 11 failed")
    print(f"  build        {t1 - t0:7.3f} s")
    print(f"  text         {t2 - t1:7.3f} s  ({len(text.splitlines())} lines)")
    print(f"  html         {t3 - t2:7.3f} s  ({len(page) // 1024} KiB)")
    print(f"  json         {t4 - t3:7.3f} s  ({len(data) // 1024} KiB)")
    print(f"  total        {total:7.3f} s  = {total / 1.0:.0%} of the 1 s budget")


if __name__ == "__main__":
    main()
