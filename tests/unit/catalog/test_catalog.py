"""The catalog as data: every entry resolves everywhere, each variable has one owner,
and the platform facts the reference documents show up where they should."""

from __future__ import annotations

import itertools

import pytest

from nvcre.api.certification import CertificationSpec
from nvcre.catalog.data import load_catalog
from nvcre.catalog.resolve import resolve_category, valid_categories
from nvcre.catalog.mpirun import mpirun_argv
from nvcre.workloads.render import render_workload
from nvcre.errors import ManifestError, UserError

CATEGORIES = [
    "communication/nccl-all-reduce",
    "communication/nccl-all-gather",
    "communication/nccl-alltoall",
    "communication/nccl-loopback",
    "communication/nccl-loopback-nvswitch",
    "diagnostics/dcgm-level4",
    "training/nemotron5-8b",
    "training/nemotron5-56b",
]


def _cat(key, **options):
    domain, variant = key.split("/")
    return {"domain": domain, "variant": variant, **({"options": options} if options else {})}


def resolve(key, platform, arch, spec=None, **kw):
    return resolve_category(_cat(key), spec, platform=platform, gpu_arch=arch, **kw)


def env_of(resolved):
    return dict(resolved.env)


def test_catalog_has_the_eight_categories_and_all_platforms():
    cat = load_catalog()
    assert sorted(valid_categories()) == sorted(CATEGORIES)
    assert set(cat.platforms) == {"aws", "gcp", "azure", "oci", "nscale", "togetherai", "mistral", "forge", "onprem"}
    assert set(cat.architectures) == {"gb200", "gb300", "h100", "h200", "b200", "b300", "a100", "l40s", "l40", "rtxpro6000"}


