"""Benchmark: the controller at fleet scale, through the real control plane.

Starts the local control plane, a simulated GB200 on-prem fleet (16 nodes per rack,
long real-looking node names, one GPU falling off the bus part-way) and the controller
as a subprocess (``nvcrectl controller run``), applies a Certification running the
NCCL all-reduce at ``--scales`` (intra-rack: one multi-node Job per rack; full-scale:
one Job over every node) and prints per run:

* apply -> verdict, the workload time (union of the Jobs' workloadStartTime -> last
  pod end) and their difference, the controller's own latency; budget: under 10 % of
  the workload time (checked at 1024 nodes and more, full-scale);
* decision lag: a Job's terminal condition minus the end of its last pod (budget 2 s,
  at the API's one-second timestamp resolution);
* controller CPU seconds (utime+stime of the process) and peak RSS (VmHWM; budget
  400 MB at 4096 nodes, so at any size);
* API requests per Job, from the controller's own request counter;
* the largest object in the namespace at the end (budget 1 MiB);
* with two or more ``--nodes`` sizes, CPU and requests per node between the smallest
  and the largest size (budget: within 1.2x of linear).

It exits non-zero when a budget is missed. The 4096-node run takes a long time and
runs outside CI: ``.venv/bin/python bench/controller.py --nodes 256 1024 [4096]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OVERHEAD_BUDGET = 0.10
DECISION_LAG_BUDGET_S = 2.0
RSS_BUDGET_MB = 400.0
OBJECT_BUDGET = 1024 * 1024
LINEAR_BUDGET = 1.2
LEASE_RENEWALS_PER_S = 25.6  # the test bed's Lease traffic at any size (see run_once)
NODE_PREFIX = "dgx-gb200-nvl72-su01-rack"  # long real-looking names: dgx-gb200-nvl72-su01-rack-0001
JOB_LABEL = "nvcre.nvidia.com/job"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def field_sizes(obj: dict, top: int = 4) -> str:
    """Where an object's bytes are: its largest second-level fields (e.g. status.nodesRan)."""
    parts = [(len(json.dumps(v)), f"{k}.{kk}") for k in ("metadata", "spec", "status")
             for kk, v in (obj.get(k) or {}).items()]
    return ", ".join(f"{name} {size / 1024:.0f} KiB" for size, name in sorted(parts, reverse=True)[:top])


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


def reconcile_passes(metrics: str) -> dict[str, tuple[float, float]]:
    """Per kind: (passes, seconds) from the controller's reconcile-duration histogram."""
    out: dict[str, list[float]] = {}
    for line in metrics.splitlines():
        for suffix, slot in (("_count{", 0), ("_sum{", 1)):
            if line.startswith("nvcre_reconcile_duration_seconds" + suffix):
                kind = line.split('kind="', 1)[1].split('"', 1)[0]
                out.setdefault(kind, [0.0, 0.0])[slot] += float(line.rsplit(" ", 1)[1])
    return {k: (v[0], v[1]) for k, v in out.items()}


def api_wait(metrics: str, top: int = 5) -> str:
    """The API calls the controller waited on longest, in total: 'STATUS Job 12.3 s, ...'."""
    spent = []
    for line in metrics.splitlines():
        if line.startswith("nvcre_api_request_seconds_total{"):
            labels = dict(part.split("=", 1) for part in line.split("{", 1)[1].split("}", 1)[0].split(","))
            spent.append((float(line.rsplit(" ", 1)[1]), f"{labels['verb'].strip(chr(34))} {labels['kind'].strip(chr(34))}"))
    return ", ".join(f"{name} {secs:.1f} s" for secs, name in sorted(spent, reverse=True)[:top])


