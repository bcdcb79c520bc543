"""A pinned group larger than 64 nodes is placed by its exceptions, and the real
scheduler still puts every rank on the group's nodes and none on the others
(docs/design/122-compact-placement.md)."""

from __future__ import annotations

from nvcre.kube.resources import NVCRE_API_VERSION

NODES = 72


def _affinity_terms(job: dict) -> list[list[dict]]:
    objects = job["spec"]["workload"]["native"]["objects"]
    worker = next(o for o in objects if o["kind"] == "Job" and o["metadata"]["name"].endswith("-worker"))
    terms = worker["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return [t["matchExpressions"] for t in terms]


def test_a_full_scale_group_of_72_is_pinned_by_its_exceptions(sim_fleet, controller, kube, namespace, e2e):
    sim_fleet.start("healthy.yaml", nodes=NODES, racks=2)
    controller.start()
    names = sorted(sim_fleet.nodes)
    assert len(names) == NODES
    left_out = [names[5], names[40]]  # schedulable GPU nodes the target does not name
    group = [n for n in names if n not in left_out]
    category = {"domain": "communication", "variant": "nccl-all-reduce", "options": {"testScale": "full-scale"}}
    cert = e2e.certification("compact", namespace, [category])
    cert["spec"]["target"]["nodeNames"] = group
    e2e.apply(kube, cert)
    cert = e2e.wait_terminal(kube, "Certification", "compact", namespace, 1200, controller)
    assert cert["status"]["categoryStatuses"][0]["status"] == "Succeeded", cert["status"]

    wf = kube.get(NVCRE_API_VERSION, "Workflow", cert["status"]["categoryStatuses"][0]["workflowRef"]["name"], namespace)
    jobs = kube.list(NVCRE_API_VERSION, "Job", namespace, label_selector=f"nvcre.nvidia.com/workflow={wf['metadata']['name']}")
    assert len(jobs) == 1
    job = jobs[0]
    assert sorted(job["spec"]["nodes"]) == group
    # the exceptions, not 70 hostnames
    assert _affinity_terms(job) == [[
        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": left_out},
        {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
    ]]
    # the scheduler put a rank on every group node and on nothing else
    assert job["status"]["nodesRan"] == group