def _container_env_names(objects):
    """Every env list and every mpirun -x list in the objects, as lists of names."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("env"), list):
                found.append([e["name"] for e in node["env"]])
            for key in ("args", "command"):
                if isinstance(node.get(key), list):
                    seq = node[key]
                    names = [seq[i + 1].split("=", 1)[0] for i, a in enumerate(seq[:-1]) if a == "-x"]
                    if names:
                        found.append(names)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(objects)
    return found


@pytest.mark.parametrize("platform", sorted(load_catalog().platforms))
def test_every_category_resolves_and_no_variable_is_set_twice(platform):
    """Resolution raises CatalogError when two fragments claim one variable; rendering
    must then list each name once in every env list and every mpirun -x list."""
    for arch, key, adapter in itertools.product(load_catalog().architectures, CATEGORIES, ("native", "trainjob")):
        r = resolve(key, platform, arch)
        assert len({n for n, _ in r.env}) == len(r.env)
        objects = render_workload(r, name="w", namespace="ns", nodes=["n1", "n2"], adapter=adapter)
        lists = _container_env_names(objects)
        assert lists or key == "diagnostics/dcgm-level4", (platform, arch, key)
        for names in lists:
            assert len(names) == len(set(names)), (platform, arch, key, adapter, names)


def test_duplicate_owner_is_a_catalog_error(monkeypatch):
    from nvcre.catalog.data import Block
    from nvcre.catalog.layers import WorkloadDraft
    from nvcre.catalog.template import CatalogError

    entry = load_catalog().lookup("communication", "nccl-all-reduce")
    draft = WorkloadDraft(entry, "mpi", "img")
    with pytest.raises(CatalogError, match="sets NCCL_DEBUG, which entries/communication/nccl-all-reduce.yaml already sets"):
        draft.apply(Block("platform/x", "dup", {}, {"env": {"NCCL_DEBUG": "WARN"}}))
    draft.apply(Block("platform/x", "ok", {}, {"replaceEnv": {"NCCL_DEBUG": "WARN"}}))
    assert draft.env["NCCL_DEBUG"] == "WARN" and draft.env_sources["NCCL_DEBUG"] == "platform/x#ok"


def test_aws_gb200_has_efa_and_hugepages():
    r = resolve("communication/nccl-all-reduce", "aws", "gb200")
    env = env_of(r)
    assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1" and env["FI_EFA_FORK_SAFE"] == "1"
    assert r.workload.resources["hugepages-2Mi"] == "10256Mi"
    assert r.workload.resources["vpc.amazonaws.com/efa"] == "4"
    assert r.workload.compute_domain
    _, args = mpirun_argv(r.workload)
    assert "FI_PROVIDER=efa" in args and args[args.index("FI_PROVIDER=efa") - 1] == "-x"


def test_aws_gb300_is_roce_without_efa_or_hugepages():
    r = resolve("communication/nccl-all-reduce", "aws", "gb300")
    env = env_of(r)
    assert not any(name.startswith("FI_EFA") or name == "FI_PROVIDER" for name in env)
    assert not any(name.startswith("hugepages") or "efa" in name for name in r.workload.resources)
    assert env["NCCL_IB_GID_INDEX"] == "3"
    assert [c["deviceClass"] for c in r.workload.claims] == ["roce.networking.k8s.aws"]
    assert any("rm -rf /opt/amazon/efa" in line for line in r.workload.pre_command)
    objects = render_workload(r, name="w", namespace="ns", nodes=["a", "b"])
    kinds = [o["kind"] for o in objects]
    assert "ResourceClaimTemplate" in kinds and "ComputeDomain" in kinds


def test_oci_sets_gid_index_3_and_sriov_networks():
    r = resolve("communication/nccl-all-gather", "oci", "h100")
    assert env_of(r)["NCCL_IB_GID_INDEX"] == "3"
    assert r.workload.pod_annotations["k8s.v1.cni.cncf.io/networks"] == ",".join(["network-operator/sriov-net"] * 8)
    assert r.workload.resources["nvidia.com/mlnxnics"] == "8"
    # OCI GB200 defaults to no NIC: neither the request nor the annotation is rendered.
    gb200 = resolve("communication/nccl-all-gather", "oci", "gb200")
    assert "nvidia.com/mlnxnics" not in gb200.workload.resources
    assert "k8s.v1.cni.cncf.io/networks" not in gb200.workload.pod_annotations
    assert env_of(gb200)["UCX_IB_GID_INDEX"] == "3"


def test_oci_gb300_replaces_split_data_on_purpose_and_records_owner():
    r = resolve("communication/nccl-all-reduce", "oci", "gb300")
    assert env_of(r)["NCCL_IB_SPLIT_DATA_ON_QPS"] == "1"
    assert r.env_sources["NCCL_IB_SPLIT_DATA_ON_QPS"] == "platform/oci#roce-gb300"
    assert "NCCL_DMABUF_ENABLE" not in env_of(r)  # MNNVL on by default on GB300
    off = resolve_category(_cat("communication/nccl-all-reduce", enableMNNVL=False), None, platform="oci", gpu_arch="gb300")
    assert env_of(off)["NCCL_DMABUF_ENABLE"] == "0" and env_of(off)["NCCL_MNNVL_ENABLE"] == "0"
    assert not off.workload.compute_domain


def test_gcp_rtxpro6000_p2p_level_follows_gpus_per_node():
    eight = resolve("communication/nccl-all-reduce", "gcp", "rtxpro6000")
    four = resolve_category(_cat("communication/nccl-all-reduce", gpusPerNode=4), None, platform="gcp", gpu_arch="rtxpro6000")
    assert env_of(eight)["NCCL_P2P_LEVEL"] == "SYS" and env_of(four)["NCCL_P2P_LEVEL"] == "PHB"
    assert env_of(four)["NCCL_IB_DISABLE"] == "1"


def test_onprem_nic_request_only_when_known():
    bare = resolve("communication/nccl-all-reduce", "onprem", "gb200")
    assert set(bare.workload.resources) == {"nvidia.com/gpu"}
    detected = resolve("communication/nccl-all-reduce", "onprem", "gb200", nic_resource_name="rdma/ib")
    assert detected.workload.resources["rdma/ib"] == "8"


def test_nscale_uses_dra_for_gpus_and_nvswitch_claims_no_nic():
    r = resolve("communication/nccl-all-reduce", "nscale", "gb300")
    assert "nvidia.com/gpu" not in r.workload.resources
    assert {c["name"]: c["count"] for c in r.workload.claims} == {"gpu": "4", "rdma": "4"}
    nv = resolve("communication/nccl-loopback-nvswitch", "nscale", "gb300")
    assert [c["name"] for c in nv.workload.claims] == ["gpu"]
    dcgm = resolve("diagnostics/dcgm-level4", "nscale", "b200")
    assert "nvidia-dcgm-dra.nvidia-platform.svc:5555" in dcgm.workload.args


def test_unknown_category_names_the_field_and_lists_valid_ones():
    with pytest.raises(ManifestError) as err:
        resolve_category(_cat("communication/nccl-bogus"), None, platform="aws", gpu_arch="h100", index=3)
    assert err.value.field == "spec.categories[3].variant"
    assert "communication/nccl-all-reduce" in err.value.message and "training/nemotron5-8b" in err.value.message


def test_reference_name_is_canonical_and_the_old_spelling_an_alias():
    from nvcre.catalog.resolve import canonical_category

    assert "communication/nccl-alltoall" in valid_categories()
    assert "communication/nccl-all-to-all" not in valid_categories()
    assert resolve("communication/nccl-alltoall", "aws", "h100").variant == "nccl-alltoall"
    assert resolve("communication/nccl-all-to-all", "aws", "h100").variant == "nccl-alltoall"
    assert canonical_category({"domain": "communication", "variant": "nccl-all-to-all", "options": {"x": 1}}) == {
        "domain": "communication", "variant": "nccl-alltoall", "options": {"x": 1}}
    assert canonical_category({"domain": "communication", "variant": "bogus"})["variant"] == "bogus"


def test_missing_arch_is_refused():
    with pytest.raises(UserError, match="cannot determine the GPU architecture"):
        resolve("communication/nccl-all-reduce", "aws", "unknown")


def test_user_env_merges_by_name_and_reaches_mpi_ranks():
    spec = CertificationSpec.model_validate({
        "target": {},
        "env": [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "SITE", "value": "a"}],
        "categories": [_cat("communication/nccl-all-reduce", env=[{"name": "SITE", "value": "b"},
                                                                   {"name": "NCCL_IB_HCA", "value": "mlx5_0,mlx5_1"}])],
    })
    r = resolve_category(spec.categories[0], spec, platform="azure", gpu_arch="h100", index=0)
    env = env_of(r)
    assert env["NCCL_DEBUG"] == "WARN" and env["SITE"] == "b" and env["NCCL_IB_HCA"] == "mlx5_0,mlx5_1"
    assert [n for n, _ in r.env].index("NCCL_DEBUG") == 0  # replaced in place, not appended
    _, args = mpirun_argv(r.workload)
    assert "NCCL_IB_HCA=mlx5_0,mlx5_1" in args and args.count("NCCL_DEBUG=WARN") == 1
    assert r.env_sources["SITE"] == "options.env"


def test_trainer_args_cap_is_named():
    env = [{"name": f"V{i}", "value": "x"} for i in range(32)]
    spec = CertificationSpec.model_validate({"target": {}, "env": env, "categories": [_cat("communication/nccl-all-reduce")]})
    # 32 user variables fit: the cap is 128 items.
    resolve_category(spec.categories[0], spec, platform="onprem", gpu_arch="h100", index=0)
    with pytest.raises(ManifestError, match="Kubeflow Trainer accepts at most 128 trainer args"):
        resolve_category(spec.categories[0], spec, platform="gcp", gpu_arch="h100", index=0)


def test_workload_labels_merge_gang_queue_and_conflict():
    spec = CertificationSpec.model_validate({
        "target": {},
        "workloadMetadata": {"labels": {"environment": "burn-in"}},
        "gangScheduler": {"schedulerName": "kai-scheduler", "queue": "team-a"},
        "categories": [_cat("communication/nccl-all-reduce", workloadMetadata={"labels": {"kueue.x-k8s.io/queue-name": "nccl"}})],
    })
    r = resolve_category(spec.categories[0], spec, platform="aws", gpu_arch="h100", gang_scheduler=spec.gang_scheduler, index=0)
    assert r.labels == {"environment": "burn-in", "kueue.x-k8s.io/queue-name": "nccl", "kai.scheduler/queue": "team-a"}
    clash = CertificationSpec.model_validate({
        "target": {}, "gangScheduler": {"schedulerName": "kai-scheduler", "queue": "team-a"},
        "workloadMetadata": {"labels": {"kai.scheduler/queue": "team-b"}},
        "categories": [_cat("training/nemotron5-8b")],
    })
    with pytest.raises(ManifestError, match='conflicting label value "team-b", expected "team-a"'):
        resolve_category(clash.categories[0], clash, platform="aws", gpu_arch="h100", gang_scheduler=clash.gang_scheduler, index=0)
    many = CertificationSpec.model_validate({
        "target": {}, "gangScheduler": {"schedulerName": "kai-scheduler"},
        "workloadMetadata": {"labels": {f"k{i}": "v" for i in range(32)}},
        "categories": [_cat("training/nemotron5-8b")],
    })
    with pytest.raises(ManifestError, match="33 labels .* at most 32"):
        resolve_category(many.categories[0], many, platform="aws", gpu_arch="h100", gang_scheduler=many.gang_scheduler, index=0)


def test_threshold_the_entry_cannot_measure():
    with pytest.raises(ManifestError) as err:
        resolve_category(_cat("diagnostics/dcgm-level4", thresholds={"busBandwidthGBps": "value > 1"}), None,
                         platform="aws", gpu_arch="h100", index=0)
    assert err.value.field == "spec.categories[0].options.thresholds.busBandwidthGBps"
    spec = CertificationSpec.model_validate({"target": {}, "thresholds": {"busBandwidthGBps": "value > 1"},
                                             "categories": [_cat("training/nemotron5-8b")]})
    r = resolve_category(spec.categories[0], spec, platform="aws", gpu_arch="h100", index=0)
    assert r.thresholds == {} and any("does not apply" in w for w in r.warnings)


def test_defaults_timeouts_scales_and_sizing():
    ar = resolve("communication/nccl-all-reduce", "aws", "h100")
    assert (ar.timeout_per_job, ar.test_scale, ar.nodes_per_job) == ("1h", "full-scale", None)
    assert ar.measurement.to_spec() == {"logProfileRef": "nccl-bandwidth", "sampleInterval": "30s", "testType": "all_reduce"}
    diag = resolve_category(_cat("communication/nccl-all-reduce", testScale="diagnose"), None, platform="aws", gpu_arch="h100")
    assert diag.timeout_per_job == "15m"
    assert list(diag.workload.mpi.binary_args[-4:]) == ["-n", "5", "-N", "1"]
    dcgm = resolve("diagnostics/dcgm-level4", "aws", "a100")
    assert (dcgm.timeout_per_job, dcgm.nodes_per_job, dcgm.measurement) == ("2h", 1, None)
    assert dcgm.workload.command[0] == "dcgmi" and dcgm.workload.args[:5] == ("diag", "--host", "nvidia-dcgm.gpu-operator.svc:5555", "-r", "4")
    t56 = resolve("training/nemotron5-56b", "aws", "h100")
    assert (t56.tensor_parallel, t56.min_gpus, t56.timeout_per_job) == (8, 32, "24h")
    assert t56.valid_node_count(3) == 0 and t56.valid_node_count(7) == 7 and t56.valid_node_count(4) == 4
    t8 = resolve("training/nemotron5-8b", "aws", "gb300")  # gb300 uses the gb200 (default) row
    assert t8.tensor_parallel == 1 and t8.valid_node_count(1) == 1
    assert "pretrain_gpt.py" in t8.workload.command[2] and "torchrun" in t8.workload.command[2]


def test_image_override_reaches_launcher_and_shared_init_but_not_sidecars():
    spec = CertificationSpec.model_validate({"target": {}, "image": "registry.example.com/pt:1",
                                             "imagePullSecrets": [{"name": "mirror"}],
                                             "categories": [_cat("training/nemotron5-8b"), _cat("communication/nccl-all-reduce")]})
    t = resolve_category(spec.categories[0], spec, platform="gcp", gpu_arch="h100", index=0)
    objs = render_workload(t, name="w", namespace="ns", nodes=["a", "b"])
    job = objs[-1]["spec"]["template"]["spec"]
    assert job["containers"][0]["image"] == "registry.example.com/pt:1"
    inits = {c["name"]: c["image"] for c in job["initContainers"]}
    assert inits["megatron-source"] == "registry.example.com/pt:1"
    assert inits["tcpxo-daemon"].startswith("us-docker.pkg.dev/")
    assert job["imagePullSecrets"] == [{"name": "mirror"}]
    c = resolve_category(spec.categories[1], spec, platform="aws", gpu_arch="h100", index=1)
    objs = render_workload(c, name="w", namespace="ns", nodes=["a", "b"])
    launcher = [o for o in objs if o["metadata"]["name"] == "w-launcher"][0]["spec"]["template"]["spec"]
    assert launcher["containers"][0]["image"] == "registry.example.com/pt:1"
    assert launcher["imagePullSecrets"] == [{"name": "mirror"}]
