"""Reading a field deep inside a Kubernetes object (plain dicts as the API server returns them).

``dig(job, "status", "conditions")`` is ``job["status"]["conditions"]`` where any level
may be absent, null or of the wrong type (then the answer is None), instead of the
``(x.get("a") or {}).get("b")`` chains that each reader used to spell out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def dig(obj: Any, *path: str) -> Any:
    """The value at ``path`` under ``obj``, or None when a level is missing or not a mapping."""
    for key in path:
        # a plain dict first: the ABC check costs more than the lookup, and dig runs per pod per pass
        if type(obj) is not dict and not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj
