"""`nvcrectl cluster info`: what nvcre would see on this cluster, before anything runs.

Platform, GPU product and architecture, ready GPU nodes, GPUs (from allocatable
``nvidia.com/gpu``, or counted from ``gpu.nvidia.com`` ResourceSlices on DRA nodes
that advertise none) and topology labels. ``cluster_summary`` is pure so it is
tested on the real Node objects in tests/data/fixtures.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Mapping, Optional, Sequence

import typer

from nvcre.words import count
from nvcre.cli.apps import cluster_app
from nvcre.cli.report import ContextOpt, KubeconfigOpt, cluster_errors, connect
from nvcre.errors import UserError

FORMATS = ("table", "json", "yaml")
DRA_GPU_DRIVER = "gpu.nvidia.com"


def _name(node: Mapping[str, Any]) -> str:
    return (node.get("metadata") or {}).get("name", "")


def _labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _ready(node: Mapping[str, Any]) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def dra_gpu_counts(slices: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """GPUs per node from ``gpu.nvidia.com`` ResourceSlices: devices typed ``gpu`` only."""
    from nvcre.discovery.gpu import gpu_counts_from_resource_slices

    return gpu_counts_from_resource_slices(slices)


def cluster_summary(nodes: Sequence[Mapping[str, Any]], slices: Sequence[Mapping[str, Any]] = (),
                    topology_key: str | None = None) -> dict:
    """What nvcre would target: GPU nodes, their platform, architecture and topology.

    Topology is grouped by every rack or clique label nvcre knows (``RACK_LABELS``), or,
    with ``topology_key``, by that one label alone, with each domain's nodes listed."""
    from nvcre.catalog.hardware import hardware_defaults
    from nvcre.discovery.gpu import UNKNOWN, majority_arch, products_from_resource_slices
    from nvcre.discovery.nodes import GPU_PRESENT_LABEL, allocatable_gpus
    from nvcre.discovery.platform import platform_counts
    from nvcre.discovery.racks import RACK_LABELS

    dra = dra_gpu_counts(slices)
    slice_products = products_from_resource_slices(slices)
    gpu_nodes = [
        n
        for n in nodes
        if _labels(n).get(GPU_PRESENT_LABEL) == "true" or allocatable_gpus(n) > 0 or dra.get(_name(n), 0) > 0
    ]
    per_node = {}
    for n in gpu_nodes:
        gpus = allocatable_gpus(n)
        source = "allocatable nvidia.com/gpu"
        if gpus == 0 and dra.get(_name(n)):
            gpus, source = dra[_name(n)], "ResourceSlices (DRA)"
        elif gpus == 0 and str(_labels(n).get("nvidia.com/gpu.count", "")).isdigit():
            gpus, source = int(_labels(n)["nvidia.com/gpu.count"]), "label nvidia.com/gpu.count"
        per_node[_name(n)] = {"gpus": gpus, "source": source, "ready": _ready(n)}
    platforms = platform_counts(gpu_nodes)
    platform = next(iter(platforms)) if len(platforms) == 1 else ("none" if not platforms else "mixed")
    vote = majority_arch(list(gpu_nodes), slice_products)
    defaults = hardware_defaults(vote.arch, platform if platform not in ("mixed", "none") else None) if vote.arch != UNKNOWN else None
    topology: dict[str, dict[str, int]] = {}
    for key in ((topology_key,) if topology_key else RACK_LABELS):
        values = Counter(_labels(n)[key] for n in gpu_nodes if _labels(n).get(key))
        if values:
            topology[key] = dict(sorted(values.items()))
    warnings = []
    if len(platforms) > 1:
        warnings.append("GPU nodes report different platforms: " + ", ".join(f"{k} ({v})" for k, v in sorted(platforms.items())))
    if vote.excluded:
        warnings.append(f"{len(vote.excluded)} GPU nodes differ from the majority architecture {vote.arch} and would be excluded")
    if defaults is not None and defaults.warning("options.gpusPerNode and options.mlnxPerNode"):
        warnings.append(defaults.warning("options.gpusPerNode and options.mlnxPerNode"))
    warnings += node_health_warnings(gpu_nodes, per_node)
    domains, unlabeled = topology_domains(gpu_nodes, topology_key) if topology_key else ([], [])
    if unlabeled:
        shown = ", ".join(unlabeled[:8]) + (f" and {len(unlabeled) - 8} more" if len(unlabeled) > 8 else "")
        warnings.append(f"{len(unlabeled)} GPU node{'s' if len(unlabeled) != 1 else ''} without label {topology_key}: {shown}")
    if gpu_nodes and not any(_labels(n).get("nvidia.com/gpu.product") for n in gpu_nodes) and not slice_products:
        warnings.append("no nvidia.com/gpu.product labels: install the GPU Operator (GPU Feature Discovery) or the DRA driver")
    return {
        "platform": platform,
        "platforms": platforms,
        "gpuArchitecture": vote.arch,
        "gpuProducts": vote.products,
        "gpuNodes": len(gpu_nodes),
        "readyGPUNodes": sum(1 for v in per_node.values() if v["ready"]),
        "totalNodes": len(nodes),
        "gpus": sum(v["gpus"] for v in per_node.values()),
        "gpusPerNode": dict(sorted(Counter(v["gpus"] for v in per_node.values()).items())),
        "draNodes": sorted(n for n, v in per_node.items() if v["source"].startswith("ResourceSlices")),
        "expectedGPUsPerNode": defaults.gpus_per_node if defaults else None,
        "mnnvlDefault": defaults.mnnvl if defaults else None,
        "topology": topology,
        "topologyKey": topology_key,
        "topologyDomains": domains,
        "warnings": warnings,
    }


