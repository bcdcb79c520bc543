"""Turn user manifests into models, or into one clear error naming the field.

Every problem becomes a ``ManifestError`` whose field is a dotted camelCase path
(``spec.categories[0].options.testScale``) and whose message says what is
allowed, so the CLI can print it without a traceback. Unknown fields are refused
(the API server would silently prune them, hiding a typo).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from nvcre.api import KINDS
from nvcre.api.common import GROUP_VERSION, FieldProblem
from nvcre.errors import ManifestError, UserError

_IDENT_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def parse_object(obj: Any, source: str | None = None) -> BaseModel:
    """The model for one manifest (chosen by ``kind``), validated; ManifestError otherwise."""
    if not isinstance(obj, dict):
        raise ManifestError("(document)", f"expected a mapping with apiVersion and kind, got {type(obj).__name__}", source=source)
    api_version = obj.get("apiVersion")
    if api_version != GROUP_VERSION:
        raise ManifestError("apiVersion", f"must be {GROUP_VERSION}, got {api_version!r}", source=_named(source, obj))
    kind = obj.get("kind")
    model = KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        raise ManifestError("kind", f"unknown kind {kind!r}; allowed: {', '.join(KINDS)}", source=_named(source, obj))
    try:
        return model.model_validate(obj, by_alias=True, by_name=False)
    except ValidationError as err:
        field, message = describe_error(err, model)
        raise ManifestError(field, message, source=_named(source, obj)) from None


def load_file(path: str | Path) -> list[BaseModel]:
    """Every nvcre object in a (multi-document) YAML file; empty documents are skipped."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{file}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{file}: is a directory, expected a YAML file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"{file}: cannot read: {err}") from None
    return load_text(text, source=str(file))


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (YAML would keep the last
    silently; the API server's decoder refuses it too)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:
            raise yaml.constructor.ConstructorError(None, None, "a mapping key must be a scalar", key_node.start_mark)
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {seen[key].line + 1})", key_node.start_mark)
        seen[key] = key_node.start_mark
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_yaml_documents(text: str) -> list[Any]:
    """Every YAML document in ``text``, refusing duplicate keys (yaml.YAMLError otherwise)."""
    return list(yaml.load_all(text, Loader=_StrictLoader))


