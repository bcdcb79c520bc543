"""Shape contracts of the two adapters (what the controller and the simulated fleet rely on)."""

from __future__ import annotations

import pytest

from nvcre.catalog.resolve import resolve_category, resolve_workloadrun
from nvcre.workloads.render import render_workload
from nvcre.workloads.common import LABEL_GROUP, LABEL_JOB, LABEL_ROLE, LABEL_WORKLOAD

CORE_KINDS = {"Job", "Service", "ConfigMap", "Secret", "ComputeDomain", "ResourceClaimTemplate", "PersistentVolumeClaim"}


def _r(key, platform="aws", arch="h100", **options):
    domain, variant = key.split("/")
    cat = {"domain": domain, "variant": variant}
    if options:
        cat["options"] = options
    return resolve_category(cat, None, platform=platform, gpu_arch=arch)


def _pod_templates(objects):
    out = []
    for o in objects:
        if o["kind"] == "Job":
            out.append(o["spec"]["template"])
        elif o["kind"] == "TrainingRuntime":
            out += [rj["template"]["spec"]["template"] for rj in o["spec"]["template"]["spec"]["replicatedJobs"]]
    return out


def test_native_mpi_is_core_kubernetes_with_launcher_running_mpirun():
    objs = render_workload(_r("communication/nccl-all-reduce"), name="w", namespace="ns", nodes=["a", "b", "c"],
                           job="cert-job", group="group-0")
    assert {o["kind"] for o in objs} <= CORE_KINDS
    jobs = {o["metadata"]["name"]: o for o in objs if o["kind"] == "Job"}
    worker, launcher = jobs["w-worker"], jobs["w-launcher"]
    assert worker["spec"]["completionMode"] == "Indexed" and worker["spec"]["completions"] == 3
    wpod = worker["spec"]["template"]["spec"]
    assert wpod["subdomain"] == "w" and "/usr/sbin/sshd -De" in wpod["containers"][0]["command"][2]
    assert wpod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert {"name": "dshm", "mountPath": "/dev/shm"} in wpod["containers"][0]["volumeMounts"]
    affinity = wpod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert affinity == [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["a", "b", "c"]}]}]
    lpod = launcher["spec"]["template"]["spec"]
    args = lpod["containers"][0]["args"]
    assert args[:3] == ["timeout", "3600", "/opt/amazon/openmpi/bin/mpirun"]
    assert "/opt/nccl-tests/build/all_reduce_perf" in args
    assert args[-10:] == ["-b", "8", "-e", "16G", "-f", "2", "-n", "100", "-N", "10"]
    assert "ssh" in lpod["containers"][0]["command"][2] and '"$@"' in lpod["containers"][0]["command"][2]
    for template in _pod_templates(objs):
        labels = template["metadata"]["labels"]
        assert labels[LABEL_JOB] == "cert-job" and labels[LABEL_GROUP] == "group-0" and labels[LABEL_WORKLOAD] == "w"
    assert launcher["spec"]["template"]["metadata"]["labels"][LABEL_ROLE] == "launcher"
    hostfile = [o for o in objs if o["kind"] == "ConfigMap"][0]["data"]["hostfile"]
    assert hostfile.splitlines() == [f"w-worker-{i}.w.ns.svc slots=8" for i in range(3)]


def test_native_torchrun_ranks_from_completion_index():
    objs = render_workload(_r("training/nemotron5-8b"), name="t", namespace="ns", nodes=["a", "b"])
    job = [o for o in objs if o["kind"] == "Job"][0]
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["PET_NODE_RANK"]["valueFrom"]["fieldRef"]["fieldPath"].endswith("job-completion-index']")
    assert env["PET_MASTER_ADDR"]["value"] == "t-0.t.ns.svc" and env["PET_NNODES"]["value"] == "2"
    assert job["spec"]["completionMode"] == "Indexed"
    assert any(o["kind"] == "Service" for o in objs)


