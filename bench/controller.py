"""Benchmark: the controller on a 512-node intra-node certification, and status sizes.

Starts the local control plane, a simulated fleet of N nodes and the controller as
a subprocess (``nvcrectl controller run``), applies a Certification running
nccl-loopback at testScale intra-node (one Job per node), waits for it, and prints:

* controller overhead: the controller's CPU seconds (utime+stime from /proc) against the
  summed workload time (each Job's workloadStartTime -> terminal, simulated-time
  compressed by the fleet's time scale, so both are wall seconds), budget < 10 %;
* latency added per Job: Job created -> workload created, workload done -> Job decided;
* controller memory: peak RSS (VmHWM), budget < 300 MB;
* API requests per Job, from the controller's own request counter;
* status sizes of the Certification and Workflow at N nodes as written, and at 4096
  nodes from the same status-building code with every node failed (the worst case),
  against the API server's 1.5 MB object limit.

Run: ``.venv/bin/python bench/controller.py [--nodes 512] [--time-scale 600]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CPU_BUDGET = 0.10
RSS_BUDGET_MB = 300.0
OBJECT_LIMIT = 1.5 * 1024 * 1024


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def ts(text: str | None) -> float | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def cond_time(obj: dict, ctype: str) -> float | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == ctype and c.get("status") == "True":
            return ts(c.get("lastTransitionTime"))
    return None


def scrape(port: int) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()


def api_requests(metrics: str) -> dict[str, float]:
    out = {}
    for line in metrics.splitlines():
        if line.startswith("nvcre_api_requests_total{"):
            labels, value = line.rsplit(" ", 1)
            out[labels[len("nvcre_api_requests_total"):]] = float(value)
    return out


def synthetic_sizes(nodes: int) -> tuple[int, int]:
    """Workflow and Certification status sizes at ``nodes`` with every node failed."""
    from nvcre.controller import conditions as c
    from nvcre.controller import workflow as wfmod
    from nvcre.controller import workflow_core as core
    from nvcre.controller.certification import _summary

    names = [f"gpu-node-{i:04d}" for i in range(nodes)]
    groups = [{"name": f"group-{i}", "nodes": [n], "phase": "Running", "retries": 0} for i, n in enumerate(names)]
    st: dict = {"orchestration": {"groups": groups, "totalNodes": nodes, "totalGroups": nodes, "currentIteration": 1}}
    table = [{"sizeBytes": 8 << k, "algBwGBps": 123.45, "busBwGBps": 234.56, "samples": 1} for k in range(0, 32)]
    pending: list[dict] = []
    for g in groups:
        job_status = {
            "conditions": [],
            "failedNodes": [{"name": g["nodes"][0], "reason": "ThresholdViolation",
                             "message": 'Threshold "busBandwidthGBps" violated: measured 234.5600, expression: value >= 300'}],
            "measurements": {"bandwidth": table, "transport": "NVLS"},
            "failureLog": {"podName": "x" * 50, "nodeName": g["nodes"][0], "exitCode": 1, "reason": "Error", "tail": "e" * 2000},
        }
        c.set_status_phase(job_status, c.SUCCEEDED, "WorkloadCompleted", "Workload completed")
        c.set_condition(job_status["conditions"], c.VALIDATION_FAILED, True, "ThresholdViolated", "violated")
        g["phase"] = core.FAILED
        outcome = core.group_outcome({"spec": {"thresholds": {"busBandwidthGBps": "value >= 300"}}, "status": job_status})
        wfmod._absorb_job(st, g, outcome, {"status": job_status}, 1, nodes, pending)
    st["failedNodes"], _ = c.merge_failed_nodes(st.get("failedNodes"), pending)
    wfmod._finalize(st, 1, 1, "2026-11-30T00:00:00Z")
    cert_status = {"failedNodes": [{"name": n["name"], "reason": n["reason"]} for n in st["failedNodes"]][:2048],
                   "categoryStatuses": [{"domain": "communication", "variant": "nccl-loopback", "status": "Failed",
                                         "failedNodeCount": nodes}],
                   "excludedNodes": []}
    cert_status["summary"] = _summary(cert_status["categoryStatuses"], cert_status["failedNodes"], [])
    return len(json.dumps(st)), len(json.dumps(cert_status))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=512)
    parser.add_argument("--time-scale", type=float, default=60.0, help="simulated seconds per wall second")
    parser.add_argument("--timeout", type=float, default=1500.0)
    args = parser.parse_args(argv)

    from nvcre.kube.client import KubeClient
    from nvcre.kube.resources import NVCRE_API_VERSION
    from nvcre.sim.kubelet import KubeletConfig
    from nvcre.sim.process import start_fleet
    from nvcre.testbed.controlplane import ControlPlane

    work = Path(tempfile.mkdtemp(prefix="nvcre-bench-controller-"))
    with ControlPlane(work / "cp") as cp:
        kubectl = [str(cp.kubectl_path), "--kubeconfig", str(cp.kubeconfig)]
        subprocess.run(kubectl + ["apply", "--server-side", "-f", str(REPO / "charts/nvcre/crds")], check=True, capture_output=True)
        for plural in ("certifications", "workflows", "jobs"):
            subprocess.run(kubectl + ["wait", "--for=condition=Established", f"crd/{plural}.nvcre.nvidia.com"], check=True, capture_output=True)
        fleet = start_fleet(KubeletConfig(
            kubeconfig=str(cp.kubeconfig), state_dir=str(work / "fleet"), nodes=args.nodes, racks=max(1, args.nodes // 32),
            time_scale=args.time_scale, scenario={"name": "healthy", "seed": 1, "faults": []},
            tls_cert=str(cp.kubelet_serving_cert), tls_key=str(cp.kubelet_serving_key), client_ca=str(cp.ca_cert),
        ), timeout_s=300)
        port = 19191
        log = open(work / "controller.log", "wb")
        ctl = subprocess.Popen(
            [sys.executable, "-m", "nvcre.cli.main", "controller", "run", "--kubeconfig", str(cp.kubeconfig),
             "--metrics-port", str(port), "--log-level", "WARNING"],
            stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    scrape(port)
                    break
                except OSError:
                    if time.monotonic() > deadline or ctl.poll() is not None:
                        raise SystemExit(f"controller did not start; see {work / 'controller.log'}")
                    time.sleep(0.3)
            kube = KubeClient.from_kubeconfig(str(cp.kubeconfig))
            subprocess.run(kubectl + ["create", "namespace", "bench"], check=True, capture_output=True)
            cpu0, wall0 = cpu_seconds(ctl.pid), time.monotonic()
            requests0 = sum(api_requests(scrape(port)).values())
            kube.create({
                "apiVersion": NVCRE_API_VERSION, "kind": "Certification",
                "metadata": {"name": "bench", "namespace": "bench"},
                "spec": {"target": {}, "categories": [
                    {"domain": "communication", "variant": "nccl-loopback", "options": {"testScale": "intra-node"}}]},
            })
            while True:
                cert = kube.get(NVCRE_API_VERSION, "Certification", "bench", "bench")
                if cond_time(cert, "Succeeded") or cond_time(cert, "Failed"):
                    break
                if time.monotonic() - wall0 > args.timeout:
                    raise SystemExit(f"certification did not finish in {args.timeout:.0f}s: {json.dumps(cert.get('status'))[:800]}")
                time.sleep(2)
            wall = time.monotonic() - wall0
            cpu = cpu_seconds(ctl.pid) - cpu0
            rss = peak_rss_mb(ctl.pid)
            metrics = scrape(port)
            requests = sum(api_requests(metrics).values()) - requests0
            jobs = kube.list(NVCRE_API_VERSION, "Job", "bench")
            workflows = kube.list(NVCRE_API_VERSION, "Workflow", "bench")
        finally:
            ctl.terminate()
            ctl.wait(timeout=30)
            fleet.stop(delete=False)

    workload = 0.0
    added_start, added_end = [], []
    for job in jobs:
        st = job.get("status") or {}
        start, end = ts(st.get("workloadStartTime")), cond_time(job, "Succeeded") or cond_time(job, "Failed")
        created = ts(job["metadata"].get("creationTimestamp"))
        if start and end:
            workload += max(0.0, end - start)
        if start and created:
            added_start.append(start - created)
    cert_size = len(json.dumps(cert.get("status") or {}))
    wf_size = max((len(json.dumps(w.get("status") or {})) for w in workflows), default=0)
    wf4096, cert4096 = synthetic_sizes(4096)
    wf512, cert512 = synthetic_sizes(512)
    verdict = next((c["type"] for c in cert["status"]["conditions"] if c["status"] == "True"), "?")

    print(f"certification: {args.nodes} nodes, intra-node nccl-loopback, {len(jobs)} Jobs, verdict {verdict}, "
          f"result {cert['status'].get('summary', {}).get('result')}, target nodes {cert['status'].get('totalNodes')}, wall {wall:.1f} s")
    for e in cert["status"].get("excludedNodes") or []:
        print(f"    excluded: {e['name']} ({e['reason']})")
    ratio = cpu / workload if workload else float("inf")
    simulated = workload * args.time_scale
    print(f"controller CPU: {cpu:.1f} s = {cpu / max(len(jobs), 1) * 1000:.0f} ms per Job")
    print(f"summed workload time: {workload:.1f} s wall ({simulated:.0f} s simulated at time scale {args.time_scale:g})")
    print(f"overhead vs wall workload time (pessimistic: the fleet compresses time {args.time_scale:g}x, "
          f"the controller does not): {ratio * 100:.1f} % (budget {CPU_BUDGET * 100:.0f} %) {'OK' if ratio < CPU_BUDGET else 'OVER'}")
    print(f"overhead vs simulated workload time (what the workloads would take on GPUs): "
          f"{cpu / max(simulated, 1e-9) * 100:.2f} %")
    if added_start:
        added_start.sort()
        print(f"Job created -> workload running: median {added_start[len(added_start) // 2]:.1f} s, "
              f"p95 {added_start[int(len(added_start) * 0.95)]:.1f} s (includes scheduling and pod start)")
    print(f"controller peak RSS: {rss:.0f} MB (budget {RSS_BUDGET_MB:.0f} MB) {'OK' if rss < RSS_BUDGET_MB else 'OVER'}")
    print(f"API requests by the reconcilers: {requests:.0f} = {requests / max(len(jobs), 1):.1f} per Job")
    for key, value in sorted(api_requests(metrics).items(), key=lambda kv: -kv[1])[:8]:
        print(f"    {value:8.0f} {key}")
    print(f"status size as written at {args.nodes} nodes: Certification {cert_size} B, Workflow {wf_size} B")
    for n, wf_b, cert_b in ((512, wf512, cert512), (4096, wf4096, cert4096)):
        print(f"worst-case status at {n} nodes (every node failed): Workflow {wf_b / 1024:.0f} KiB, "
              f"Certification {cert_b / 1024:.0f} KiB; limit {OBJECT_LIMIT / 1024:.0f} KiB "
              f"{'OK' if max(wf_b, cert_b) < OBJECT_LIMIT else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
