"""Benchmark: the controller's memory as a function of fleet size, without a control plane.

For each ``--nodes`` size it builds the simulated GB200 on-prem fleet (16 nodes per rack,
long real-looking node names) with ``nvcre.sim.fleet``, shapes every object as the API
server would serve it (uid, resourceVersion, creationTimestamp, managedFields; pods as
the Job controller, scheduler and kubelet leave them: the rendered template plus the
server's defaults, a service-account volume and a terminated status) and sends it as
JSON, like the wire, through the controller's real ingest path:

* the Nodes: a ``kube.watch.Reflector`` paginated list (500 a page, each page slimmed as it
  arrives, as the operator's reflectors do) into the operator's
  sink (``runtime.operator.Controller.replace``: the watch cache, the node fingerprints);
* the workload: ``reconcile_job`` renders and creates it over every node (full-scale
  all-reduce); its pods arrive as watch events (``Controller.apply``: the cache and the
  placement records), first Pending, then bound and terminated, one JSON document each;
* the decisions: the terminal ``reconcile_job`` pass (gather from the cache, decide,
  node results, evidence), then ``reconcile_workflow`` and ``reconcile_certification``
  (node-result ConfigMaps, the report's counts).

The in-memory API the reconcilers write to is the unit tests' ``FakeKube``, and the
served shapes come from their ``served_objects`` (``test_cache_slim.py`` uses the same pods); what it
holds is the API server's memory, not the controller's, so the figures are tracemalloc
differences across the controller's own steps: what the cache and the operator's
records *retain* per node, and the *peak* above that while ingesting and deciding.
RSS growth (VmRSS over the run) is printed beside them; it includes the fake API and
tracemalloc's own record of every live allocation, so it overstates.

Budget: peak RSS under 400 MB at 4096 nodes. The controller's RSS at a size is
estimated as its import baseline (``import nvcre.controller.main`` in a fresh
interpreter) + what it retains + the largest transient peak; the script exits 1 when
that, or the baseline + the RSS growth, exceeds 400 MB at any size (the budget holds
for 4096, so it must hold below).
Run: ``.venv/bin/python bench/controller_memory.py [--nodes 256 1024 4096]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "unit" / "controller"))  # FakeKube: the unit tests' in-memory API

from fake_kube import FakeKube  # noqa: E402
from served_objects import NOW, STAMP, off_bus, served_node, served_pod  # noqa: E402

from nvcre.controller import conditions as c  # noqa: E402
from nvcre.controller.context import Context, Settings  # noqa: E402
from nvcre.controller.reconcilers.certification import reconcile_certification  # noqa: E402
from nvcre.controller.reconcilers.job import reconcile_job  # noqa: E402
from nvcre.controller.reconcilers.workflow import reconcile_workflow  # noqa: E402
from nvcre.controller.runtime.cache import slim  # noqa: E402
from nvcre.controller.runtime.operator import Controller  # noqa: E402
from nvcre.kube.watch import Reflector, WatchSpec  # noqa: E402
from nvcre.sim.fleet import FleetSpec, build_fleet  # noqa: E402

API = "nvcre.nvidia.com/v1alpha1"
RSS_BUDGET_MB = 400.0
PREFIX = "dgx-gb200-nvl72-su01-rack-a01-compute-node-x"  # 49-character names, like real fleets'
MB = 1024 * 1024


class WireKube:
    """Serves LIST pages of JSON, as the API server's answers arrive at ``list_page``."""

    def __init__(self, objects: list[dict], page: int = 500) -> None:
        self.pages = [json.dumps({"items": objects[i:i + page]}).encode() for i in range(0, len(objects), page)]

    def list_page(self, api_version, kind, namespace=None, *, label_selector=None, limit=500, continue_token=None):
        at = int(continue_token or 0)
        items = json.loads(self.pages[at])["items"]
        return items, "1001", (str(at + 1) if at + 1 < len(self.pages) else None)


