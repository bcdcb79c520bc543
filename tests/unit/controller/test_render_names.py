"""`nvcrectl certification render` names every object as the controller does: run the
controller on the same Certification (in-memory API) and compare what each creates,
including an alias category (named by the catalog's spelling) and a category repeated
with options the name suffix does not show (the controller adds a hash)."""

from __future__ import annotations

import yaml

from nvcre.cli.render import certification_objects
from nvcre.controller.reconcilers.certification import reconcile_certification
from nvcre.controller.context import Context, Settings
from nvcre.controller.reconcilers.job import reconcile_job
from nvcre.controller.reconcilers.workflow import reconcile_workflow
from nvcre.sim.fleet import FleetSpec, build_fleet

from fake_kube import FakeKube

API = "nvcre.nvidia.com/v1alpha1"
CATEGORIES = [
    {"domain": "communication", "variant": "nccl-all-to-all", "options": {"nodesPerJob": 2}},  # alias, two groups
    {"domain": "communication", "variant": "nccl-all-reduce",
     "options": {"nodesPerJob": 4, "thresholds": {"busBandwidthGBps": "value >= 1"}}},
    {"domain": "communication", "variant": "nccl-all-reduce",  # same name suffix, other thresholds
     "options": {"nodesPerJob": 4, "thresholds": {"busBandwidthGBps": "value >= 2"}}},
    {"domain": "communication", "variant": "nccl-loopback", "options": {"testScale": "intra-node"}},
]


def _controller_names(cert: dict, nodes: list[dict]) -> list[tuple[str, set[str]]]:
    """(Workflow name, names of the workload objects its Jobs created) per category."""
    kube = FakeKube(nodes)
    ctx = Context(kube=kube, settings=Settings(), clock=lambda: 1_800_000_000.0)
    kube.add(cert)
    out = []
    for index in range(len(CATEGORIES)):
        reconcile_certification(ctx, "ns", "gpu-cluster-cert")
        reconcile_certification(ctx, "ns", "gpu-cluster-cert")
        before = len(kube.creates)
        wf = kube.get(API, "Certification", "gpu-cluster-cert", "ns")["status"]["categoryStatuses"][index]["workflowRef"]["name"]
        reconcile_workflow(ctx, "ns", wf)
        reconcile_workflow(ctx, "ns", wf)
        jobs = [n for k, n in kube.creates[before:] if k == "Job"]  # nvcre Jobs: the workload's are made next
        for job in jobs:
            reconcile_job(ctx, "ns", job)
        made = {n for k, n in kube.creates[before:] if k not in ("Workflow", "BandwidthMeasurement", "GoodputMeasurement")}
        made -= set(jobs)
        assert {f"{j}-workload" for j in jobs} <= made
        out.append((wf, made))
        kube.objects[(f"{API}/Workflow", "ns", wf)]["status"]["conditions"] = [
            {"type": "Succeeded", "status": "True", "reason": "AllGroupsSucceeded", "message": "",
             "lastTransitionTime": "2026-11-30T00:00:00Z"}]
    return out


def test_render_and_the_controller_name_every_object_alike(tmp_path):
    fleet = build_fleet(FleetSpec(nodes=4, racks=1))
    names = [n["metadata"]["name"] for n in fleet.nodes]
    cert = {"apiVersion": API, "kind": "Certification", "metadata": {"name": "gpu-cluster-cert", "namespace": "ns"},
            "spec": {"target": {"nodeNames": names}, "categories": CATEGORIES}}
    path = tmp_path / "cert.yaml"
    path.write_text(yaml.safe_dump(cert))
    per_category: list = []
    _, comments = certification_objects(str(path), platform="aws", gpu_arch="h100", nodes=None, adapter="native",
                                        namespace="ns", per_category=per_category)
    rendered_workflows = [c.split("; Workflow ", 1)[1] for c in comments if "; Workflow " in c]
    controller = _controller_names(cert, fleet.nodes)
    assert rendered_workflows == [wf for wf, _ in controller]
    assert len(set(rendered_workflows)) == len(CATEGORIES)  # the repeated category runs as its own Workflow
    for (key, objects), (wf, made) in zip(per_category, controller):
        rendered = {o["metadata"]["name"] for o in objects}
        assert made and made <= rendered, (key, wf, sorted(made - rendered))
