"""GKE A3 Mega (H100, GPUDirect-TCPXO): what the nodes and the plugin installer say.

Two facts decide how a TCPXO workload must be rendered, and both vary per cluster:

* the names of the eight GPU NIC networks (the user names them when creating the
  node pool); the node advertises each as allocatable ``networking.gke.io.networks/<name>``
  and the pod's ``networking.gke.io/interfaces`` annotation must name exactly those;
* the TCPXO NCCL plugin version the ``nccl-tcpxo-installer`` DaemonSet put on the nodes,
  which fixes the CUDA userspace the workload image must have and the matching
  ``tcpgpudmarxd`` daemon.

Both are pure functions over Node and Pod dicts. When a fact cannot be read cleanly the
defaults are used and a message says so (Warning ``GKENetworkDetection`` /
``TCPXOPluginDetection``, as the reference emits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

NETWORK_PREFIX = "networking.gke.io.networks/"
GPU_NIC_COUNT = 8
DEFAULT_NETWORKS = tuple(f"vpc{i}" for i in range(1, GPU_NIC_COUNT + 1))
INSTALLER_LABEL = ("k8s-app", "nccl-tcpxo-installer")
INSTALLER_NAMESPACE = "kube-system"
PLUGIN_IMAGE = "nccl-plugin-gpudirecttcpx"


@dataclass(frozen=True)
class GkeNetworks:
    names: tuple[str, ...]  # eth1..eth8 map to these, in order
    detected: bool
    message: str | None = None  # why the defaults are used (GKENetworkDetection)

    def interfaces_annotation(self) -> str:
        """The ``networking.gke.io/interfaces`` value: eth0 on the default network, then the GPU NICs."""
        parts = ['{"interfaceName":"eth0","network":"default"}']
        parts += [f'{{"interfaceName":"eth{i}","network":"{name}"}}' for i, name in enumerate(self.names, start=1)]
        return "[" + ",".join(parts) + "]"


def _natural(name: str) -> list[Any]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _node_networks(node: Mapping[str, Any]) -> frozenset[str]:
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    names = set()
    for key in allocatable:
        if not key.startswith(NETWORK_PREFIX):
            continue
        name = key[len(NETWORK_PREFIX):]
        if name and not name.endswith(".IP") and name != "default" and "/" not in name:
            names.add(name)
    return frozenset(names)


def detect_gke_networks(nodes: Sequence[Mapping[str, Any]], *, expected: int = GPU_NIC_COUNT) -> GkeNetworks:
    """The GPU NIC network names every target node advertises, or the defaults with a reason.

    Clean only when all nodes advertise one and the same set of exactly ``expected``
    networks (besides ``default``); the names are ordered naturally (vpc2 before vpc10).
    """
    if not nodes:
        return GkeNetworks(DEFAULT_NETWORKS, False, None)
    sets = {_node_networks(n) for n in nodes}
    if len(sets) == 1:
        (only,) = sets
        if len(only) == expected:
            return GkeNetworks(tuple(sorted(only, key=_natural)), True, None)
        found = ", ".join(sorted(only, key=_natural)) or "none"
        reason = f"the target nodes advertise {len(only)} GKE networks ({found}), not {expected}"
    else:
        shown = "; ".join(sorted(", ".join(sorted(s, key=_natural)) or "none" for s in sets)[:3])
        reason = f"the target nodes advertise {len(sets)} different sets of GKE networks ({shown})"
    return GkeNetworks(
        DEFAULT_NETWORKS, False,
        f"{reason}; using the default GPU NIC networks {', '.join(DEFAULT_NETWORKS)}. "
        f"Every node needs the same {expected} networks as allocatable {NETWORK_PREFIX}<name>.",
    )


@dataclass(frozen=True)
class TcpxoProfile:
    """What a TCPXO plugin version needs from the workload."""

    plugin: str  # the profile's plugin version, e.g. v1.0.15
    daemon: str  # tcpgpudmarxd-dev tag
    cuda13: bool  # False: CUDA 12 userspace (pytorch 25.06) for NCCL and training
    detected: str | None = None  # the version the installer runs, when read
    message: str | None = None  # why a fallback profile is used (TCPXOPluginDetection)

    @property
    def nccl_image(self) -> str | None:
        """The workload image for NCCL entries; None: keep the entry's own (CUDA 13)."""
        return None if self.cuda13 else "nvcr.io/nvidia/pytorch:25.06-py3"

    @property
    def training_image(self) -> str | None:
        return None if self.cuda13 else "nvcr.io/nvidia/pytorch:25.06-py3"


