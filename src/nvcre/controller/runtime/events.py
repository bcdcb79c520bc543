"""Events on phase transitions, so ``kubectl describe`` tells the story of a run.

One Event per change of the True phase (or of its reason within InProgress), sent
only after the status write that made it succeeded; Warning for Failed, Normal
otherwise. The additive signals (HardwareFailed, ValidationFailed) get one Warning
when they first turn True. Notes are capped at 1024 bytes like the API's own limit.
"""

from __future__ import annotations

import logging

from nvcre.controller import conditions as c

log = logging.getLogger(__name__)

MAX_NOTE_BYTES = 1024
TRUNCATED = "... [truncated]"


def event_note(message: str) -> str:
    """The message as valid UTF-8, cut to 1024 bytes with a visible marker."""
    data = message.encode("utf-8", "replace")
    if len(data) <= MAX_NOTE_BYTES:
        return data.decode("utf-8", "replace")
    keep = MAX_NOTE_BYTES - len(TRUNCATED.encode())
    return data[:keep].decode("utf-8", "ignore") + TRUNCATED


def due_events(before: list[dict] | None, after: list[dict] | None) -> list[tuple[str, str, str]]:
    """(type, reason, note) for every Event a status change calls for, in order."""
    out: list[tuple[str, str, str]] = []
    step = c.transition(before, after)
    if step is not None:
        out.append((step.event_type, step.reason, event_note(step.message or step.reason)))
    for ctype in (c.HARDWARE_FAILED, c.VALIDATION_FAILED):
        if c.flipped_true(before, after, ctype):
            out.append(("Warning", c.reason_of(after, ctype), event_note(c.message_of(after, ctype))))
    if c.find(before, c.VALIDATION_FAILED) is None:
        cond = c.find(after, c.VALIDATION_FAILED)
        if cond is not None and cond.get("status") == "False":
            out.append(("Normal", cond.get("reason", c.JobReason.THRESHOLDS_MET), event_note(cond.get("message", ""))))
    return out


class EventSink:
    """Posts Events through the kube client; failures are logged, never fatal."""

    def __init__(self, kube) -> None:
        self.kube = kube

    def emit(self, obj: dict, event_type: str, reason: str, message: str) -> None:
        try:
            self.kube.post_event(obj, event_type, reason, event_note(message))
        except Exception as err:  # an Event is a courtesy; the status write already happened
            log.warning("could not post event %s on %s: %s", reason, obj.get("metadata", {}).get("name"), err)

    def emit_transitions(self, obj: dict, before: list[dict] | None, after: list[dict] | None) -> None:
        for event_type, reason, note in due_events(before, after):
            self.emit(obj, event_type, reason, note)
