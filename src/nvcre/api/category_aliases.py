"""The catalog's other spellings of category names, read straight from its entry files.

The API models need them (an alias and the name it stands for are one category, for the
duplicate check and the CRD rule built from it) but must not import ``nvcre.catalog``,
which is built on the API models. The files are the one source: ``nvcre.catalog.data``
parses the same ``aliases:`` lists, and a unit test keeps the two readings equal.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

ENTRIES_DIR = Path(__file__).resolve().parents[1] / "catalog" / "entries"


@lru_cache(maxsize=1)
def category_aliases() -> dict[tuple[str, str], tuple[str, str]]:
    """(domain, alias) -> (domain, variant), sorted, for every catalog entry
    ``entries/<domain>/<variant>.yaml`` that lists ``aliases``."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for path in sorted(ENTRIES_DIR.glob("*/*.yaml")):
        if path.parent.name.startswith("_"):
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for alias in data.get("aliases") or ():
            found[(path.parent.name, str(alias))] = (path.parent.name, path.stem)
    return dict(sorted(found.items()))
