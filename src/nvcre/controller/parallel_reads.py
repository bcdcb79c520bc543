"""Independent API reads of one reconcile pass, done at the same time.

A Job's terminal pass collects its evidence (the failure log, the launcher log for the
final measurement, up to eight pods' log tails) through the API server's proxy to each
kubelet; one after the other they took seconds at fleet scale, and the verdict waited
for all of them. The reads do not depend on each other, so they overlap; the pass still
fails (and is retried) if any of them raises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
MAX_READERS = 8  # the client's connection pool (32) is shared with the worker threads


def read_all(reads: Mapping[str, Callable[[], T]], *, limit: int = MAX_READERS) -> dict[str, T]:
    """Run every read, at most ``limit`` at once; their results by name (the first error raises)."""
    if len(reads) <= 1:
        return {name: read() for name, read in reads.items()}
    with ThreadPoolExecutor(max_workers=min(limit, len(reads)), thread_name_prefix="nvcre-read") as pool:
        futures = {name: pool.submit(read) for name, read in reads.items()}
        return {name: future.result() for name, future in futures.items()}
