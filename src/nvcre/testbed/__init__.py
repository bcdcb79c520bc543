"""A real local Kubernetes control plane from pinned binaries (tests and the demo).

Entry points: :class:`ControlPlane` (start/stop/context manager), :func:`load_running`
and :func:`stop_running` (find or stop one started by another process, through
``workdir/state.json``), :func:`ensure_binaries` (the pinned binaries' directory).
Names are imported on first use, so ``python -m nvcre.testbed.binaries`` runs cleanly.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "BinariesMissing": "nvcre.testbed.binaries",
    "ensure_binaries": "nvcre.testbed.binaries",
    "ControlPlane": "nvcre.testbed.controlplane",
    "ControlPlaneError": "nvcre.testbed.controlplane",
    "default_workdir": "nvcre.testbed.controlplane",
    "load_running": "nvcre.testbed.controlplane",
    "stop_running": "nvcre.testbed.controlplane",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'nvcre.testbed' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
