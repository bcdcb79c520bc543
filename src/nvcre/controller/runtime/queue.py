"""A deduplicating work queue with delayed requeues, drained by worker threads.

Watch events only say "look at this object again"; the reconcilers read the
current state themselves. So a key queued ten times before a worker picks it up is
reconciled once, a key is never reconciled by two workers at once, and a key
requeued while being worked on runs once more right after. This is what makes the
controller level-triggered rather than edge-triggered.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

log = logging.getLogger(__name__)

Key = tuple[str, str, str]  # (kind, namespace, name)
BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 120.0
RETRY_MAX_S = 60.0


class Retry(Exception):
    """A pass that could not finish for a reason expected to pass (an API refusal, a
    ConfigMap not there yet): the queue retries the key with its exponential backoff,
    capped at ``cap``, instead of the reconciler guessing a fixed delay. Logged without a
    traceback: the reconciler has already said what happened (an Event)."""

    def __init__(self, message: str, *, cap: float = RETRY_MAX_S) -> None:
        super().__init__(message)
        self.cap = cap


class Backoff:
    """Per-key exponential backoff for failed reconciles: 0.5 s, 1 s, 2 s ... 120 s; reset on success."""

    def __init__(self, start: float = BACKOFF_START_S, limit: float = BACKOFF_MAX_S) -> None:
        self.start, self.limit = start, limit
        self._lock = threading.Lock()
        self._failures: dict[Key, int] = {}

    def failed(self, key: Key, limit: float | None = None) -> float:
        """The next delay for ``key``; ``limit`` caps it below the queue's own cap."""
        with self._lock:
            n = self._failures.get(key, 0)
            self._failures[key] = n + 1
        return min(self.limit if limit is None else min(limit, self.limit), self.start * (2 ** min(n, 32)))

    def succeeded(self, key: Key) -> None:
        with self._lock:
            self._failures.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._failures)


class QueueObserver(Protocol):
    """What the queue reports, as client-go's workqueue metrics provider sees it."""

    def added(self) -> None: ...
    def waited(self, seconds: float) -> None: ...
    def worked(self, seconds: float) -> None: ...
    def retried(self) -> None: ...


