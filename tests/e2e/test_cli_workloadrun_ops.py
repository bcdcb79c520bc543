"""The CLI pieces that talk to the cluster, on the simulated fleet:
`cluster info --topology-key`, `render --dry-run` (certification, workloadrun, workflow)
judged by the API server's admission, and `workloadrun run` flags, `status`, `cancel`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from nvcre.kube.resources import NVCRE_API_VERSION

NVCRECTL = str(Path(sys.executable).with_name("nvcrectl"))
RACK_KEY = "topology.k8s.aws/network-node-layer-3"  # the sim's AWS fleet: one value per rack


def _cli(kubeconfig: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([NVCRECTL, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "KUBECONFIG": kubeconfig})


def _verdicts(stderr: str) -> dict[str, str]:
    """RESOURCE -> STATUS from the dry-run table on stderr."""
    rows = stderr.split("RESOURCE", 1)[-1].splitlines()[1:]
    return {r.split()[0]: r.split()[1] for r in rows if len(r.split()) >= 2 and "/" in r.split()[0]}


def _run(name: str, namespace: str, image: str = "nvcr.io/nvidia/pytorch:26.01-py3", **spec) -> dict:
    return {"apiVersion": NVCRE_API_VERSION, "kind": "WorkloadRun", "metadata": {"name": name, "namespace": namespace},
            "spec": {"image": image, "numNodes": 2, "framework": {"exec": {"command": ["sleep", "1000000"]}}, **spec}}


POLICY = """
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: e2e-dry-run-untrusted-images}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["nvcre.nvidia.com"]
      apiVersions: ["*"]
      operations: ["CREATE", "UPDATE"]
      resources: ["workloadruns"]
  validations:
  - expression: "!object.spec.image.startsWith('untrusted.example.com/')"
    message: images from untrusted.example.com are not allowed here
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: e2e-dry-run-untrusted-images}
spec:
  policyName: e2e-dry-run-untrusted-images
  validationActions: [Deny]
  matchResources:
    namespaceSelector:
      matchLabels: {e2e-dry-run: "NS"}