# ---------------------------------------------------------------- measuring
class Meter:
    """tracemalloc current/peak across named steps, and VmRSS."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, float]] = []  # (step, retained MB, peak above start MB, RSS MB)

    def step(self, name: str, fn):
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = fn()
        gc.collect()
        now, peak = tracemalloc.get_traced_memory()
        self.rows.append((name, (now - before) / MB, (peak - before) / MB, rss_mb()))
        return out


def rss_mb(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def import_baseline_mb() -> float:
    code = "import nvcre.controller.main, resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


# ---------------------------------------------------------------- one run
def plan(ctx: Context, kube: FakeKube) -> tuple[str, str]:
    """Certification -> Workflow -> one full-scale Job; returns (Workflow, Job) names."""
    kube.add({"apiVersion": API, "kind": "Certification", "metadata": {"name": "cert", "namespace": "ns"},
              "spec": {"target": {}, "categories": [
                  {"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "full-scale"}}]}})
    reconcile_certification(ctx, "ns", "cert")
    wf = kube.get(API, "Certification", "cert", "ns")["status"]["categoryStatuses"][0]["workflowRef"]["name"]
    reconcile_workflow(ctx, "ns", wf)
    reconcile_workflow(ctx, "ns", wf)
    return wf, next(n for k, n in kube.creates if k == "Job")


def pods_arrive(ctl: Controller, kube: FakeKube, names: list[str], bad: str) -> int:
    """Every pod's end as one watch event (JSON decoded on its own, as the watch does); the
    rank on ``bad`` exits 1 and so does the launcher (one GPU off the bus). Returns the
    size of the largest pod as served (JSON bytes)."""
    largest = 0
    batch = {o["metadata"]["name"]: o for (k, _, _), o in kube.objects.items() if k == "batch/v1/Job"}
    for bname, obj in sorted(batch.items()):
        launcher = "launcher" in bname
        placed = names[:1] if launcher else names
        for index, node in enumerate(placed):
            failed = launcher or node == bad
            pod = served_pod(obj, index, node, "Failed" if failed else "Succeeded", 1 if failed else 0)
            text = json.dumps(pod)
            largest = max(largest, len(text))
            ctl.apply("Pod", "MODIFIED", json.loads(text))
        done = "Failed" if launcher else "Complete"
        ended = dict(obj, status={"conditions": [{"type": done, "status": "True", "lastTransitionTime": STAMP}]})
        ctl.apply("batch.Job", "MODIFIED", json.loads(json.dumps(ended)))
    return largest


def run(nodes: int) -> dict:
    fleet = build_fleet(FleetSpec(nodes=nodes, racks=max(1, nodes // 16), platform="onprem", gpu="gb200", name_prefix=PREFIX))
    names = [n["metadata"]["name"] for n in fleet.nodes]
    wire = WireKube([served_node(n, i) for i, n in enumerate(fleet.nodes)])
    kube = FakeKube(fleet.nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: NOW)
    ctl = Controller(ctx, reconcilers={})
    meter = Meter()
    rss0 = rss_mb()

    def list_nodes() -> None:
        objects, _ = Reflector(wire, WatchSpec("v1", "Node", "Node", label_selector="nvidia.com/gpu.present"), ctl,
                               shrink=slim).list_all()  # each page slimmed as it arrives, as the operator does
        ctl.replace("Node", objects, None)
        for kind in ("Pod", "batch.Job"):  # the workload reflectors' first lists: nothing there yet
            ctl.replace(kind, [], None)

    meter.step("Nodes: paginated list into the cache", list_nodes)
    wf, job = meter.step("plan: Certification and Workflow passes", lambda: plan(ctx, kube))
    meter.step("Job pass: render and create the workload", lambda: reconcile_job(ctx, "ns", job))
    bad = len(names) // 2
    ctl.apply("Node", "MODIFIED", off_bus(served_node(fleet.nodes[bad], bad)))
    pod_json = meter.step("pods: one watch event each into the cache", lambda: pods_arrive(ctl, kube, names, names[bad]))
    meter.step("Job pass: gather, decide, node results", lambda: reconcile_job(ctx, "ns", job))
    jst = kube.get(API, "Job", job, "ns")["status"]
    phase = f"{c.phase_of(jst['conditions'])}, {jst.get('failedNodeCount', len(jst.get('failedNodes') or []))} node(s) named"
    ctl.observe("Job", kube.get(API, "Job", job, "ns"), "MODIFIED")
    meter.step("Workflow and Certification passes (report)", lambda: (reconcile_workflow(ctx, "ns", wf),
                                                                      reconcile_certification(ctx, "ns", "cert")))
    return {"nodes": nodes, "rows": meter.rows, "phase": phase, "rss_growth": rss_mb() - rss0,
            "node_json": len(json.dumps(json.loads(wire.pages[0])["items"][0])),
            "pod_json": pod_json}


def report(result: dict, baseline: float) -> float:
    """Prints one size's figures; returns the estimated controller RSS (MB)."""
    n, rows = result["nodes"], result["rows"]
    retained = sum(r[1] for r in rows)
    transient = max(r[2] - max(r[1], 0.0) for r in rows)
    estimate = baseline + retained + transient
    print(f"{n} nodes (served Node {result['node_json'] / 1024:.1f} KiB, largest pod {result['pod_json'] / 1024:.1f} KiB "
          f"of JSON); verdict {result['phase']}")
    print(f"  {'step':<46} {'retained MB':>12} {'peak MB':>9} {'VmRSS MB':>9}")
    for name, kept, peak, rss in rows:
        print(f"  {name:<46} {kept:>12.1f} {peak:>9.1f} {rss:>9.0f}")
    print(f"  retained {retained:.1f} MB = {retained * 1024 / n:.1f} KiB per node; largest transient {transient:.1f} MB; "
          f"RSS growth over the steps {result['rss_growth']:.0f} MB ({result['rss_growth'] * 1024 / n:.1f} KiB per node)")
    print(f"  controller peak RSS, estimated: {baseline:.0f} (imports) + {retained:.0f} + {transient:.0f} = {estimate:.0f} MB "
          f"(budget {RSS_BUDGET_MB:.0f} MB)")
    return max(estimate, baseline + result["rss_growth"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[256, 1024, 4096])
    args = parser.parse_args(argv)
    baseline = import_baseline_mb()
    print(f"controller import baseline (fresh interpreter): {baseline:.0f} MB")
    tracemalloc.start()
    misses = []
    for n in args.nodes:
        worst = report(run(n), baseline)
        if worst > RSS_BUDGET_MB:
            misses.append(f"{n} nodes: {worst:.0f} MB")
        gc.collect()
    if misses:
        print(f"MISS: controller RSS over {RSS_BUDGET_MB:.0f} MB: {', '.join(misses)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