class WorkQueue:
    def __init__(self, observer: QueueObserver | None = None) -> None:
        self.observer = observer
        self._enqueued_at: dict[Key, float] = {}  # ready keys: when they became ready
        self._started_at: dict[Key, float] = {}  # keys being worked on: since when
        self._cond = threading.Condition()
        self._ready: list[Key] = []
        self._queued: set[Key] = set()
        self._active: set[Key] = set()
        self._dirty: set[Key] = set()
        self._delayed: list[tuple[float, int, Key]] = []
        self._due: dict[Key, float] = {}  # the one pending delayed requeue per key
        self._seq = itertools.count()
        self._closed = False
        self._spacing: dict[Key, float] = {}  # dirty keys: the least spacing their adds asked for
        self._last_done: dict[Key, float] = {}  # spaced keys: when their last pass ended

    def add(self, key: Key, *, spacing: float = 0.0) -> None:
        """Queue ``key``. ``spacing``: the pass may wait until that many seconds after the key's
        last pass ended, so a burst of events (a thousand pods of one Job ending together)
        becomes one pass a ``spacing`` instead of one each; 0 (the default) never waits."""
        with self._cond:
            if key in self._active:
                self._dirty.add(key)
                self._spacing[key] = min(spacing, self._spacing.get(key, spacing))
                return
            if key in self._queued:
                return
            wait = self._last_done.get(key, -spacing) + spacing - time.monotonic() if spacing > 0 else 0.0
            if wait > 0:
                self._add_after(key, wait)
                return
            self._make_ready(key)
            self._cond.notify()

    def add_after(self, key: Key, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            self._add_after(key, delay)

    def _add_after(self, key: Key, delay: float) -> None:
        """A delayed requeue (the caller holds the lock)."""
        due = time.monotonic() + delay
        current = self._due.get(key)
        if current is not None and current <= due:
            return  # an earlier requeue is already pending: one is enough
        self._due[key] = due
        heapq.heappush(self._delayed, (due, next(self._seq), key))
        self._cond.notify()

    def _promote_due(self) -> float | None:
        now = time.monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            due, _, key = heapq.heappop(self._delayed)
            if self._due.get(key) != due:
                continue  # superseded by an earlier requeue of the same key
            del self._due[key]
            if key in self._active:
                self._dirty.add(key)
            elif key not in self._queued:
                self._make_ready(key)
        return (self._delayed[0][0] - now) if self._delayed else None

    def get(self, timeout: float = 1.0) -> Key | None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._closed:
                wait = self._promote_due()
                if self._ready:
                    key = self._ready.pop(0)
                    self._queued.discard(key)
                    self._active.add(key)
                    now = time.monotonic()
                    self._started_at[key] = now
                    if self.observer is not None:
                        self.observer.waited(now - self._enqueued_at.pop(key, now))
                    return key
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(min(left, wait) if wait is not None else left)
        return None

    def done(self, key: Key) -> None:
        with self._cond:
            self._active.discard(key)
            now = time.monotonic()
            started = self._started_at.pop(key, None)
            if started is not None and self.observer is not None:
                self.observer.worked(now - started)
            spacing = self._spacing.pop(key, 0.0)
            self._remember_done(key, now)
            if key in self._dirty:
                self._dirty.discard(key)
                if spacing > 0:
                    self._add_after(key, spacing)
                elif key not in self._queued:
                    self._make_ready(key)
                    self._cond.notify()

    def _remember_done(self, key: Key, now: float, keep_s: float = 60.0, most: int = 4096) -> None:
        """When a key's pass ended, for spacing; bounded (a spacing is seconds, so ends older than
        ``keep_s`` no longer matter)."""
        self._last_done[key] = now
        if len(self._last_done) > most:
            self._last_done = {k: t for k, t in self._last_done.items() if now - t < keep_s}

    def _make_ready(self, key: Key) -> None:
        """Put a key on the ready list (the caller holds the lock)."""
        self._queued.add(key)
        self._ready.append(key)
        self._enqueued_at[key] = time.monotonic()
        if self.observer is not None:
            self.observer.added()

    def depth(self) -> int:
        """Keys ready and waiting for a worker (client-go's workqueue_depth)."""
        with self._cond:
            return len(self._ready)

    def running_seconds(self) -> list[float]:
        """How long each key now being worked on has been (unfinished work)."""
        now = time.monotonic()
        with self._cond:
            return [now - t for t in self._started_at.values()]

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._ready) + len(self._delayed)


def run_workers(
    queue: WorkQueue,
    handle: Callable[[Key], float | None],
    *,
    count: int,
    stop: threading.Event,
) -> list[threading.Thread]:
    """Start ``count`` threads calling ``handle(key)``; its return is a requeue delay or None.

    A pass that raises is retried after a per-key exponential backoff, so an API outage
    or a bug on one object neither spins nor holds the others back; ``Retry`` is the
    expected kind (quieter, with its own cap).
    """
    backoff = Backoff()

    def loop() -> None:
        while not stop.is_set():
            key = queue.get(timeout=0.5)
            if key is None:
                continue
            delay: float | None
            try:
                delay = handle(key)
                backoff.succeeded(key)
            except Retry as err:  # expected to pass: back off, no traceback
                delay = backoff.failed(key, err.cap)
                log.info("reconcile of %s/%s/%s will be retried in %.1fs: %s", *key, delay, err,
                         extra={"fields": {"kind": key[0], "namespace": key[1], "name": key[2]}})
                if queue.observer is not None:
                    queue.observer.retried()
            except Exception:  # a bug or an API outage: log and retry with backoff
                delay = backoff.failed(key)
                log.exception("reconcile of %s/%s/%s failed; retrying in %.1fs", *key, delay,
                              extra={"fields": {"kind": key[0], "namespace": key[1], "name": key[2]}})
                if queue.observer is not None:
                    queue.observer.retried()
            finally:
                queue.done(key)
            if delay is not None:
                queue.add_after(key, delay)

    threads = [threading.Thread(target=loop, name=f"nvcre-worker-{i}", daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    return threads
