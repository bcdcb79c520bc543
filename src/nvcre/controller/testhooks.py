"""Fault-injection hooks for the e2e tests; inert unless their environment variable is set.

``NVCRE_FAULT_KILL_AFTER_STATUS_WRITE=<Kind>[/<ConditionType>]:<n>`` makes the controller
SIGKILL itself right after the API server acknowledged the ``n``-th status write of a
``Kind`` object (with ``/<ConditionType>``: the ``n``-th write that turned that condition
True). The write is stored; whatever the controller would have done next (Events, the
cache, the parent's fold, ConfigMaps, the next child) is lost, as after a node crash at
that instant. ``tests/e2e/test_controller_restart.py`` uses it; nothing else should.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import dataclass

from nvcre.errors import UserError

log = logging.getLogger(__name__)

KILL_AFTER_STATUS_WRITE = "NVCRE_FAULT_KILL_AFTER_STATUS_WRITE"


@dataclass
class StatusWriteKill:
    kind: str
    condition: str | None
    nth: int
    seen: int = 0

    @classmethod
    def from_env(cls, environ=os.environ) -> StatusWriteKill | None:
        spec = environ.get(KILL_AFTER_STATUS_WRITE, "").strip()
        if not spec:
            return None
        target, sep, count = spec.rpartition(":")
        kind, _, condition = target.partition("/")
        if not sep or not kind or not count.isdigit() or int(count) < 1:
            raise UserError(f"{KILL_AFTER_STATUS_WRITE}={spec!r}: write <Kind>[/<ConditionType>]:<n>, e.g. Job/Succeeded:1")
        return cls(kind, condition or None, int(count))

    def counts(self, kind: str, before: list[dict], after: list[dict]) -> bool:
        if kind != self.kind:
            return False
        if self.condition is None:
            return True
        return _true(after, self.condition) and not _true(before, self.condition)

    def after_write(self, kind: str, before: list[dict], after: list[dict], name: str) -> None:
        with _LOCK:
            if not self.counts(kind, before, after):
                return
            self.seen += 1
            if self.seen != self.nth:
                return
            log.warning("test hook %s: killing the controller after status write %d of %s %s",
                        KILL_AFTER_STATUS_WRITE, self.seen, kind, name)
            for handler in logging.getLogger().handlers:
                handler.flush()
            os.kill(os.getpid(), signal.SIGKILL)


def _true(conditions: list[dict], ctype: str) -> bool:
    return any(c.get("type") == ctype and c.get("status") == "True" for c in conditions or [])


_LOCK = threading.Lock()
_status_write_kill: StatusWriteKill | None = None


def install(environ=os.environ) -> None:
    """Read the hooks' variables once, at controller start (UserError when malformed)."""
    global _status_write_kill
    _status_write_kill = StatusWriteKill.from_env(environ)
    if _status_write_kill is not None:
        log.warning("test hook %s is set: this controller will kill itself", KILL_AFTER_STATUS_WRITE)


def after_status_write(kind: str, before: list[dict], after: list[dict], name: str) -> None:
    """Called by ``write_status`` after the API server stored a changed status."""
    if _status_write_kill is not None:
        _status_write_kill.after_write(kind, before, after, name)