"""


def test_topology_key_and_server_side_dry_run(sim_fleet, kube, kubeconfig, kubectl, namespace, tmp_path, e2e):
    sim_fleet.start("healthy.yaml", nodes=4, racks=2)

    # cluster info groups by the label asked for, and refuses a key that is not one
    info = _cli(kubeconfig, "cluster", "info", "--topology-key", RACK_KEY, "-o", "json")
    assert info.returncode == 0, info.stderr
    summary = json.loads(info.stdout)
    assert summary["topologyKey"] == RACK_KEY and list(summary["topology"]) == [RACK_KEY]
    assert sorted(d["nodeCount"] for d in summary["topologyDomains"]) == [2, 2]
    assert sorted(n for d in summary["topologyDomains"] for n in d["nodes"]) == sorted(sim_fleet.nodes)
    bad = _cli(kubeconfig, "cluster", "info", "--topology-key", "Not A/label")
    assert bad.returncode == 2 and "--topology-key: " in bad.stderr and "Traceback" not in bad.stderr

    # certification render --dry-run: the fleet's own platform and GPU, every object admitted, none created
    cert = tmp_path / "cert.yaml"
    cert.write_text(yaml.safe_dump(e2e.certification("dry", namespace, [{"domain": "communication", "variant": "nccl-all-reduce"}])))
    rendered = _cli(kubeconfig, "certification", "render", str(cert), "--dry-run", "-o", "json")
    assert rendered.returncode == 0, rendered.stderr
    assert "discovered 4 target node(s): h100 on aws" in rendered.stderr
    objects = json.loads(rendered.stdout)
    assert objects and all(o["metadata"]["namespace"] == namespace for o in objects)
    verdicts = _verdicts(rendered.stderr)
    assert verdicts.pop("Certification/dry") == "OK"
    assert verdicts == {f"{o['kind']}/{o['metadata']['name']}": "OK" for o in objects}, rendered.stderr
    # the offline render for the same platform and GPU agrees on the objects
    offline = _cli(kubeconfig, "certification", "render", str(cert), "--platform", "aws", "--gpu-arch", "h100",
                   "--nodes", "4", "-o", "json")
    assert [(o["kind"], o["metadata"]["name"]) for o in json.loads(offline.stdout)] == \
        [(o["kind"], o["metadata"]["name"]) for o in objects]

    # workflow render --dry-run: the controller's Workflow and Jobs, judged by the CRD schemas
    wf = _cli(kubeconfig, "workflow", "render", str(cert), "--dry-run", "-o", "json")
    assert wf.returncode == 0, wf.stderr
    kinds = [(o["kind"], o["metadata"]["name"]) for o in json.loads(wf.stdout)]
    assert kinds[0][0] == "Workflow" and kinds[1] == ("Job", f"{kinds[0][1]}-job")
    verdicts = _verdicts(wf.stderr)
    assert verdicts[f"Workflow/{kinds[0][1]}"] == "OK" and verdicts[f"Job/{kinds[1][1]}"] == "OK", wf.stderr
    assert set(verdicts.values()) == {"OK"}, wf.stderr

    # an admission policy refuses one run: the dry-run says which object and why, and exits 2
    kubectl("label", "namespace", namespace, f"e2e-dry-run={namespace}")
    kubectl("apply", "-f", "-", input=POLICY.replace('"NS"', f'"{namespace}"'))
    try:
        good, untrusted = tmp_path / "good.yaml", tmp_path / "untrusted.yaml"
        good.write_text(yaml.safe_dump(_run("good", namespace)))
        untrusted.write_text(yaml.safe_dump(_run("untrusted", namespace, image="untrusted.example.com/x:1")))

        def refused():
            result = _cli(kubeconfig, "workloadrun", "render", str(untrusted), "--dry-run")
            return result if result.returncode == 2 else None

        result = e2e.wait_for(refused, 60, "the admission policy to refuse the dry-run")
        assert _verdicts(result.stderr)["WorkloadRun/untrusted"] == "INVALID"
        assert "images from untrusted.example.com are not allowed here" in result.stderr
        assert "refused 1 of" in result.stderr
        assert result.stdout.strip(), "the rendered objects are still printed"
        accepted = _cli(kubeconfig, "workloadrun", "render", str(good), "--dry-run")
        assert accepted.returncode == 0 and _verdicts(accepted.stderr)["WorkloadRun/good"] == "OK", accepted.stderr
    finally:
        kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "e2e-dry-run-untrusted-images",
                "--ignore-not-found")
    # nothing was created by any of it
    for kind in ("Certification", "WorkloadRun", "Workflow", "Job"):
        assert kube.list(NVCRE_API_VERSION, kind, namespace) == [], kind
    assert kube.list("batch/v1", "Job", namespace) == []


def _node_state(kube) -> dict:
    return {n["metadata"]["name"]: (n["metadata"].get("labels"), n.get("spec")) for n in kube.list("v1", "Node")}


def test_workloadrun_run_flags_status_and_cancel(sim_fleet, controller, kube, kubeconfig, namespace, tmp_path, e2e):
    sim_fleet.start("healthy.yaml", nodes=4, racks=2)
    controller.start()
    nodes_before = _node_state(kube)
    manifest = tmp_path / "run.yaml"
    body = _run("long", "")
    del body["metadata"]["namespace"]
    body["spec"]["numNodes"] = 3
    manifest.write_text(yaml.safe_dump(body))
    two = ",".join(sim_fleet.nodes[:2])
    mirror = "mirror.airgap.test:5000"
    created = _cli(kubeconfig, "workloadrun", "run", str(manifest), "-n", namespace, "--node-list", two,
                   "--test-scale", "full-scale", "--workload-registry", mirror, "--workload-registry-username", "u",
                   "--workload-registry-password", "p")
    assert created.returncode == 0, created.stderr
    assert kube.get("v1", "Secret", "nvcrectl-pull-long", namespace)["type"] == "kubernetes.io/dockerconfigjson"
    assert f"workloadrun.nvcre.nvidia.com/long created in namespace {namespace}" in created.stdout
    run = kube.get(NVCRE_API_VERSION, "WorkloadRun", "long", namespace)
    assert run["spec"]["target"]["nodeNames"] == sim_fleet.nodes[:2] and run["spec"]["numNodes"] == 2
    assert run["spec"]["orchestration"]["testScale"] == "full-scale"
    assert run["spec"]["image"] == f"{mirror}/nvidia/pytorch:26.01-py3"
    assert run["spec"]["imagePullSecrets"] == [{"name": "nvcrectl-pull-long"}]

    def running():
        result = _cli(kubeconfig, "workloadrun", "status", "long", "-n", namespace)
        return result if result.stdout.strip() == "InProgress" else None

    status = e2e.wait_for(running, 120, "the run to be InProgress", controller.log_tail)
    assert status.returncode == 0
    workloads = e2e.wait_for(lambda: kube.list("batch/v1", "Job", namespace), 120, "the workload to start", controller.log_tail)
    pods = [w["spec"]["template"]["spec"] for w in workloads]
    assert all(c["image"].startswith(mirror + "/") for p in pods for c in p["containers"]), pods
    assert all({"name": "nvcrectl-pull-long"} in (p.get("imagePullSecrets") or []) for p in pods)
    doc = _cli(kubeconfig, "workloadrun", "status", "long", "-n", namespace, "-o", "json")
    assert json.loads(doc.stdout)["status"] == "InProgress" and json.loads(doc.stdout)["namespace"] == namespace
    missing = _cli(kubeconfig, "workloadrun", "status", "nope", "-n", namespace)
    assert missing.returncode == 2 and "workloadrun 'nope' not found" in missing.stderr

    wrong = _cli(kubeconfig, "workloadrun", "cancel", "long")  # the default namespace: it is not there
    assert wrong.returncode == 2 and f"add -n {namespace}" in wrong.stderr
    cancelled = _cli(kubeconfig, "workloadrun", "cancel", "long", "-n", namespace)
    assert cancelled.returncode == 0 and "workloadrun.nvcre.nvidia.com/long cancelled" in cancelled.stdout, cancelled.stderr

    def all_gone():
        left = [kind for api, kind in ((NVCRE_API_VERSION, "WorkloadRun"), (NVCRE_API_VERSION, "Workflow"),
                                       (NVCRE_API_VERSION, "Job"), ("batch/v1", "Job")) if kube.list(api, kind, namespace)]
        return not left

    e2e.wait_for(all_gone, 120, "the run, its Workflow, Jobs and workloads to be deleted", controller.log_tail)
    again = _cli(kubeconfig, "workloadrun", "cancel", "long", "-n", namespace)
    assert again.returncode == 0 and "(nothing to cancel)" in again.stdout
    assert _node_state(kube) == nodes_before, "cancel never touches a Node"
