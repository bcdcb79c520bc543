"""Where the controller keeps what outlives a run, read from the process environment once per call."""

from __future__ import annotations

import os

DEFAULT_NAMESPACE = "nvcre-system"


def ledger_namespace() -> str:
    """The controller's namespace: NVCRE_LEDGER_NAMESPACE, else POD_NAMESPACE (the chart sets it)."""
    return os.environ.get("NVCRE_LEDGER_NAMESPACE") or os.environ.get("POD_NAMESPACE") or DEFAULT_NAMESPACE
