"""Readable YAML for rendered objects: multi-line strings (scripts) as literal blocks.

At fleet scale most objects differ from another only in plain words (node, Job and
group names), so each object's shape is dumped once and reused: see ``dump_yaml``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

import yaml
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

# The C emitter when libyaml is there: the same bytes, several times faster (render of
# the whole catalog at fleet scale is dominated by dumping). Representers stay Python.
_Base = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"


class _Dumper(_Base):  # type: ignore[misc,valid-type]
    """PyYAML's safe dumper with a short path for the plain dicts, lists and strings that
    rendered objects are made of. At fleet scale (4096 nodes, ~20,000 objects, 2.3
    million scalars) PyYAML's generic representer dispatch and its implicit-tag
    resolver (called twice per scalar by the emitter, regex by regex) took most of
    the time; the short path builds the same node graph and remembers each scalar's
    resolution, so the emitter writes the same bytes. Anything else takes PyYAML's path.
    """

    _resolved: dict = {}

    def ignore_aliases(self, data: Any) -> bool:  # repeated sub-objects print in full, no &anchors
        return True

    def represent_data(self, data: Any) -> Any:
        kind = type(data)
        if kind is str:
            return _str(self, data)
        if self.default_flow_style is not False or self.default_style is not None:
            return super().represent_data(data)
        if kind is dict:
            items = data.items()
            if self.sort_keys:
                return super().represent_data(data)
            represent = self.represent_data
            return MappingNode(_MAP, [(represent(k), represent(v)) for k, v in items], flow_style=False)
        if kind is list:
            represent = self.represent_data
            return SequenceNode(_SEQ, [represent(item) for item in data], flow_style=False)
        return super().represent_data(data)

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        # Without path resolvers (the safe dumper has none) a tag depends on the
        # node kind, the value and the implicit flags alone.
        if self.yaml_path_resolvers or kind is not ScalarNode:
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = self._resolved.get(key)
        if tag is None:
            tag = self._resolved[key] = super().resolve(kind, value, implicit)
        return tag


def _str(dumper: Any, value: str) -> yaml.Node:
    if "\n" in value:
        # Literal blocks cannot carry trailing spaces on a line; strip them (scripts only).
        value = "\n".join(line.rstrip() for line in value.split("\n"))
        return dumper.represent_scalar(_STR, value, style="|")
    return dumper.represent_scalar(_STR, value)


_Dumper.add_representer(str, _str)


def _dump_all(objects: list[Any]) -> str:
    return yaml.dump_all(objects, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)


# A JSON string value (not a key: keys are followed by ':') that PyYAML writes as a
# plain scalar, unquoted and unchanged: a letter or '_' first, then letters, digits and
# '_./-' only, and not one of the words YAML 1.1 reads as a bool or null (the only
# implicit types that start with a letter; tests/unit/cli/test_yaml_dump.py checks
# this against PyYAML's own resolver). Such a word can be swapped for another in the
# dumped text without changing anything around it: no quoting, no line folding (no
# spaces), and only values are swapped, so a key's length never changes the layout.
_BOOL_OR_NULL = ("yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|null|Null|NULL")
# The lookbehind keeps an escaped quote inside a string (`"\\"A"`) from reading as an opening one.
_PLAIN_WORD = re.compile(r'(?<!\\)"(?!(?:%s)")([A-Za-z_][A-Za-z0-9_./-]*)"(?!:)' % _BOOL_OR_NULL)
_HOLE = "\\u0000"  # what a swapped word becomes in the JSON shape: it cannot occur in the text otherwise
_QUOTED_HOLE = f'"{_HOLE}"'
_MARK = re.compile(r"nvcrehole(\d+)x")


def dump_yaml(objects: Iterable[Any]) -> str:
    """Objects as a multi-document YAML stream, keys in insertion order.

    Byte for byte what ``yaml.dump_all`` with ``_Dumper`` writes, faster: each object's
    JSON text with its plain words cut out is its shape; a shape is dumped once, with
    numbered markers for the words, and every object of that shape is its dumped text
    with its own words put back. Objects that are not JSON data (a tuple, a subclass,
    a non-string key), or whose text already holds a marker or a hole, are dumped as
    they are.
    """
    objects = list(objects)
    _Dumper._resolved = {}  # per dump: the memo lives as long as the values it holds
    if not objects or not all(type(obj) is dict and obj for obj in objects):
        return _dump_all(objects)  # a scalar or empty document shares a line with '---'
    shapes: dict[str, list] = {}
    out = []
    for obj in objects:
        text = _json_text(obj)
        if text is None or "nvcrehole" in text or _HOLE in text:
            out.append(_dump_all([obj]))
            continue
        cut = _PLAIN_WORD.split(text)  # text, word, text, word, ..., text
        words = cut[1::2]
        shape = _QUOTED_HOLE.join(cut[0::2])
        parts = shapes.get(shape)
        if parts is None:
            parts = shapes[shape] = _template(shape)
        pieces = parts[:]
        pieces[1::2] = [words[i] for i in parts[1::2]]
        out.append("".join(pieces))
    # A document that ends open (a `|+` block keeps trailing newlines) ends with "..." when
    # dumped alone; inside a stream PyYAML writes that marker only after the last document.
    for i in range(len(out) - 1):
        if out[i].endswith("\n...\n"):
            out[i] = out[i][: -len("...\n")]
    return "---\n".join(out)


def _json_text(obj: Any) -> str | None:
    """``obj`` as JSON, or None where JSON would not give the same data back (a tuple, a
    non-string key). Subclasses of str, int and dict compare equal and pass: PyYAML's
    safe dumper refuses them, so no output changes by that."""
    try:
        text = json.dumps(obj)
    except (TypeError, ValueError):
        return None
    return text if json.loads(text) == obj else None


def _template(shape: str) -> list:
    """The YAML of a shape split at its holes: text, word index, text, ... text."""
    counter = iter(range(1 << 62))

    def fill(node: Any) -> Any:
        if type(node) is dict:
            return {k: fill(v) for k, v in node.items()}
        if type(node) is list:
            return [fill(v) for v in node]
        return f"nvcrehole{next(counter)}x" if node == "\x00" else node

    text = _dump_all([fill(json.loads(shape))])
    parts: list = _MARK.split(text)
    parts[1::2] = [int(i) for i in parts[1::2]]
    return parts
