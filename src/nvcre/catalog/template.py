"""Fill ``{{name}}`` placeholders in catalog data.

Catalog files are plain YAML with ``{{name}}`` holes (``{{gpusPerNode}}``). Shell text
in the files keeps its own ``$VAR`` / ``${VAR}`` syntax untouched, which is why the
catalog does not use ``str.format`` or a full template engine. One filter exists,
``{{count|repeat:text}}``: ``text`` repeated ``count`` times, comma-joined (OCI's
SR-IOV network list needs it).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

_HOLE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\|\s*repeat:([^}]*))?\}\}")


class CatalogError(Exception):
    """The catalog data itself is wrong (a bug in a YAML file, not in user input)."""


def fill(text: str, values: Mapping[str, Any], *, where: str) -> str:
    """Replace every hole in ``text``; an unknown name is a catalog bug naming ``where``."""
    if "{{" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        name, repeat = match.group(1), match.group(2)
        if name not in values:
            raise CatalogError(f"{where}: unknown placeholder {{{{{name}}}}}; known: {', '.join(sorted(values))}")
        value = values[name]
        if repeat is not None:
            return ",".join([repeat.strip()] * int(value))
        return str(value)

    return _HOLE.sub(one, text)


def fill_all(data: Any, values: Mapping[str, Any], *, where: str) -> Any:
    """``fill`` applied to every string (mapping keys included) inside ``data``."""
    if isinstance(data, str):
        return fill(data, values, where=where)
    if isinstance(data, list):
        return [fill_all(item, values, where=where) for item in data]
    if isinstance(data, dict):
        return {fill(str(k), values, where=where): fill_all(v, values, where=where) for k, v in data.items()}
    return data
