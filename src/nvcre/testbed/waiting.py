"""Polling with a deadline, for tests that wait on controllers doing their work."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(AssertionError):
    """The condition did not hold in time (an AssertionError so pytest reports it as a failure)."""


def wait_until(
    check: Callable[[], T], *, timeout_s: float = 30.0, interval_s: float = 0.2, what: str = "condition"
) -> T:
    """Call ``check`` until it returns something truthy and return that.

    On timeout the message names ``what`` and the last value seen, so a failing test
    says what it was waiting for.
    """
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout_s:.0f}s waiting for {what}; last value: {last!r}")
        time.sleep(interval_s)
