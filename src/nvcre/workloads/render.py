"""Rendering a resolved category into Kubernetes objects, through an adapter registry.

An adapter is a function ``RenderContext -> list[dict]`` (plain objects in create
order): ``native`` (batch/v1 Jobs, nothing else needed on the cluster) and
``trainjob`` (Kubeflow Trainer v2). The catalog resolves *what* runs; this module and
the adapters decide *how* it looks on a cluster, so ``nvcre.catalog`` never imports
``nvcre.workloads``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Mapping, Sequence

from nvcre.catalog.model import ResolvedCategory
from nvcre.errors import UserError
from nvcre.workloads import native, trainjob
from nvcre.workloads import pairwise as pairwise_check
from nvcre.workloads.common import RenderContext

Adapter = Callable[[RenderContext], list[dict[str, Any]]]
ADAPTERS: dict[str, Adapter] = {"native": native.render, "trainjob": trainjob.render}


def render_workload(
    resolved: ResolvedCategory,
    *,
    name: str,
    namespace: str,
    nodes: Sequence[str],
    adapter: str = "native",
    owner: Mapping[str, Any] | None = None,
    target: Any = None,
    job: str | None = None,
    group: str | None = None,
    pairwise: bool = False,
    fleet: Mapping[str, Mapping[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """The Kubernetes objects (plain dicts, create order) that run ``resolved`` on ``nodes``.

    ``adapter``: ``native`` (batch/v1 Jobs, nothing else needed on the cluster) or
    ``trainjob`` (Kubeflow Trainer v2). ``nodes`` is the group (Pinned) or, for an
    Unpinned placement, ignored except for its length when ``nodes_per_job`` is unset.
    ``target`` (TargetSpec or dict) adds its node terms to the affinity and its taint
    selectors to the tolerations. ``job``/``group`` become pod labels so the controller
    can find the pods. ``owner`` is an ownerReference dict set on every object.
    ``pairwise``: the launcher measures every pair of the nodes instead of the group at once
    (``nvcre.workloads.pairwise``; only where ``pairwise.available``).
    ``fleet``: name -> labels of the Nodes that exist now (``placement.labels_by_name``);
    with it a large Pinned group is placed by its exceptions instead of every hostname
    (``nvcre.workloads.placement``). Without it (offline) the hostnames are listed.
    """
    if adapter not in ADAPTERS:
        raise UserError(f"--adapter: unknown adapter {adapter!r}; valid: {', '.join(ADAPTERS)}")
    if not nodes and resolved.placement != "Unpinned":
        raise UserError("no nodes to render the workload on")
    if pairwise and not pairwise_check.available(resolved, adapter):
        raise UserError(f"the per-pair bandwidth check needs an nccl-tests MPI workload and the native adapter; "
                        f"{resolved.key} with the {adapter} adapter is not one")
    ctx = RenderContext.build(
        resolved, name=name, namespace=namespace, nodes=list(nodes), owner=owner, target=target,
        job=job, group=group, adapter=adapter, pairwise=pairwise, fleet=fleet,
    )
    from nvcre.workloads.registry import rewrite_images

    return rewrite_images(ADAPTERS[adapter](ctx), resolved.workload_registry)