def test_trainjob_mpi_shape_and_kai_drops_depends_on():
    objs = render_workload(_r("communication/nccl-all-gather"), name="w", namespace="ns", nodes=["a", "b"], adapter="trainjob")
    runtime, trainjob = objs[-2], objs[-1]
    assert runtime["kind"] == "TrainingRuntime" and trainjob["kind"] == "TrainJob"
    assert runtime["spec"]["mlPolicy"]["mpi"]["numProcPerNode"] == 8
    rjobs = {rj["name"]: rj for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]}
    assert rjobs["launcher"]["dependsOn"] == [{"name": "node", "status": "Ready"}]
    assert trainjob["spec"]["trainer"]["command"] == ["timeout", "3600", "/opt/amazon/openmpi/bin/mpirun"]
    assert trainjob["spec"]["runtimeRef"]["name"] == "w-runtime"
    kai = resolve_category({"domain": "communication", "variant": "nccl-all-gather"}, None, platform="aws", gpu_arch="h100",
                           gang_scheduler={"schedulerName": "kai-scheduler", "queue": "q1"})
    objs = render_workload(kai, name="w", namespace="ns", nodes=["a", "b"], adapter="trainjob")
    runtime, trainjob = objs[-2], objs[-1]
    rjobs = {rj["name"]: rj for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]}
    assert "dependsOn" not in rjobs["launcher"]
    assert trainjob["metadata"]["labels"]["kai.scheduler/queue"] == "q1"
    for template in _pod_templates(objs):
        assert template["spec"]["schedulerName"] == "kai-scheduler"
        assert template["metadata"]["labels"]["kai.scheduler/queue"] == "q1"
    assert trainjob["spec"]["trainer"]["args"][:2] == ["timeout", "3600"]


