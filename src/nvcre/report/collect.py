"""Read one run's objects from the API server (reads only) for ``build_report``.

The CLI and the MCP server both call these, so they show the same report. Reads
that the caller's RBAC forbids (Nodes, measurements) are skipped: the report then
lacks the rack layout or a bandwidth table, but still tells the verdict.
"""

from __future__ import annotations

from typing import Protocol

from nvcre import API_GROUP_VERSION
from nvcre.errors import UserError
from nvcre.kube.client import ApiError
from nvcre.report.build import RunObjects
from nvcre.objpath import dig

LABEL_CERTIFICATION = "nvcre.nvidia.com/certification"
LABEL_WORKLOAD_RUN = "nvcre.nvidia.com/workload-run"


class Reader(Protocol):
    """The read half of ``nvcre.kube.client.KubeClient``: all a report needs."""

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None: ...

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict]: ...


class RunNotFound(UserError):
    """The named run is not in that namespace; the message says where runs of that kind are."""


def list_if_allowed(reader: Reader, api_version: str, kind: str, namespace: str | None = None, **kw) -> list[dict]:
    """``reader.list``, but an empty list where the caller's RBAC forbids the read."""
    try:
        return reader.list(api_version, kind, namespace, **kw)
    except ApiError as err:
        if err.forbidden:
            return []
        raise


def where_they_are(reader: Reader, kind: str) -> list[tuple[str, str]]:
    """(namespace, name) of every object of one nvcre kind the caller may list."""
    items = list_if_allowed(reader, API_GROUP_VERSION, kind)
    return sorted(((i["metadata"].get("namespace") or "", i["metadata"]["name"]) for i in items))


def not_found_message(reader: Reader, kind: str, name: str, namespace: str) -> str:
    """Name the miss and list what exists where: the first-day mistake is a missing -n."""
    found = where_they_are(reader, kind)
    lines = [f"{kind.lower()} {name!r} not found in namespace {namespace!r}"]
    same_name = [ns for ns, n in found if n == name]
    if same_name:
        lines.append(f"it exists in namespace {same_name[0]!r}: add -n {same_name[0]}")
    if found:
        lines.append(f"{kind} objects that exist:")
        lines += [f"  {ns}/{n}" for ns, n in found[:50]]
        if len(found) > 50:
            lines.append(f"  ... and {len(found) - 50} more")
    else:
        lines.append(f"no {kind} exists in any namespace you can read")
    return "\n".join(lines)


def collect(reader: Reader, kind: str, name: str, namespace: str, *, with_nodes: bool = True) -> RunObjects:
    """Everything ``build_report`` needs about one Certification or WorkloadRun."""
    root = reader.get(API_GROUP_VERSION, kind, name, namespace)
    if root is None:
        raise RunNotFound(not_found_message(reader, kind, name, namespace))
    root.setdefault("kind", kind)
    label = LABEL_CERTIFICATION if kind == "Certification" else LABEL_WORKLOAD_RUN
    workflows = list_if_allowed(reader, API_GROUP_VERSION, "Workflow", namespace, label_selector=f"{label}={name}")
    if not workflows:
        # a Workflow made by hand or by an older controller: find it by owner or reference
        uid = root["metadata"].get("uid")
        refs = {
            dig(s.get("workflowRef"), "name")
            for s in dig(root.get("status"), "categoryStatuses") or []
        } | {dig(root.get("status"), "workflowRef", "name")}
        workflows = [
            w
            for w in list_if_allowed(reader, API_GROUP_VERSION, "Workflow", namespace)
            if w["metadata"]["name"] in refs
            or any(o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or [])
        ]
    jobs = list_if_allowed(reader, API_GROUP_VERSION, "Job", namespace) if workflows else []
    bms = list_if_allowed(reader, API_GROUP_VERSION, "BandwidthMeasurement", namespace) if jobs else []
    gms = list_if_allowed(reader, API_GROUP_VERSION, "GoodputMeasurement", namespace) if jobs else []
    nodes = list_if_allowed(reader, "v1", "Node") if with_nodes else []
    return RunObjects(root=root, workflows=workflows, jobs=jobs, bandwidth_measurements=bms, goodput_measurements=gms, nodes=nodes)
