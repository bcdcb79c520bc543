"""Namespace access check: can the controller create what a Workflow needs there?

One SelfSubjectAccessReview per (namespace, resource, verb), cached for 30 s per
namespace, so a missing RoleBinding shows up as a clear waiting reason that names
the binding to create instead of a string of Forbidden errors mid-run.

A RoleBinding change in a namespace (the controller watches them) drops that
namespace's answers at once, so the Workflows it wakes ask again. For a short while
after such a change a denial is not cached and is reported as *settling*: the API
server's authorizer learns of the binding through its own watch and may answer a
moment behind the controller's.
"""

from __future__ import annotations

import threading
import time

RUN_ROLEBINDING = "nvcre-manager-run"
CACHE_SECONDS = 30.0
SETTLE_SECONDS = 10.0  # after a RoleBinding change: a denial may be the authorizer lagging

# (group, resource, verb) the Workflow and its Jobs need in the namespace, per adapter.
COMMON = (
    ("nvcre.nvidia.com", "jobs", "create"),
    ("", "pods", "list"),
    ("", "pods/log", "get"),
    ("", "configmaps", "create"),
    ("", "secrets", "create"),
    ("", "events", "create"),
)
NEEDED = {
    "native": COMMON + (("batch", "jobs", "create"), ("batch", "jobs", "delete"), ("", "services", "create")),
    "trainjob": COMMON + (
        ("trainer.kubeflow.org", "trainjobs", "create"),
        ("trainer.kubeflow.org", "trainjobs", "delete"),
        ("trainer.kubeflow.org", "trainingruntimes", "create"),
        ("trainer.kubeflow.org", "trainingruntimes", "delete"),
    ),
}


class AccessChecker:
    def __init__(self, kube, clock=time.monotonic) -> None:
        self.kube = kube
        self.clock = clock
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], tuple[float, list[str]]] = {}
        self._changed: dict[str, float] = {}  # namespace -> when a RoleBinding there last changed

    def changed(self, namespace: str | None, *, settle: bool = True) -> None:
        """A RoleBinding changed in ``namespace`` (None: every namespace): forget the answers
        there and, with ``settle`` (a change, not a list), do not trust a denial for
        ``SETTLE_SECONDS``."""
        now = self.clock()
        with self._lock:
            for key in [k for k in self._cache if namespace is None or k[0] == namespace]:
                del self._cache[key]
            if namespace is not None and settle:
                self._changed[namespace] = now
            for ns in [n for n, t in self._changed.items() if now - t >= SETTLE_SECONDS]:
                del self._changed[ns]  # bounded by the namespaces changed in the last few seconds

    def settling(self, namespace: str) -> bool:
        """Whether a RoleBinding in ``namespace`` changed so recently that a denial may be stale."""
        with self._lock:
            t = self._changed.get(namespace)
        return t is not None and self.clock() - t < SETTLE_SECONDS

    def missing(self, namespace: str, adapter: str = "native") -> list[str]:
        """``verb resource`` entries this identity may not do in ``namespace`` for workloads
        of ``adapter`` (empty = all allowed)."""
        key = (namespace, adapter if adapter in NEEDED else "native")
        with self._lock:
            hit = self._cache.get(key)
            if hit and self.clock() - hit[0] < CACHE_SECONDS:
                return list(hit[1])
        denied = []
        for group, resource, verb in NEEDED[key[1]]:
            allowed, _ = self.kube.can_i(verb, resource, namespace, group)
            if not allowed:
                denied.append(f"{verb} {resource}{'.' + group if group else ''}")
        if not (denied and self.settling(namespace)):
            with self._lock:
                self._cache[key] = (self.clock(), denied)
        return denied


def missing_message(namespace: str, denied: list[str]) -> str:
    return (
        f"The controller lacks permissions in namespace {namespace}: {', '.join(denied)}. "
        f"Create the RoleBinding {RUN_ROLEBINDING} there (nvcrectl rbac print --namespace {namespace})."
    )