def topology_domains(gpu_nodes: Sequence[Mapping[str, Any]], key: str) -> tuple[list[dict], list[str]]:
    """The nodes grouped by the value of label ``key``: [{name, nodes, nodeCount}] by
    domain name, and the names of the nodes that do not carry the label."""
    groups: dict[str, list[str]] = {}
    unlabeled = []
    for n in gpu_nodes:
        value = _labels(n).get(key)
        if value:
            groups.setdefault(value, []).append(_name(n))
        else:
            unlabeled.append(_name(n))
    domains = [{"name": k, "nodes": sorted(v), "nodeCount": len(v)} for k, v in sorted(groups.items())]
    return domains, sorted(unlabeled)


def check_topology_key(key: str | None) -> str | None:
    """``--topology-key`` as given, or a usage error naming the flag and what is wrong."""
    if key is None:
        return None
    from nvcre.api.common import label_key_problem

    problem = label_key_problem(key)
    if problem:
        raise UserError(f"--topology-key: {problem}")
    return key


def node_health_warnings(gpu_nodes: Sequence[Mapping[str, Any]], per_node: Mapping[str, dict]) -> list[str]:
    """Nodes a run would exclude or fail: a failing GPU condition, no GPUs to allocate, or
    fewer allocatable than installed (the device plugin marked some unhealthy: a job
    asking for the whole node never schedules there)."""
    from nvcre.discovery.nodes import allocatable_gpus, gpu_condition_failures

    warnings = []
    for n in gpu_nodes:
        failures = gpu_condition_failures(n)
        if failures:
            warnings.append(f"node {_name(n)}: GPU health condition failing: {', '.join(failures)}")
    missing = sorted(name for name, v in per_node.items() if v["gpus"] == 0 or v["source"].startswith("label"))
    if missing:
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
        warnings.append(f"{len(missing)} GPU node{'s' if len(missing) != 1 else ''} with no allocatable nvidia.com/gpu "
                        f"(device plugin not running?): {shown}")
    for n in gpu_nodes:
        allocatable, capacity = allocatable_gpus(n), allocatable_gpus(n, "capacity")
        if 0 < allocatable < capacity:
            warnings.append(f"node {_name(n)}: {allocatable} of {capacity} GPUs allocatable (the device plugin holds "
                            f"{capacity - allocatable} back as unhealthy; kubectl describe node {_name(n)})")
    return warnings


def render_table(summary: dict) -> str:
    per_node_gpus = ", ".join(f"{count(n, 'node')} x {g}" for g, n in summary["gpusPerNode"].items())
    rows = [
        ("Platform", summary["platform"]),
        ("GPU", f"{summary['gpuArchitecture']} ({', '.join(summary['gpuProducts']) or 'no product label'})"),
        ("GPU nodes", f"{summary['readyGPUNodes']} ready of {summary['gpuNodes']} ({count(summary['totalNodes'], 'node')} in the cluster)"),
        ("GPUs", f"{summary['gpus']} ({per_node_gpus or 'none'})"),
    ]
    if summary["draNodes"]:
        rows.append(("DRA nodes", f"{len(summary['draNodes'])} counted from ResourceSlices"))
    if summary["expectedGPUsPerNode"] is not None:
        rows.append(("Catalog", f"{summary['expectedGPUsPerNode']} GPUs/node, MNNVL {'on' if summary['mnnvlDefault'] else 'off'} by default"))
    if summary.get("topologyKey"):
        domains = summary.get("topologyDomains") or []
        if domains:
            rows.append(("Topology", f"{summary['topologyKey']}: {len(domains)} domain{'s' if len(domains) != 1 else ''}"))
            rows += [("", f"  {d['name']}: {d['nodeCount']} node{'s' if d['nodeCount'] != 1 else ''}") for d in domains]
        else:
            rows.append(("Topology", f"no GPU node carries the label {summary['topologyKey']}"))
    elif summary["topology"]:
        for key, values in summary["topology"].items():
            rows.append(("Topology", f"{key}: {count(len(values), 'domain')} ({', '.join(f'{k}={v}' for k, v in list(values.items())[:6])}{', ...' if len(values) > 6 else ''})"))
    else:
        rows.append(("Topology", "no rack or clique labels (intra-rack falls back to one group)"))
    lines = [f"{(label + ':') if label else '':<11}{value}" for label, value in rows]
    lines += [f"warning: {w}" for w in summary["warnings"]]
    return "\n".join(lines) + "\n"


@cluster_app.command("info")
def info(
    output: str = typer.Option("table", "--output", "-o", help="table, json or yaml."),
    topology_key: Optional[str] = typer.Option(
        None, "--topology-key", help="Group the GPU nodes by this node label (e.g. topology.kubernetes.io/rack) "
        "instead of the rack and clique labels nvcre knows."),
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Platform, GPU product, ready GPU nodes, GPUs and topology labels as nvcre sees them."""
    if output not in FORMATS:
        raise UserError(f"-o/--output: unknown format {output!r}; choose one of {', '.join(FORMATS)}")
    topology_key = check_topology_key(topology_key)
    from nvcre.kube.client import ApiError

    with cluster_errors():
        client = connect(kubeconfig, context)
        nodes = client.list("v1", "Node")
        try:
            slices = client.list("resource.k8s.io/v1", "ResourceSlice")
        except ApiError:  # an API server without DRA, or no permission: count from labels only
            slices = []
    summary = cluster_summary(nodes, slices, topology_key)
    if output in ("json", "yaml"):
        from nvcre.cli.output import write_document

        write_document(summary, output)
    else:
        typer.echo(render_table(summary), nl=False)