@pytest.mark.parametrize("adapter", ["native", "trainjob"])
def test_compute_domain_sized_to_group_and_claimed(adapter):
    objs = render_workload(_r("training/nemotron5-8b", "gcp", "gb200"), name="t", namespace="ns", nodes=["a", "b", "c"], adapter=adapter)
    cd = [o for o in objs if o["kind"] == "ComputeDomain"][0]
    assert cd["spec"]["numNodes"] == 3 and cd["spec"]["channel"]["resourceClaimTemplate"]["name"] == "t-channel"
    pod = _pod_templates(objs)[0]["spec"]
    assert pod["resourceClaims"] == [{"name": "compute-domain-channel", "resourceClaimTemplateName": "t-channel"}]
    assert {"key": "kubernetes.io/arch", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"} in pod["tolerations"]


def test_unpinned_carries_target_affinity_not_hostnames_and_no_blanket_toleration():
    r = _r("communication/nccl-all-reduce", nodesPerJob=4, placement="Unpinned")
    target = {"nodeSelector": {"pool": "gpu"}, "matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}
    objs = render_workload(r, name="w", namespace="ns", nodes=[], target=target)
    worker = [o for o in objs if o["metadata"]["name"] == "w-worker"][0]
    assert worker["spec"]["completions"] == 4
    pod = worker["spec"]["template"]["spec"]
    reqs = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]["matchExpressions"]
    assert reqs == [{"key": "pool", "operator": "In", "values": ["gpu"]}, {"key": "rack", "operator": "In", "values": ["r1"]}]
    assert "tolerations" not in pod
    assert "nvcre.nvidia.com/group-nodes" not in worker["metadata"]["annotations"]


def test_taint_selectors_replace_the_blanket_toleration():
    target = {"taintSelectors": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}
    r = resolve_category({"domain": "communication", "variant": "nccl-loopback"}, None, platform="aws", gpu_arch="h100", target=target)
    assert r.node_health_expression == ""
    objs = render_workload(r, name="w", namespace="ns", nodes=["a"], target=target)
    assert objs[-1]["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}]


def test_aws_gb300_loopback_strips_efa_then_runs_real_binary():
    objs = render_workload(_r("communication/nccl-loopback", "aws", "gb300"), name="w", namespace="ns", nodes=["a"])
    container = objs[-1]["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["/bin/sh", "-c"] and "rm -rf /opt/amazon/efa" in container["command"][2]
    assert container["args"][0] == "/opt/nccl-tests/build/all_reduce_perf"
    assert container["args"][1:] == ["-b", "8", "-e", "16G", "-f", "2", "-g", "4", "-n", "10", "-N", "2"]


def test_workloadrun_mpi_forwards_env_and_user_args():
    run = {"metadata": {"name": "nccl"}, "spec": {
        "image": "nvcr.io/nvidia/pytorch:26.01-py3", "numNodes": 2,
        "framework": {"mpi": {"binary": "/usr/local/bin/all_reduce_perf_mpi", "args": ["-b", "8", "-e", "32G"],
                              "mpirunPath": "/usr/local/mpi/bin/mpirun", "mpiArgs": ["--bind-to", "none"]}},
        "env": [{"name": "NCCL_SOCKET_IFNAME", "value": "ens1"}, {"name": "EXTRA", "value": "1"}]}}
    r = resolve_workloadrun(run, platform="aws", gpu_arch="gb200")
    env = dict(r.env)
    assert env["NCCL_SOCKET_IFNAME"] == "ens1" and env["NCCL_MNNVL_ENABLE"] == "1" and env["FI_PROVIDER"] == "efa"
    assert r.workload.compute_domain
    objs = render_workload(r, name="nccl-job", namespace="ns", nodes=["a", "b"])
    args = [o for o in objs if o["metadata"]["name"] == "nccl-job-launcher"][0]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[-5:] == ["/usr/local/bin/all_reduce_perf_mpi", "-b", "8", "-e", "32G"]
    assert "--bind-to" in args and "NCCL_SOCKET_IFNAME=ens1" in args and "EXTRA=1" in args


@pytest.mark.parametrize("adapter", ["native", "trainjob"])
def test_workloadrun_inline_config_mounted_at_config(adapter):
    run = {"metadata": {"name": "train"}, "spec": {
        "image": "img", "numNodes": 2, "framework": {"exec": {"command": ["/bin/bash", "/config/run.sh"]}},
        "config": {"inline": {"run.sh": "echo hi\n"}}}}
    r = resolve_workloadrun(run, platform="onprem", gpu_arch="h100")
    objs = render_workload(r, name="train-job", namespace="ns", nodes=["a", "b"], adapter=adapter)
    cm = [o for o in objs if o["kind"] == "ConfigMap"][0]
    assert cm["metadata"]["name"] == "train-job-config" and cm["data"] == {"run.sh": "echo hi\n"}
    pod = _pod_templates(objs)[0]["spec"]
    assert {"name": "config-volume", "configMap": {"name": "train-job-config", "defaultMode": 0o755}} in pod["volumes"]
    assert {"name": "config-volume", "mountPath": "/config", "readOnly": True} in pod["containers"][0]["volumeMounts"]


def test_workloadrun_reserved_mount_path_is_refused():
    from nvcre.errors import ManifestError

    run = {"metadata": {"name": "x"}, "spec": {
        "image": "img", "numNodes": 1, "framework": {"exec": {"command": ["true"]}},
        "volumes": [{"name": "data", "emptyDir": {}}], "volumeMounts": [{"name": "data", "mountPath": "/dev/shm"}]}}
    with pytest.raises(ManifestError, match=r"spec.volumeMounts\[0\].mountPath"):
        resolve_workloadrun(run, platform="aws", gpu_arch="h100")


def test_workloadrun_value_from_reaches_container_and_mpi_by_name():
    run = {"metadata": {"name": "m"}, "spec": {
        "image": "img", "numNodes": 2,
        "framework": {"mpi": {"binary": "/bin/prog", "mpirunPath": "/usr/bin/mpirun"}},
        "env": [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}}, {"name": "A", "value": "1"}]}}
    r = resolve_workloadrun(run, platform="onprem", gpu_arch="h100")
    objs = render_workload(r, name="m-job", namespace="ns", nodes=["a", "b"])
    launcher = [o for o in objs if o["metadata"]["name"] == "m-job-launcher"][0]["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "t"}}} in launcher["env"]
    args = launcher["args"]
    assert args[args.index("TOKEN") - 1] == "-x" and "A=1" in args and "TOKEN=" not in " ".join(args)


@pytest.mark.parametrize("adapter", ["native", "trainjob"])
def test_a_large_group_is_pinned_by_its_exceptions_when_the_nodes_are_known(adapter):
    """With the Nodes known (as the controller renders) a group over 64 nodes names only the
    node it leaves out, and drops the group-nodes annotation; offline it lists them all."""
    names = [f"n{i:03d}" for i in range(80)]
    fleet = {n: {"kubernetes.io/hostname": n, "rack": "r0"} for n in names}
    r = _r("communication/nccl-all-reduce")
    for nodes, known, want in [(names[:64], fleet, "In"), (names[1:], fleet, "NotIn"), (names[1:], None, "In")]:
        objs = render_workload(r, name="w", namespace="ns", nodes=nodes, adapter=adapter, fleet=known)
        pod = _pod_templates(objs)[0]["spec"]
        terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert [t["matchExpressions"][0]["operator"] for t in terms] == [want]
        assert terms[0]["matchExpressions"][0]["values"] == (["n000"] if want == "NotIn" else nodes)
        annotated = [o for o in objs if "nvcre.nvidia.com/group-nodes" in (o["metadata"].get("annotations") or {})]
        assert bool(annotated) == (len(nodes) <= 64)
