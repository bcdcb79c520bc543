"""What every reconciler is given: the client, the Event sink, metrics and settings.

Also the one helper for writing status, so every tier writes the same way: re-read
on conflict and re-apply the same decision, skip a write that changes nothing, and
send the phase-transition Events only after the write succeeded.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from nvcre.controller.events import EventSink
from nvcre.controller.logs import log_transition
from nvcre.controller.metrics import ControllerMetrics
from nvcre.kube.client import KubeClient


@dataclass
class Settings:
    """Intervals and bounds; tests shorten them, production keeps the defaults."""

    resync_seconds: float = 30.0  # safety net only: watches drive reconciles
    poll_seconds: float = 10.0  # while a workload runs (health checks, clocks)
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


@dataclass
class Context:
    kube: KubeClient
    settings: Settings = field(default_factory=Settings)
    metrics: ControllerMetrics = field(default_factory=ControllerMetrics)
    clock: Callable[[], float] = time.time
    events: EventSink | None = None
    enqueue: Callable[[tuple[str, str, str], float], None] | None = None
    # (namespace, nvcre Job) -> pod name -> placement, from the pod watch (see workload_state.placement_record)
    placements: dict[tuple[str, str], dict[str, dict]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.events is None:
            self.events = EventSink(self.kube)

    def now(self) -> float:
        return self.clock()

    def now_text(self) -> str:
        return format_time(self.clock())

    def requeue(self, kind: str, namespace: str, name: str, delay: float = 0.0) -> None:
        if self.enqueue is not None:
            self.enqueue((kind, namespace, name), delay)


def format_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def parse_duration(text: str | None, default: float | None = None) -> float | None:
    """``1h30m``, ``15m``, ``90s``, ``500ms`` -> seconds; unparseable -> default."""
    if not text:
        return default
    units = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    total, number, i, text = 0.0, "", 0, str(text).strip()
    while i < len(text):
        ch = text[i]
        if ch.isdigit() or ch == ".":
            number += ch
            i += 1
            continue
        unit = "ms" if text[i : i + 2] == "ms" else ch
        if unit not in units or not number:
            return default
        total += float(number) * units[unit]
        number = ""
        i += len(unit)
    if number:  # a bare number is seconds
        total += float(number)
    return total


def write_status(ctx: Context, obj: dict, mutate: Callable[[dict], bool]) -> dict | None:
    """Apply ``mutate`` to the status (with conflict retries) and emit the transition Events."""
    before: dict = {}

    def apply(fresh: dict) -> bool:
        before["conditions"] = copy.deepcopy((fresh.get("status") or {}).get("conditions") or [])
        return mutate(fresh)

    meta = obj["metadata"]
    written = ctx.kube.update_status(
        obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"), apply, current=copy.deepcopy(obj)
    )
    if written is not None:
        written.setdefault("apiVersion", obj["apiVersion"])
        written.setdefault("kind", obj["kind"])
        after = (written.get("status") or {}).get("conditions") or []
        ctx.events.emit_transitions(written, before.get("conditions"), after)
        log_transition(written, before.get("conditions"), after)
        ctx.metrics.store.put(written)
    return written
