"""The controller's log output: text or JSON lines, and one INFO line per transition.

Log collectors (Loki, Elasticsearch, Cloud Logging) index JSON fields, so
``--log-format json`` writes one object per line with the record's structured fields
(kind, namespace, name, generation, reason, ...) as top-level keys; ``text`` keeps a
line a person reads. Every phase transition a status write makes (the same moments
that get an Event) is logged at INFO with those fields, so a run's story can be
followed from the logs alone, for every kind.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime, timezone


LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# A record's structured fields travel as ``extra={"fields": {...}}`` (a dict, so a key
# like "name" cannot collide with LogRecord's own attributes); JSON writes them as keys.
FIELDS_ATTR = "fields"

log = logging.getLogger("nvcre.controller.transitions")


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, msg, the structured fields, exc."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict = {
            "ts": datetime.fromtimestamp(record.created, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in (getattr(record, FIELDS_ATTR, None) or {}).items():
            if value is not None and key not in out:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def configure(level: str = "INFO", fmt: str = "text", stream=None) -> None:
    """Set up the root logger once for the controller process (replacing earlier handlers)."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, not {fmt!r}")
    numeric = getattr(logging, level.upper(), None)
    if level.upper() not in LOG_LEVELS or not isinstance(numeric, int):
        raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    # kopf is chatty at INFO about every watch; keep its warnings and errors.
    logging.getLogger("kopf").setLevel(max(numeric, logging.WARNING))


def log_transition(obj: dict, before: list[dict] | None, after: list[dict] | None) -> None:
    """INFO line for a phase transition written to ``obj`` (nothing when the phase held)."""
    from nvcre.controller import conditions as c  # lazily: the CLI imports this module for its flags

    step = c.transition(before, after)
    if step is None:
        return
    meta = obj.get("metadata") or {}
    fields = {
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace") or "",
        "name": meta.get("name", ""),
        "generation": meta.get("generation"),
        "reason": step.reason,
        "from_phase": step.before or "",
        "to_phase": step.after,
    }
    where = f"{fields['namespace']}/{fields['name']}" if fields["namespace"] else fields["name"]
    log.info(
        "%s %s generation %s: %s -> %s (%s)",
        fields["kind"], where, fields["generation"], step.before or "(none)", step.after, step.reason,
        extra={FIELDS_ATTR: fields},
    )
