"""A small model of what the API server checks on create: the CRD's OpenAPI schema
(types, enums, bounds, patterns, required, unknown fields) and its CEL rules.

Used to show, without a cluster, that the generated CRDs refuse the malformed
manifests at the field our Python validation names. CEL rules that use Kubernetes-
only libraries (quantity, split) or oldSelf are skipped here: the Python
validators mirror them and the integration test applies them to a real API server.
"""

from __future__ import annotations

import re
from typing import Any

import cel

SKIPPED_FUNCTIONS = ("quantity(", "oldSelf", "findAll(")  # findAll: mirrored by nvcre.api.rules.check_cel_shape


def problems(schema: dict[str, Any], value: Any, path: str = "") -> list[tuple[str, str]]:
    """(field path, message) for every violation of ``schema`` by ``value``."""
    found: list[tuple[str, str]] = []
    value = _with_defaults(schema, value)
    if not path and isinstance(value, dict):
        # metadata is validated by the API server's own ObjectMeta rules, not the CRD schema.
        value = {k: v for k, v in value.items() if k != "metadata"}
    _check(schema, value, path, found)
    return found


def _with_defaults(schema: dict[str, Any], value: Any) -> Any:
    """Apply schema defaults the way the API server does before validating."""
    if isinstance(value, dict) and "properties" in schema:
        value = dict(value)
        for name, sub in schema["properties"].items():
            if name not in value and "default" in sub:
                value[name] = sub["default"]
            if name in value:
                value[name] = _with_defaults(sub, value[name])
    elif isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        value = {k: _with_defaults(schema["additionalProperties"], v) for k, v in value.items()}
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        value = [_with_defaults(schema["items"], v) for v in value]
    return value


def _type_ok(schema: dict[str, Any], value: Any) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, (int, str)) and not isinstance(value, bool)
    kind = schema.get("type")
    return {
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
    }.get(kind, True)


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _check(schema: dict[str, Any], value: Any, path: str, found: list[tuple[str, str]]) -> None:
    if not _type_ok(schema, value):
        found.append((path, f"wrong type, want {schema.get('type')}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        found.append((path, "unsupported value"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            found.append((path, "below minimum"))
        if "maximum" in schema and value > schema["maximum"]:
            found.append((path, "above maximum"))
        if schema.get("exclusiveMinimum") is True and value == schema.get("minimum"):
            found.append((path, "below minimum"))
        if schema.get("exclusiveMaximum") is True and value == schema.get("maximum"):
            found.append((path, "above maximum"))
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            found.append((path, "too long"))
        if "minLength" in schema and len(value) < schema["minLength"]:
            found.append((path, "too short"))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            found.append((path, "does not match pattern"))
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            found.append((path, "too many items"))
        if "minItems" in schema and len(value) < schema["minItems"]:
            found.append((path, "too few items"))
        keys = schema.get("x-kubernetes-list-map-keys") if schema.get("x-kubernetes-list-type") == "map" else None
        seen = set()
        for index, item in enumerate(value):
            _check(schema.get("items", {}), item, _join(path, index), found)
            if keys and isinstance(item, dict):
                key = tuple(item.get(k) for k in keys)
                if key in seen:
                    found.append((_join(path, index), "duplicate value"))
                seen.add(key)
    if isinstance(value, dict):
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            found.append((path, "too many properties"))
        for name in schema.get("required", []):
            if name not in value:
                found.append((_join(path, name), "required value"))
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if props is not None and key in props:
                _check(props[key], item, _join(path, key), found)
            elif isinstance(extra, dict):
                _check(extra, item, _join(path, key), found)
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                found.append((_join(path, key), "unknown field"))
    if not found:
        for rule in schema.get("x-kubernetes-validations", []):
            if any(fn in rule["rule"] for fn in SKIPPED_FUNCTIONS):
                continue
            if cel.evaluate(rule["rule"], {"self": value}) is not True:
                found.append((path + rule.get("fieldPath", ""), rule["message"]))
