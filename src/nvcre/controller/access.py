"""Namespace access check: can the controller create what a Workflow needs there?

One SelfSubjectAccessReview per (namespace, resource, verb), cached for 30 s per
namespace, so a missing RoleBinding shows up as a clear waiting reason that names
the binding to create instead of a string of Forbidden errors mid-run.
"""

from __future__ import annotations

import threading
import time

RUN_ROLEBINDING = "nvcre-manager-run"
CACHE_SECONDS = 30.0

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
        with self._lock:
            self._cache[key] = (self.clock(), denied)
        return denied


def missing_message(namespace: str, denied: list[str]) -> str:
    return (
        f"The controller lacks permissions in namespace {namespace}: {', '.join(denied)}. "
        f"Create the RoleBinding {RUN_ROLEBINDING} there (nvcrectl rbac print --namespace {namespace})."
    )