def api_requests(metrics: str) -> float:
    total = 0.0
    for line in metrics.splitlines():
        if line.startswith("nvcre_api_requests_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return total


def union_length(intervals: list[tuple[float, float]]) -> float:
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


class PodEnds:
    """Watches the workload pods (one list, then a watch, like the controller's own reflector)
    and keeps, per nvcre Job and pod, the container end as the kubelet stamped it and when the
    API server's watch first showed it. That is the test bed's own delay: on a loaded machine
    the simulated kubelet posts the status of hundreds of pods that end in the same second
    over many seconds, and the controller must see every one of them before it decides.
    (A 0.5 s LIST of every pod, as this used to do, cost the API server ~20 MB of JSON a
    poll at 1024 nodes and slowed what it measured.)"""

    def __init__(self, kube, namespace: str) -> None:
        from nvcre.kube.watch import Reflector, WatchSpec

        # the watch breaks when the control plane stops at the end of a run: not worth a warning
        logging.getLogger("nvcre.kube.watch").setLevel(logging.ERROR)
        self.seen: dict[tuple[str, str], tuple[float, float]] = {}  # (nvcre Job, pod): (seen at, finishedAt)
        self.ends: dict[str, float] = {}
        self.first_created: float | None = None  # the first workload pod's creationTimestamp
        self.reflector = Reflector(kube, WatchSpec("v1", "Pod", "Pod", label_selector=JOB_LABEL, namespace=namespace), self)
        self.stop = self.reflector.stop

    def start(self) -> None:
        threading.Thread(target=self.reflector.run, name="bench-pod-ends", daemon=True).start()

    # the reflector's sink
    def replace(self, kind_key: str, objects: list[dict], namespace: str | None = None) -> None:
        for pod in objects:
            self.apply(kind_key, "ADDED", pod)

    def apply(self, kind_key: str, event_type: str, pod: dict) -> None:
        job = (pod["metadata"].get("labels") or {}).get(JOB_LABEL)
        created = ts(pod["metadata"].get("creationTimestamp"))
        if created and (self.first_created is None or created < self.first_created):
            self.first_created = created
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            end = ts(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
            if job and end:
                self.seen.setdefault((job, pod["metadata"]["name"]), (time.time(), end))
                self.ends[job] = max(self.ends.get(job, 0.0), end)

    def visible(self, job: str, until: float) -> float | None:
        """When the last of the Job's pod ends stamped before ``until`` (its verdict) was first seen;
        pods killed by the clean-up after the verdict do not count."""
        times = [at for (j, _), (at, end) in list(self.seen.items()) if j == job and end <= until]
        return max(times) if times else None

    def timeline(self, job: str, until: float) -> str:
        """When the Job's first and last pod ends were stamped and first seen, relative to its verdict."""
        ends = sorted((end, at) for (j, _), (at, end) in list(self.seen.items()) if j == job and end <= until)
        if not ends:
            return "-"
        first, last = ends[0], max(ends)
        seen_all = max(at for _, at in ends)
        return (f"first pod end stamped {first[0] - until:+.1f} s, seen {first[1] - until:+.1f} s; last stamped "
                f"{last[0] - until:+.1f} s; the {len(ends)} ends all seen {seen_all - until:+.1f} s (0 = the verdict)")

    def last_end(self, job: str, until: float) -> float | None:
        """The Job's last pod end stamped before ``until`` (its verdict)."""
        ends = [end for (j, _), (_, end) in list(self.seen.items()) if j == job and end <= until]
        return max(ends) if ends else None


def start_controller(cp, work: Path, port: int) -> subprocess.Popen:
    log = open(work / "controller.log", "wb")
    ctl = subprocess.Popen(
        [sys.executable, "-m", "nvcre.cli.main", "controller", "run", "--kubeconfig", str(cp.kubeconfig),
         "--metrics-port", str(port), "--log-level", "WARNING"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            scrape(port)
            return ctl
        except OSError:
            if time.monotonic() > deadline or ctl.poll() is not None:
                raise SystemExit(f"controller did not start; see {work / 'controller.log'}")
            time.sleep(0.3)


def run_once(nodes: int, scale: str, time_scale: float, timeout: float) -> dict:
    from nvcre.kube.client import KubeClient
    from nvcre.kube.resources import NVCRE_API_VERSION
    from nvcre.sim.kubelet import KubeletConfig
    from nvcre.sim.process import start_fleet
    from nvcre.testbed.controlplane import ControlPlane

    work = Path(tempfile.mkdtemp(prefix=f"nvcre-bench-controller-{nodes}-"))
    bad = f"{NODE_PREFIX}-{3:0{max(2, len(str(nodes)))}d}"
    scenario = {"name": "gpu-off-bus", "seed": 1, "faults": [{"type": "gpu-off-bus", "node": bad, "gpu": 1}]}
    # The simulated fleet's kubelets are one Python process on the same (small) host as the
    # control plane and the controller; real kubelets run on their own nodes and a real
    # control plane has the cores for 4096 of them. Past 256 nodes the test bed renews each
    # node's Lease less often, keeping its renewals at 256 nodes' rate (25.6 a second; at
    # 4096 nodes and 10 s they were 410 a second, fell behind and healthy nodes went
    # NotReady), and the control plane waits five intervals before it calls a node silent.
    renew_s = max(10.0, nodes / LEASE_RENEWALS_PER_S)
    grace_s = None if renew_s <= 10.0 else int(5 * renew_s)
    with ControlPlane(work / "cp", node_monitor_grace_s=grace_s) as cp:
        kubectl = [str(cp.kubectl_path), "--kubeconfig", str(cp.kubeconfig)]
        subprocess.run(kubectl + ["apply", "--server-side", "-f", str(REPO / "charts/nvcre/crds")], check=True, capture_output=True)
        for plural in ("certifications", "workflows", "jobs"):
            subprocess.run(kubectl + ["wait", "--for=condition=Established", f"crd/{plural}.nvcre.nvidia.com"], check=True, capture_output=True)
        fleet = start_fleet(KubeletConfig(
            kubeconfig=str(cp.kubeconfig), state_dir=str(work / "fleet"), nodes=nodes, racks=max(1, nodes // 16),
            platform="onprem", gpu="gb200", name_prefix=NODE_PREFIX, time_scale=time_scale, scenario=scenario, lease_renew_s=renew_s,
            tls_cert=str(cp.kubelet_serving_cert), tls_key=str(cp.kubelet_serving_key), client_ca=str(cp.ca_cert),
        ), timeout_s=600)
        port = 19191
        ctl = start_controller(cp, work, port)
        kube = KubeClient.from_kubeconfig(str(cp.kubeconfig))
        ends = PodEnds(kube, "bench")
        try:
            subprocess.run(kubectl + ["create", "namespace", "bench"], check=True, capture_output=True)
            cpu0, wall0, requests0 = cpu_seconds(ctl.pid), time.time(), api_requests(scrape(port))
            kube.create({
                "apiVersion": NVCRE_API_VERSION, "kind": "Certification",
                "metadata": {"name": "bench", "namespace": "bench"},
                "spec": {"target": {}, "categories": [
                    # MNNVL off: the test bed has no ComputeDomain (NVIDIA DRA driver) CRD
                    {"domain": "communication", "variant": "nccl-all-reduce",
                     "options": {"testScale": scale, "enableMNNVL": False}}]},
            })
            ends.start()
            while True:
                cert = kube.get(NVCRE_API_VERSION, "Certification", "bench", "bench")
                if cond_time(cert, "Succeeded") or cond_time(cert, "Failed"):
                    break
                if time.time() - wall0 > timeout:
                    raise SystemExit(f"certification did not finish in {timeout:.0f}s: {json.dumps(cert.get('status'))[:800]}")
                time.sleep(1)
            verdict_at = time.time()
            time.sleep(3)  # the last pod ends on the watch
            cpu, rss = cpu_seconds(ctl.pid) - cpu0, peak_rss_mb(ctl.pid)
            final_metrics = scrape(port)
            requests = api_requests(final_metrics) - requests0
            passes = reconcile_passes(final_metrics)
            waited = api_wait(final_metrics)
            jobs = kube.list(NVCRE_API_VERSION, "Job", "bench")
            written = [o for kind, api in (("Certification", NVCRE_API_VERSION), ("Workflow", NVCRE_API_VERSION),
                                           ("Job", NVCRE_API_VERSION), ("ConfigMap", "v1"),
                                           ("BandwidthMeasurement", NVCRE_API_VERSION))
                       for o in kube.list(api, kind, "bench")]
            biggest = max(written, key=lambda o: len(json.dumps(o)), default=None)
            largest = ((len(json.dumps(biggest)), f"{biggest['kind']}/{biggest['metadata']['name']}", field_sizes(biggest))
                       if biggest else (0, "-", ""))
        finally:
            ends.stop.set()
            ctl.terminate()
            ctl.wait(timeout=30)
            fleet.stop(delete=False)

    intervals, lags, visible_lags, delivery, timelines = [], [], [], [], []
    for job in jobs:
        name, st = job["metadata"]["name"], job.get("status") or {}
        decided = cond_time(job, "Failed") or cond_time(job, "Succeeded")
        start, end = ts(st.get("workloadStartTime")), ends.ends.get(name)
        if start and (end or decided):
            intervals.append((start, max(start, end or decided)))
        if decided and end:
            end = ends.last_end(name, decided) or end  # not the pods the clean-up killed after the verdict
            lags.append(decided - end)
            timelines.append(ends.timeline(name, decided))
            if (visible := ends.visible(name, decided)) is not None:
                visible_lags.append(decided - visible)
                delivery.append(visible - end)
    workload = union_length(intervals)
    job_created = min((ts(j["metadata"].get("creationTimestamp")) or 0.0 for j in jobs), default=0.0)
    first_start = min((start for start, _ in intervals), default=0.0)
    start_timeline = (f"nvcre Job created +{job_created - wall0:.1f} s, first workload pod created "
                      f"+{(ends.first_created or wall0) - wall0:.1f} s, workload started +{first_start - wall0:.1f} s "
                      f"(0 = the Certification applied; one-second timestamps)")
    apply_to_verdict = verdict_at - wall0
    failed_nodes = sorted({n["name"] for n in (cert.get("status") or {}).get("failedNodes") or []})
    return {
        "nodes": nodes, "scale": scale, "jobs": len(jobs), "lease_renew_s": renew_s,
        "verdict": next((c["type"] for c in cert["status"]["conditions"] if c["status"] == "True"), "?"),
        "failed_nodes": failed_nodes[:5], "failed_node_count": len(failed_nodes), "bad_node": bad,
        "apply_to_verdict": apply_to_verdict, "workload": workload, "overhead": apply_to_verdict - workload,
        "lag_max": max(lags, default=float("nan")), "lag_median": sorted(lags)[len(lags) // 2] if lags else float("nan"),
        "seen_lag_median": sorted(visible_lags)[len(visible_lags) // 2] if visible_lags else float("nan"),
        "seen_lag_max": max(visible_lags, default=float("nan")),
        "delivery_median": sorted(delivery)[len(delivery) // 2] if delivery else float("nan"),
        "cpu": cpu, "rss": rss, "requests": requests, "largest": largest, "passes": passes, "waited": waited, "timeline": timelines[0] if len(timelines) == 1 else "", "start_timeline": start_timeline,
    }


def report(r: dict) -> list[str]:
    """Print one run's figures; returns the budgets it missed."""
    misses = []
    ratio = r["overhead"] / r["workload"] if r["workload"] else float("inf")
    print(f"{r['nodes']} nodes {r['scale']}: {r['jobs']} Jobs, verdict {r['verdict']}, {r['failed_node_count']} failed nodes "
          f"{r['failed_nodes']} (the bad one: {r['bad_node']}); test bed Leases renewed every {r['lease_renew_s']:.0f} s")
    print(f"  apply -> verdict {r['apply_to_verdict']:.1f} s, workload {r['workload']:.1f} s, "
          f"difference {r['overhead']:.1f} s = {ratio * 100:.0f} % of the workload time")
    print(f"  decision lag after the last pod ended: median {r['lag_median']:.1f} s, max {r['lag_max']:.1f} s "
          f"(budget {DECISION_LAG_BUDGET_S:.0f} s)")
    print(f"    of which the test bed: the last pod end reached the API server a median {r['delivery_median']:.1f} s after "
          f"the last pod ended; decision after it was visible: median {r['seen_lag_median']:.1f} s, "
          f"max {r['seen_lag_max']:.1f} s")
    print(f"    start: {r['start_timeline']}")
    if r.get("timeline"):
        print(f"    end: {r['timeline']}")
    print(f"  controller CPU {r['cpu']:.1f} s ({r['cpu'] / r['nodes'] * 1000:.1f} ms per node), peak RSS {r['rss']:.0f} MB "
          f"(budget {RSS_BUDGET_MB:.0f} MB)")
    print(f"  API requests {r['requests']:.0f} = {r['requests'] / max(r['jobs'], 1):.1f} per Job")
    print("  reconcile passes: " + ", ".join(f"{kind} {n:.0f} in {secs:.1f} s" for kind, (n, secs) in sorted(r["passes"].items())))
    print(f"  waited on the API server longest for: {r['waited']}")
    print(f"  largest object {r['largest'][1]}: {r['largest'][0] / 1024:.0f} KiB (budget {OBJECT_BUDGET // 1024} KiB; "
          f"{r['largest'][2]})")
    if r["nodes"] >= 1024 and r["scale"] == "full-scale" and ratio >= OVERHEAD_BUDGET:
        misses.append(f"{r['nodes']} {r['scale']}: apply->verdict minus workload {ratio * 100:.0f} %")
    if r["lag_max"] > DECISION_LAG_BUDGET_S:
        misses.append(f"{r['nodes']} {r['scale']}: decision lag {r['lag_max']:.1f} s")
    if r["rss"] >= RSS_BUDGET_MB:
        misses.append(f"{r['nodes']} {r['scale']}: RSS {r['rss']:.0f} MB")
    if r["largest"][0] >= OBJECT_BUDGET:
        misses.append(f"{r['nodes']} {r['scale']}: {r['largest'][1]} {r['largest'][0]} B")
    if r["bad_node"] not in r["failed_nodes"] or (r["scale"] == "intra-rack" and r["failed_node_count"] > 16):
        misses.append(f"{r['nodes']} {r['scale']}: wrong verdict {r['failed_node_count']} failed nodes")
    return misses


def linearity(results: list[dict]) -> list[str]:
    misses = []
    for scale in sorted({r["scale"] for r in results}):
        runs = sorted((r for r in results if r["scale"] == scale), key=lambda r: r["nodes"])
        if len(runs) < 2:
            continue
        small, large = runs[0], runs[-1]
        for key in ("cpu", "requests"):
            growth = (large[key] / large["nodes"]) / max(small[key] / small["nodes"], 1e-9)
            ok = growth <= LINEAR_BUDGET
            print(f"{scale} {key} per node {small['nodes']} -> {large['nodes']} nodes: x{growth:.2f} "
                  f"(budget x{LINEAR_BUDGET}) {'OK' if ok else 'OVER'}")
            if not ok:
                misses.append(f"{scale} {key} grows x{growth:.2f} per node")
    return misses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[256])
    parser.add_argument("--scales", nargs="+", default=["intra-rack", "full-scale"], choices=["intra-rack", "full-scale"])
    parser.add_argument("--time-scale", type=float, default=60.0, help="simulated seconds per wall second")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args(argv)
    results, misses = [], []
    for nodes in args.nodes:
        for scale in args.scales:
            result = run_once(nodes, scale, args.time_scale, args.timeout)
            results.append(result)
            misses += report(result)
            sys.stdout.flush()
    misses += linearity(results)
    for miss in misses:
        print(f"OVER BUDGET: {miss}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
