"""Faults a running workload cannot recover from, told apart with their reason (pure).

Kept apart from the Job reconciler so it stays one call there:
- a **startup stall**: a scheduled pod whose container waits (ContainerCreating, image
  pull back-off, a config error) longer than the grace, for any workload, not only
  training: reported as ``WorkloadStartupStalled`` naming the pod, node, container and
  the kubelet's reason, instead of waiting for ``timeoutPerJob`` (hours for dcgm);
  images that can never be pulled (``InvalidImageName``, ``ErrImageNeverPull``) fail at once;
- a **vanished node**: a node of the group (or one the pods ran on) whose Node object is
  gone mid-run: named as such, not as a generic workload failure;
- a rank **placed off the group**: a Pinned group's pod bound to a node outside it
  (possible only for a large group placed by its exceptions, when a Node joined after
  the render): ``WorkloadPlacedOffGroup``, naming no node.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from nvcre.objpath import dig

STARTUP_STALL_REASON = "WorkloadStartupStalled"
DEFAULT_STARTUP_GRACE_SECONDS = 600.0
# kubelet waiting reasons that mean "this container is not starting" (not PodInitializing:
# a long-running init container is working, not stuck)
STALLING = frozenset({
    "ContainerCreating", "ErrImagePull", "ImagePullBackOff", "CreateContainerConfigError",
    "CreateContainerError", "RunContainerError", "PreCreateHookError", "PreStartHookError",
})
HOPELESS = frozenset({"InvalidImageName", "ErrImageNeverPull"})


def _time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _scheduled_at(pod: dict) -> float | None:
    for cond in dig(pod, "status", "conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "True":
            return _time(cond.get("lastTransitionTime"))
    return _time(dig(pod, "metadata", "creationTimestamp"))


def startup_stall(pods: Iterable[dict], *, now: float, grace_seconds: float = DEFAULT_STARTUP_GRACE_SECONDS) -> str | None:
    """Why the workload cannot start (the first stuck container in pod name order), or None.

    Pods that cannot be stuck (ended, unbound, going) are passed over before the name
    order is taken: a pass looks at every pod of the group, and sorting all of them cost
    more than the check."""
    candidates = []
    for pod in pods:
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        if meta.get("deletionTimestamp") or not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            continue
        if any(dig(cs, "state", "waiting") for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])):
            candidates.append(pod)
    for pod in sorted(candidates, key=lambda p: dig(p, "metadata", "name") or ""):
        meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
        since = _scheduled_at(pod)
        statuses = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
        for cs in statuses:
            waiting = dig(cs, "state", "waiting") or {}
            reason = waiting.get("reason")
            hopeless = reason in HOPELESS
            if not hopeless and (reason not in STALLING or since is None or now - since < grace_seconds):
                continue
            waited = f" for {int(now - since)}s" if since is not None else ""
            detail = f": {waiting['message'][:300]}" if waiting.get("message") else ""
            return (f"pod {meta.get('name')} on node {spec['nodeName']}: container {cs.get('name')} is waiting "
                    f"({reason}){waited}{detail}")
    return None


def vanished_nodes(expected: Iterable[str], present: Iterable[dict]) -> list[str]:
    """Nodes of ``expected`` whose Node object no longer exists."""
    names = {dig(n, "metadata", "name") for n in present}
    return sorted(set(expected) - names)


def vanished_message(nodes: list[str]) -> str:
    return (f"node(s) {', '.join(nodes)} vanished from the cluster while the workload ran "
            "(the Node object was deleted); their pods cannot finish")


def off_group(group: Iterable[str], ran: Iterable[str]) -> list[str]:
    """Nodes a Pinned group's ranks were bound to outside the group (sorted). A large group
    is placed by its exceptions (``workloads.placement``), so a Node that joined after the
    render with matching labels can take a rank; nothing for an Unpinned (empty) group."""
    members = set(group)
    return sorted(set(ran) - members) if members else []


def off_group_message(nodes: list[str]) -> str:
    shown = ", ".join(nodes[:8]) + (f" and {len(nodes) - 8} more" if len(nodes) > 8 else "")
    return (f"rank pod(s) were placed on node(s) {shown} outside the pinned group (joined after the workload "
            "was rendered?); its result would not be about the group's nodes, so none is recorded")