# The reference's mapping: plugin -> (daemon, CUDA 13 userspace).
TCPXO_PROFILES: dict[str, tuple[str, bool]] = {
    "v1.0.15": ("v1.0.21", False),
    "v1.0.16": ("v1.0.22", False),
    "v1.0.17": ("v1.0.23", True),
}
OLDEST, LATEST = "v1.0.15", "v1.0.17"


def _version_key(version: str) -> tuple[int, ...] | None:
    match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", version.strip())
    return tuple(int(g) for g in match.groups()) if match else None


def profile_for(version: str | None, *, message: str | None = None) -> TcpxoProfile:
    """The profile for a plugin version: exact match; unknown or older -> v1.0.15's;
    newer than the newest known -> the newest's (with a message saying which)."""
    if version in TCPXO_PROFILES:
        daemon, cuda13 = TCPXO_PROFILES[version]
        return TcpxoProfile(version, daemon, cuda13, detected=version, message=message)
    key = _version_key(version or "")
    if key is not None and key > _version_key(LATEST):  # type: ignore[operator]
        daemon, cuda13 = TCPXO_PROFILES[LATEST]
        note = message or f"TCPXO plugin {version} is newer than the newest known ({LATEST}); rendering for {LATEST}"
        return TcpxoProfile(LATEST, daemon, cuda13, detected=version, message=note)
    daemon, cuda13 = TCPXO_PROFILES[OLDEST]
    if message is None:
        message = (f"TCPXO plugin version {version!r} is not known; rendering for {OLDEST} (CUDA 12 images)"
                   if version else f"TCPXO plugin version not detected; rendering for {OLDEST} (CUDA 12 images)")
    return TcpxoProfile(OLDEST, daemon, cuda13, detected=version, message=message)


DEFAULT_TCPXO = TcpxoProfile(OLDEST, TCPXO_PROFILES[OLDEST][0], TCPXO_PROFILES[OLDEST][1])


def _installer_versions(pods: Iterable[Mapping[str, Any]]) -> set[str]:
    versions = set()
    for pod in pods:
        meta = pod.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(INSTALLER_LABEL[0]) != INSTALLER_LABEL[1] and not str(meta.get("name", "")).startswith(INSTALLER_LABEL[1]):
            continue
        spec = pod.get("spec") or {}
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            image = str(container.get("image") or "")
            if PLUGIN_IMAGE in image and ":" in image.rsplit("/", 1)[-1]:
                versions.add(image.rsplit(":", 1)[1].split("@", 1)[0])
    return versions


def detect_tcpxo_plugin(pods: Iterable[Mapping[str, Any]]) -> TcpxoProfile:
    """The profile for the plugin the ``nccl-tcpxo-installer`` pods install.

    No installer pod, several versions at once (a rolling upgrade), or a version the
    mapping does not know: a fallback profile and a message (TCPXOPluginDetection)."""
    versions = _installer_versions(pods)
    if not versions:
        return profile_for(None)
    if len(versions) > 1:
        ordered = sorted(versions, key=lambda v: _version_key(v) or (0,))
        return profile_for(
            None,
            message=f"nccl-tcpxo-installer pods run several plugin versions ({', '.join(ordered)}); rendering for "
            f"{OLDEST} (CUDA 12 images) until the rollout finishes",
        )
    (version,) = versions
    return profile_for(version)
