"""An in-memory stand-in for KubeClient: objects by (kind, namespace, name), UIDs,
resourceVersions, and a count of LISTs (a reconcile pass on a synced cache makes none)."""

from __future__ import annotations

import copy
import itertools


class FakeKube:
    """Just enough of KubeClient: objects by (kind, namespace, name), UIDs, resourceVersions."""

    def __init__(self, nodes: list[dict]) -> None:
        self.objects: dict[tuple[str, str, str], dict] = {}
        self.creates: list[tuple[str, str]] = []
        self.events: list[tuple[str, str]] = []
        self._uid = itertools.count(1)
        for node in nodes:
            self.add(dict(node, apiVersion="v1", kind="Node"))
        self.requests = {}
        self.lists: list[str] = []
        self.logs: dict[str, str] = {}  # pod name -> log text
        self.log_reads: list[str] = []

    def _key(self, api_version, kind, name, namespace):
        return (f"{api_version}/{kind}", namespace or "", name)

    def add(self, obj: dict) -> dict:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._uid)}")
        meta["resourceVersion"] = "1"
        meta.setdefault("creationTimestamp", "2026-11-30T00:00:00Z")
        meta.setdefault("generation", 1)
        self.objects[self._key(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))] = obj
        return copy.deepcopy(obj)

    def get(self, api_version, kind, name, namespace=None):
        found = self.objects.get(self._key(api_version, kind, name, namespace))
        return copy.deepcopy(found) if found else None

    def list(self, api_version, kind, namespace=None, *, label_selector=None, field_selector=None):
        self.lists.append(kind)
        out = []
        wanted = dict(s.split("=", 1) for s in (label_selector or "").split(",") if "=" in s)
        for (k, ns, _), obj in self.objects.items():
            if k != f"{api_version}/{kind}" or (namespace and ns != namespace):
                continue
            labels = obj["metadata"].get("labels") or {}
            if all(labels.get(a) == b for a, b in wanted.items()):
                out.append(copy.deepcopy(obj))
        return out

    def create(self, obj, namespace=None):
        meta = obj["metadata"]
        key = self._key(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace") or namespace)
        if key in self.objects:
            return copy.deepcopy(self.objects[key]), False
        self.creates.append((obj["kind"], meta["name"]))
        return self.add(obj), True

    def update_status(self, api_version, kind, name, namespace, mutate, *, current=None, attempts=8):
        key = self._key(api_version, kind, name, namespace)
        if key not in self.objects:
            return None
        obj = copy.deepcopy(self.objects[key])
        obj.setdefault("status", {})
        if not mutate(obj):
            return obj
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        self.objects[key] = obj
        return copy.deepcopy(obj)

    def delete(self, api_version, kind, name, namespace=None, *, uid=None, propagation="Background"):
        return self.objects.pop(self._key(api_version, kind, name, namespace), None) is not None

    def post_event(self, involved, event_type, reason, message, **_):
        self.events.append((event_type, reason))

    def can_i(self, verb, resource, namespace, group=""):
        return True, ""

    def pod_log(self, name, namespace, *, container=None, tail_lines=None, limit_bytes=None, timestamps=False):
        self.log_reads.append(name)
        return self.logs.get(name)

    def kind_installed(self, api_version, kind):
        return False
