"""GCP H100 (TCPXO): GPU NIC networks from node allocatable, plugin version from the installer."""

from __future__ import annotations

import json

import pytest

from nvcre.catalog.resolve import resolve_category, resolve_workloadrun
from nvcre.discovery.gke import DEFAULT_NETWORKS, detect_gke_networks, detect_tcpxo_plugin, profile_for

NETS = [f"gpu-nic-{i}" for i in range(8)]


def _node(name, networks):
    alloc = {"cpu": "200", "nvidia.com/gpu": "8", "networking.gke.io.networks/default": "1"}
    for net in networks:
        alloc[f"networking.gke.io.networks/{net}"] = "1"
        alloc[f"networking.gke.io.networks/{net}.IP"] = "1"
    return {"metadata": {"name": name}, "status": {"allocatable": alloc}}


def _installer(version, name="nccl-tcpxo-installer-abcde"):
    image = f"us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:{version}"
    return {"metadata": {"name": name, "namespace": "kube-system", "labels": {"k8s-app": "nccl-tcpxo-installer"}},
            "spec": {"initContainers": [{"name": "nccl-tcpxo-installer", "image": image}],
                     "containers": [{"name": "pause", "image": "gke.gcr.io/pause:3.8"}]}}


def test_networks_read_from_allocatable_in_natural_order():
    names = [f"vpc{i}" for i in (10, 2, 3, 4, 5, 6, 7, 8)]
    found = detect_gke_networks([_node("a", names), _node("b", names)])
    assert found.detected and found.message is None
    assert found.names == ("vpc2", "vpc3", "vpc4", "vpc5", "vpc6", "vpc7", "vpc8", "vpc10")
    interfaces = json.loads(found.interfaces_annotation())
    assert interfaces[0] == {"interfaceName": "eth0", "network": "default"}
    assert interfaces[8] == {"interfaceName": "eth8", "network": "vpc10"}


@pytest.mark.parametrize("nodes, says", [
    ([_node("a", NETS), _node("b", NETS[:7] + ["other"])], "2 different sets"),
    ([_node("a", NETS[:4]), _node("b", NETS[:4])], "advertise 4 GKE networks"),
    ([_node("a", [])], "advertise 0 GKE networks (none)"),
])
def test_networks_fall_back_with_a_reason(nodes, says):
    found = detect_gke_networks(nodes)
    assert found.names == DEFAULT_NETWORKS and not found.detected
    assert says in found.message and "vpc1" in found.message


@pytest.mark.parametrize("version, plugin, daemon, cuda13, warned", [
    ("v1.0.15", "v1.0.15", "v1.0.21", False, False),
    ("v1.0.16", "v1.0.16", "v1.0.22", False, False),
    ("v1.0.17", "v1.0.17", "v1.0.23", True, False),
    ("v1.0.12", "v1.0.15", "v1.0.21", False, True),   # older: the oldest known profile
    ("v1.0.19", "v1.0.17", "v1.0.23", True, True),    # newer: the newest known
    ("latest", "v1.0.15", "v1.0.21", False, True),    # unreadable tag
])
def test_plugin_version_mapping(version, plugin, daemon, cuda13, warned):
    p = detect_tcpxo_plugin([_installer(version)])
    assert (p.plugin, p.daemon, p.cuda13) == (plugin, daemon, cuda13)
    assert bool(p.message) == warned


def test_plugin_fallbacks_without_installer_or_mid_rollout():
    none = detect_tcpxo_plugin([{"metadata": {"name": "other", "labels": {}}, "spec": {"containers": []}}])
    assert none.plugin == "v1.0.15" and "not detected" in none.message
    mixed = detect_tcpxo_plugin([_installer("v1.0.16", "a"), _installer("v1.0.17", "b")])
    assert mixed.plugin == "v1.0.15" and "v1.0.16, v1.0.17" in mixed.message
    assert profile_for("v1.0.17").nccl_image is None and profile_for("v1.0.15").nccl_image.endswith("25.06-py3")


def _resolve(variant, **kw):
    domain = "training" if variant.startswith("nemotron") else "communication"
    return resolve_category({"domain": domain, "variant": variant}, None, platform="gcp", gpu_arch="h100", **kw)


def test_resolve_uses_the_detected_networks_and_plugin_profile():
    nets = detect_gke_networks([_node("a", NETS)])
    new = detect_tcpxo_plugin([_installer("v1.0.17")])
    r = _resolve("nccl-all-reduce", gke_networks=nets, tcpxo=new)
    annotation = json.loads(r.workload.pod_annotations["networking.gke.io/interfaces"])
    assert [i["network"] for i in annotation[1:]] == NETS
    assert r.image == "nvcr.io/nvidia/pytorch:26.01-py3"  # CUDA 13 plugin: the entry's own image
    assert r.workload.sidecars[0]["image"].endswith("tcpgpudmarxd-dev:v1.0.23")
    assert r.events == ()
    t = _resolve("nemotron5-8b", gke_networks=nets, tcpxo=new)
    assert t.image == "nvcr.io/nvidia/pytorch:25.08-py3"
    old = _resolve("nccl-all-reduce", gke_networks=nets, tcpxo=detect_tcpxo_plugin([_installer("v1.0.16")]))
    assert old.image == "nvcr.io/nvidia/pytorch:25.06-py3" and old.workload.sidecars[0]["image"].endswith(":v1.0.22")


def test_resolve_reports_the_fallbacks_as_warning_events():
    r = _resolve("nccl-all-gather", gke_networks=detect_gke_networks([_node("a", NETS[:3])]),
                 tcpxo=detect_tcpxo_plugin([]))
    assert [(t, reason) for t, reason, _ in r.events] == [("Warning", "GKENetworkDetection"), ("Warning", "TCPXOPluginDetection")]
    assert len(r.warnings) >= 2
    # offline render (nothing read): the defaults, silently
    plain = _resolve("nccl-all-gather")
    assert plain.events == () and '"network":"vpc8"' in plain.workload.pod_annotations["networking.gke.io/interfaces"]


def test_workloadrun_gets_the_detected_networks():
    run = {"metadata": {"name": "r"}, "spec": {"image": "img", "numNodes": 2, "framework": {"exec": {"command": ["true"]}}}}
    r = resolve_workloadrun(run, platform="gcp", gpu_arch="h100", gke_networks=detect_gke_networks([_node("a", NETS)]))
    assert '"network":"gpu-nic-7"' in r.workload.pod_annotations["networking.gke.io/interfaces"]
