"""List-then-watch of one kind into a sink: the feed of the controller's cache.

A reflector lists in pages (``limit``/``continue``, all pages at the resourceVersion of
the first), hands the complete set to the sink (``replace``), then watches from that
resourceVersion and hands over each change (``apply``). Bookmarks move the
resourceVersion on quiet kinds; a 410 Gone (the version was compacted away, during
pagination or the watch) starts a fresh list; a broken connection resumes the watch
from the last version seen, with exponential backoff while the server stays away.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from nvcre.kube.client import ApiError, TransportError

log = logging.getLogger(__name__)

BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 30.0


class Sink(Protocol):
    def replace(self, kind_key: str, objects: list[dict], namespace: str | None = None) -> None: ...

    def apply(self, kind_key: str, event_type: str, obj: dict) -> None: ...


@dataclass(frozen=True)
class WatchSpec:
    """What to reflect: the kind, an optional label selector, and the cache's key for the kind."""

    api_version: str
    kind: str
    key: str
    label_selector: str | None = None
    namespace: str | None = None


class Reflector:
    """Keeps ``sink`` in step with one kind until ``stop`` is set (run it in a thread)."""

    def __init__(self, kube, spec: WatchSpec, sink: Sink, *, page_size: int = 500, watch_timeout_s: int = 300,
                 sleep: Callable[[float], bool] | None = None, shrink: Callable[[dict], dict] | None = None) -> None:
        """``shrink``: applied to each listed object as its page arrives (the sink's cache keeps
        only part of each), so a full list of 4096 Nodes with their managedFields and image
        lists never sits in memory at once beside the cache it replaces."""
        self.kube, self.spec, self.sink = kube, spec, sink
        self.shrink = shrink
        self.page_size, self.watch_timeout_s = page_size, watch_timeout_s
        self.stop = threading.Event()
        self._sleep = sleep or self.stop.wait
        self.lists = 0  # full (re)lists so far: a test and a metric read it

    def list_all(self) -> tuple[list[dict], str]:
        """Every object in pages, all at one resourceVersion; restarts on 410 Gone mid-way."""
        while True:
            items: list[dict] = []
            token, version = None, ""
            try:
                while True:
                    page, rv, token = self.kube.list_page(
                        self.spec.api_version, self.spec.kind, self.spec.namespace,
                        label_selector=self.spec.label_selector, limit=self.page_size, continue_token=token,
                    )
                    items.extend(page if self.shrink is None else [self.shrink(obj) for obj in page])
                    version = version or rv
                    if not token:
                        self.lists += 1
                        return items, rv or version
            except ApiError as err:
                if not err.gone:
                    raise
                log.info("%s list continuation expired; listing again", self.spec.kind)

    def run(self) -> None:
        delay = BACKOFF_START_S
        version: str | None = None
        while not self.stop.is_set():
            try:
                if version is None:
                    objects, version = self.list_all()
                    self.sink.replace(self.spec.key, objects, self.spec.namespace)
                version = self._watch(version)
                delay = BACKOFF_START_S
            except ApiError as err:
                if err.gone:  # compacted (or the API server's watch cache restarted): relist at once
                    log.info("%s watch expired (410 Gone at resourceVersion %s); relisting", self.spec.kind, version)
                    version = None
                    continue
                if err.not_found:  # the kind is not served (yet): look again later
                    version = None
                log.warning("%s watch: %s; retrying in %.1fs", self.spec.kind, err, delay)
                self._sleep(delay)
                delay = min(BACKOFF_MAX_S, delay * 2)
            except (TransportError, ValueError) as err:
                log.warning("%s watch: %s; retrying in %.1fs", self.spec.kind, err, delay)
                self._sleep(delay)
                delay = min(BACKOFF_MAX_S, delay * 2)

    def _watch(self, version: str) -> str:
        """Apply events until the server closes the stream; returns the last resourceVersion."""
        for event in self.kube.watch(self.spec.api_version, self.spec.kind, self.spec.namespace,
                                     label_selector=self.spec.label_selector, resource_version=version,
                                     timeout_seconds=self.watch_timeout_s):
            obj = event.get("object") or {}
            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
            if event.get("type") != "BOOKMARK":
                self.sink.apply(self.spec.key, event["type"], obj)
            if self.stop.is_set():
                break
        return version


def start(reflectors: list[Reflector]) -> list[threading.Thread]:
    threads = [threading.Thread(target=r.run, name=f"nvcre-watch-{r.spec.key}", daemon=True) for r in reflectors]
    for thread in threads:
        thread.start()
    return threads