def load_text(text: str, source: str = "<input>") -> list[BaseModel]:
    """Like load_file, for YAML already in memory."""
    try:
        documents = load_yaml_documents(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise UserError(f"{source}:{where}: invalid YAML: {problem}") from None
    objects = [parse_object(item, source=source) for doc in documents if doc is not None for item in _items(doc)]
    if not objects:
        raise UserError(f"{source}: no objects found")
    return objects


def _items(doc: Any) -> list[Any]:
    """A document, or the items of a ``kind: List`` document (what ``kubectl get -o yaml`` writes)."""
    if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
        return doc["items"]
    return [doc]


def _named(source: str | None, obj: dict) -> str | None:
    """Name the object inside its source, so a multi-document file points at the right one."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else None
    kind = obj.get("kind") if isinstance(obj.get("kind"), str) else None
    label = f"{kind}/{name}" if kind and name else None
    if source and label:
        return f"{source} ({label})"
    return source or label


def format_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """``('spec', 'categories', 0, 'options')`` -> ``spec.categories[0].options``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _is_tag(part):
            continue
        elif set(str(part)) <= _IDENT_CHARS and not str(part)[:1].isdigit():
            out += f".{part}" if out else str(part)
        else:
            out += f"[{part}]"
    return out


def join_path(base: str, sub: str) -> str:
    """Append a relative path (``env[3].valueFrom`` / ``[x]``) to a dotted base path."""
    if not sub:
        return base
    if not base:
        return sub
    return base + (sub if sub.startswith("[") else "." + sub)


def _is_tag(part: Any) -> bool:
    """Pydantic inserts validator/union tags into locations (``function-after[...]``, ``int``)."""
    text = str(part)
    return "[" in text and text.endswith("]") or text in ("int", "str", "float", "bool", "list", "dict")


def describe_error(err: ValidationError, model: type[BaseModel]) -> tuple[str, str]:
    """The field path and a user message for the most relevant pydantic error."""
    errors = err.errors(include_url=False)
    chosen = _most_relevant(errors)
    loc = tuple(chosen.get("loc", ()))
    field = format_path(loc)
    ctx = chosen.get("ctx") or {}
    problem = ctx.get("error")
    others = {format_path(e.get("loc", ())) for e in errors} - {field}
    more = f" (and {len(others)} more problem{'s' if len(others) > 1 else ''})" if others else ""
    if isinstance(problem, FieldProblem):
        return join_path(field, problem.path) or "(document)", problem.message + more
    return field or "(document)", _message(chosen, loc, model) + more


def _most_relevant(errors: list[dict[str, Any]]) -> dict[str, Any]:
    """Prefer our own checks and specific errors over union fallbacks; deepest first."""

    def score(e: dict[str, Any]) -> tuple[int, int]:
        ours = isinstance((e.get("ctx") or {}).get("error"), FieldProblem)
        union_noise = e.get("type") in ("int_type", "int_parsing") and any(_is_tag(p) for p in e.get("loc", ()))
        return (1 if ours else 0) - (1 if union_noise else 0), len(e.get("loc", ()))

    return max(errors, key=score)


def _message(error: dict[str, Any], loc: tuple[Any, ...], model: type[BaseModel]) -> str:
    kind = error.get("type", "")
    ctx = error.get("ctx") or {}
    given = error.get("input")
    if kind == "extra_forbidden":
        allowed = _allowed_fields(model, loc[:-1])
        hint = f"; allowed here: {', '.join(allowed)}" if allowed else ""
        return f"unknown field {loc[-1]!r}{hint}"
    if kind == "missing":
        return "is required"
    if kind in _TYPE_NAMES:
        return f"must be {_TYPE_NAMES[kind]}, got {_yaml_type(given)} {given!r}"[:300]
    if kind == "literal_error":
        return f"{given!r} is not allowed; allowed values: {ctx.get('expected', '')}"
    if kind == "string_pattern_mismatch":
        return f"{given!r} does not match the pattern {ctx.get('pattern')}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        return f"{given!r} is out of range: {error.get('msg', '').replace('Input should be ', 'must be ')}"
    if kind == "too_long":
        got = ctx.get("actual_length")
        return f"at most {ctx.get('max_length')} entries are allowed" + (f", got {got}" if got is not None else "")
    if kind == "too_short":
        least = ctx.get("min_length")
        return f"at least {least} {'entry is' if least == 1 else 'entries are'} required"
    if kind == "string_too_long":
        return f"at most {ctx.get('max_length')} characters are allowed"
    if kind == "string_too_short":
        least = ctx.get("min_length")
        return f"at least {least} {'character is' if least == 1 else 'characters are'} required"
    if kind == "value_error" and "error" in ctx:
        return str(ctx["error"])
    return error.get("msg", "is invalid")


_TYPE_NAMES = {
    "int_type": "an integer (write 4, not \"4\")",
    "bool_type": "a boolean (true or false, not a quoted string)",
    "float_type": "a number",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
}


def _yaml_type(value: Any) -> str:
    return {str: "the string", bool: "the boolean", int: "the integer", float: "the number",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)


def _allowed_fields(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The camelCase fields of the struct found at ``loc`` inside ``model`` (best effort)."""
    current: Any = model
    for part in loc:
        if _is_tag(part):
            continue
        current = _child_type(current, part)
        if current is None:
            return []
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(info.alias or name for name, info in current.model_fields.items())
    return []


def _unwrap(tp: Any) -> Any:
    """Strip Optional/Annotated; lists and dicts become ("list"|"dict", item type)."""
    while True:
        origin = get_origin(tp)
        if origin is None:
            return tp
        if origin is Annotated:
            tp = get_args(tp)[0]
            continue
        args = [a for a in get_args(tp) if a is not type(None)]
        if origin in (list, tuple):
            return ("list", args[0] if args else None)
        if origin is dict:
            return ("dict", args[1] if len(args) > 1 else None)
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if len(args) == 1:
            tp = args[0]
        elif models:
            return models[0]
        else:
            return tp


def _child_type(current: Any, part: Any) -> Any:
    if isinstance(current, tuple):
        return _unwrap(current[1]) if current[1] is not None else None
    if isinstance(current, type) and issubclass(current, BaseModel):
        for name, info in current.model_fields.items():
            if part in (name, info.alias):
                return _unwrap(info.annotation)
    return None
