"""What every reconciler is given: the client, the Event sink, metrics and settings.

Also the one helper for writing status, so every tier writes the same way: re-read
on conflict and re-apply the same decision, skip a write that changes nothing, and
send the phase-transition Events only after the write succeeded.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from nvcre.controller import testhooks
from nvcre.controller.access import AccessChecker
from nvcre.controller.runtime.cache import WatchCache
from nvcre.controller.runtime.events import EventSink
from nvcre.controller.logs import log_transition
from nvcre.controller.runtime.metrics import ControllerMetrics
from nvcre.kube.client import KubeClient
from nvcre.timefmt import format_time, parse_duration, parse_time
from nvcre.objpath import dig

__all__ = ["BoundedMemo", "Context", "Memos", "Settings", "format_time", "parse_duration", "parse_time", "write_status"]


@dataclass
class Settings:
    """Intervals and bounds; tests shorten them, production keeps the defaults."""

    resync_seconds: float = 300.0  # safety net only (a lost watch event): watches and deadlines drive reconciles
    waiting_for_nodes_seconds: float = 300.0
    namespace_access_timeout_seconds: float = 600.0
    measurement_timeout_seconds: float = 300.0
    scheduling_stall_grace_seconds: float = 300.0
    startup_stall_grace_seconds: float = 600.0  # scheduled but a container never starts (controller/faults.py)
    default_timeout_per_job: str = "1h"
    adapter: str = "auto"  # auto | native | trainjob
    workers: int = 4
    # where the controller runs: policies there may export any namespace's reports
    controller_namespace: str = field(default_factory=lambda: os.environ.get("POD_NAMESPACE", "nvcre-system"))
    metrics_node_detail_limit: int = 0  # per-node metric series for at most this many nodes
    reference_metrics: bool = False  # also export the reference's per-measurement NCCL gauges (GB/s)


class BoundedMemo:
    """A thread-safe memo with a size bound (least recently used goes first)."""

    def __init__(self, limit: int, *, weigh: Callable[[Any], int] | None = None, max_weight: int = 0) -> None:
        """``weigh`` and ``max_weight``: a second bound on the sum of the values' weights
        (bytes of text), for memos whose values vary in size by orders of magnitude."""
        self.limit = limit
        self._lock = threading.Lock()
        self._items: OrderedDict[Any, Any] = OrderedDict()
        self._weigh, self.max_weight = weigh, max_weight
        self._weights: dict[Any, int] = {}
        self.weight = 0

    def get(self, key: Any, default: Any = None) -> Any:
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._forget(key)
            self._items[key] = value
            if self._weigh is not None:
                self._weights[key] = self._weigh(value)
                self.weight += self._weights[key]
            while len(self._items) > self.limit or (self.max_weight and self.weight > self.max_weight):
                self._forget(next(iter(self._items)))

    def _forget(self, key: Any) -> None:
        self._items.pop(key, None)
        self.weight -= self._weights.pop(key, 0)

    def pop(self, key: Any) -> None:
        with self._lock:
            self._forget(key)

    def keys(self) -> list[Any]:
        with self._lock:
            return list(self._items)

    def drop_where(self, predicate: Callable[[Any], bool]) -> None:
        with self._lock:
            for key in [k for k in self._items if predicate(k)]:
                self._forget(key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


ENDED_LOGS_MAX_CHARS = 32 * 1024 * 1024  # about 32 MB of log text: the evidence of a few large Jobs at once


@dataclass
class Memos:
    """Per-object memos the reconcilers keep between passes, bounded and dropped when the
    object turns terminal or is deleted (``Context.forget``)."""

    stall_checked: BoundedMemo = field(default_factory=lambda: BoundedMemo(4096))  # Job uid -> last stall check
    resolved: BoundedMemo = field(default_factory=lambda: BoundedMemo(256))  # (Workflow uid, ...) -> resolved category
    monitors: BoundedMemo = field(default_factory=lambda: BoundedMemo(64))  # (expression, cordoned) -> health monitor
    workloads: BoundedMemo = field(default_factory=lambda: BoundedMemo(64))  # (Job uid, sha256) -> rendered objects
    # (kind, namespace, name) of the Certifications and WorkloadRuns waiting for a target node:
    # what a Node that joins (or changes) wakes; past the bound the oldest falls back on the resync
    waiting_for_nodes: BoundedMemo = field(default_factory=lambda: BoundedMemo(1024))
    # (namespace, name) of the Workflows waiting for namespace permissions: what a RoleBinding
    # change in that namespace wakes; past the bound the oldest falls back on its deadline and the resync
    waiting_for_access: BoundedMemo = field(default_factory=lambda: BoundedMemo(1024))
    # (Job uid, pod, container, tail lines, restarts) -> the log of a pod that has ended (``ended_logs``)
    ended_logs: BoundedMemo = field(default_factory=lambda: BoundedMemo(
        256, weigh=lambda text: len(text), max_weight=ENDED_LOGS_MAX_CHARS))


@dataclass
class Context:
    kube: KubeClient
    settings: Settings = field(default_factory=Settings)
    metrics: ControllerMetrics | None = None
    clock: Callable[[], float] = time.time
    events: EventSink | None = None
    enqueue: Callable[[tuple[str, str, str], float], None] | None = None
    # (namespace, nvcre Job) -> pod name -> placement, from the pod watch (see workload_state.placement_record)
    placements: dict[tuple[str, str], dict[str, dict]] = field(default_factory=dict)
    cache: WatchCache | None = None
    memos: Memos = field(default_factory=Memos)
    access: AccessChecker | None = None  # namespace permission answers, dropped on RoleBinding events

    def __post_init__(self) -> None:
        if self.access is None:
            self.access = AccessChecker(self.kube)
        if self.cache is None:
            store = getattr(self.metrics, "store", None)
            self.cache = store if isinstance(store, WatchCache) else WatchCache()
        if self.metrics is None:
            self.metrics = ControllerMetrics(store=self.cache)
        if self.events is None:
            self.events = EventSink(self.kube)

    def forget(self, uid: str | None, namespace: str = "", name: str = "", *, kind: str = "") -> None:
        """An object turned terminal or was deleted: drop what was memoised for it (``kind``
        empty: a Job)."""
        if kind:
            self.memos.waiting_for_nodes.pop((kind, namespace, name))
        if kind == "Workflow":
            self.memos.waiting_for_access.pop((namespace, name))
        if uid:
            self.memos.stall_checked.drop_where(lambda k: k == uid)
            self.memos.resolved.drop_where(lambda k: k[0] == uid)
            self.memos.workloads.drop_where(lambda k: k[0] == uid)
            self.memos.ended_logs.drop_where(lambda k: k[0] == uid)
        if name and kind in ("", "Job"):
            self.placements.pop((namespace, name), None)

    def waiting(self, obj: dict, waits: bool) -> None:
        """Record whether ``obj`` (a Certification or WorkloadRun) is waiting for target nodes."""
        meta = obj["metadata"]
        key = (obj["kind"], meta.get("namespace") or "", meta["name"])
        if waits:
            self.memos.waiting_for_nodes.put(key, True)
        else:
            self.memos.waiting_for_nodes.pop(key)

    def waiting_for_nodes(self) -> list[tuple[str, str, str]]:
        return self.memos.waiting_for_nodes.keys()

    def waiting_for_access(self, workflow: dict, waits: bool) -> None:
        """Record whether a Workflow is waiting for permissions in its namespace."""
        key = (workflow["metadata"].get("namespace") or "", workflow["metadata"]["name"])
        if waits:
            self.memos.waiting_for_access.put(key, True)
        else:
            self.memos.waiting_for_access.pop(key)

    def access_waiters(self, namespace: str | None) -> list[tuple[str, str, str]]:
        """Queue keys of the Workflows waiting for permissions in ``namespace`` (None: all)."""
        return [("Workflow", ns, name) for ns, name in self.memos.waiting_for_access.keys()
                if namespace is None or ns == namespace]

    def now(self) -> float:
        return self.clock()

    def now_text(self) -> str:
        return format_time(self.clock())

    def requeue(self, kind: str, namespace: str, name: str, delay: float = 0.0) -> None:
        if self.enqueue is not None:
            self.enqueue((kind, namespace, name), delay)


def write_status(ctx: Context, obj: dict, mutate: Callable[[dict], bool]) -> dict | None:
    """Apply ``mutate`` to the status (with conflict retries) and emit the transition Events."""
    before: dict = {}

    def apply(fresh: dict) -> bool:
        before["conditions"] = copy.deepcopy(dig(fresh, "status", "conditions") or [])
        before["changed"] = mutate(fresh)
        return before["changed"]

    meta = obj["metadata"]
    written = ctx.kube.update_status(
        obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"), apply, current=copy.deepcopy(obj)
    )
    if written is not None:
        written.setdefault("apiVersion", obj["apiVersion"])
        written.setdefault("kind", obj["kind"])
        after = dig(written, "status", "conditions") or []
        if before.get("changed"):
            testhooks.after_status_write(obj["kind"], before.get("conditions") or [], after, meta["name"])
        ctx.events.emit_transitions(written, before.get("conditions"), after)
        log_transition(written, before.get("conditions"), after)
        ctx.cache.put(written)
    else:  # gone (e.g. deleted while the watch was away: a relist sends no DELETED)
        ctx.cache.drop(obj["kind"], meta.get("namespace") or "", meta["name"])
    return written
