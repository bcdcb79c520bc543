"""Constraints that pin every dependency of nvcre to its declared lower bound.

`python hack/packaging/lowest.py [EXTRA...]` prints them (pip's constraints format);
the lowest-versions test installs the wheel with them into a fresh virtual environment.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
_REQ = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._\-]*)(\[[^\]]*\])?\s*(?P<spec>[^;]*)")


def lower_bounds(extras: tuple[str, ...] = ()) -> dict[str, str]:
    """name -> lowest allowed version, for the core dependencies and the given extras."""
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    out: dict[str, str] = {}
    for req in reqs:
        m = _REQ.match(req.strip())
        if not m:
            raise ValueError(f"pyproject.toml: cannot read requirement {req!r}")
        lows = [s.strip()[2:].strip() for s in m["spec"].split(",") if s.strip().startswith(">=")]
        if len(lows) != 1:
            raise ValueError(f"pyproject.toml: {req!r} has no single >= lower bound")
        out[m["name"]] = lows[0]
    return out


def constraints(extras: tuple[str, ...] = ()) -> str:
    return "".join(f"{name}=={version}\n" for name, version in sorted(lower_bounds(extras).items()))


if __name__ == "__main__":
    sys.stdout.write(constraints(tuple(sys.argv[1:])))
