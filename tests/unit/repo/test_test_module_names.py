"""Test modules outside a package share one flat module namespace under pytest's default
import mode: two files with one basename stop collection of the whole suite, which a run
of one layer alone (tests/unit) does not show."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]


def _in_package(path: Path) -> bool:
    return (path.parent / "__init__.py").exists()


def test_no_two_rootless_test_modules_share_a_basename():
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        if not _in_package(path):
            seen[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"rename one of each (pytest cannot import both): {clashes}"
