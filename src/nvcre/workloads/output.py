"""Readable YAML for rendered objects: multi-line strings (scripts) as literal blocks."""

from __future__ import annotations

from typing import Any, Iterable

import yaml


# The C emitter when libyaml is there: the same bytes, several times faster (render of
# the whole catalog at fleet scale is dominated by dumping). Representers stay Python.
_Base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_Base):  # type: ignore[misc,valid-type]
    def ignore_aliases(self, data: Any) -> bool:  # repeated sub-objects print in full, no &anchors
        return True


def _str(dumper: Any, value: str) -> yaml.Node:
    if "\n" in value:
        # Literal blocks cannot carry trailing spaces on a line; strip them (scripts only).
        value = "\n".join(line.rstrip() for line in value.split("\n"))
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def dump_yaml(objects: Iterable[Any]) -> str:
    """Objects as a multi-document YAML stream, keys in insertion order."""
    return yaml.dump_all(list(objects), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)
