"""The repository stands on its own: nothing it builds, tests or benchmarks reads from beside it."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
SCANNED = ("src", "tests", "bench", "hack", ".ci", "Makefile", "Dockerfile", "pyproject.toml")
# A path that climbs out of the checkout into a sibling folder, in code or a shell line.
# (built from pieces so this file does not match itself)
_SIBLING = r"\.\." + "/" + "shared"
OUTSIDE = re.compile(_SIBLING + r"""|parents\[\d\]\.parent\s*/\s*["']shared["']|NVCRE_""" + "SHARED")


def _files():
    for name in SCANNED:
        root = REPO / name
        if root.is_file():
            yield root
        elif root.is_dir():
            for path in root.rglob("*"):
                if path.is_file() and "data" not in path.relative_to(REPO).parts[:2] and path.suffix in {".py", ".sh", "", ".toml", ".mk"}:
                    yield path


def test_nothing_reads_from_beside_the_checkout():
    offenders = [str(p.relative_to(REPO)) for p in _files() if p != Path(__file__) and OUTSIDE.search(p.read_text(errors="replace"))]
    assert offenders == [], f"these files read from outside the repository: {offenders}"


def test_fixture_copies_carry_their_sources():
    data = REPO / "tests" / "data"
    assert (data / "SOURCES.md").is_file()
    listed = (data / "fixtures" / "SOURCES.md").read_text()
    for path in (data / "fixtures").rglob("*"):
        if path.is_file() and path.name != "SOURCES.md":
            assert path.name in listed or path.parent.name in listed, f"{path} is not named in fixtures/SOURCES.md"
