"""Lists that grow with the fleet are atomic in the CRDs (issue 12, bounded objects).

The API server records every key of a ``map`` list and every value of a ``set`` list in
``metadata.managedFields``, so a long keyed list is stored about twice: a failed 4096-node
Job carried 227 KiB of failedNodes and 214 KiB of managedFields for them. An atomic list is
one managedFields entry whatever its length.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

CRDS = sorted((Path(__file__).resolve().parents[3] / "charts" / "nvcre" / "crds").glob("*.yaml"))
LONG = 256  # a list that may hold more entries than this grows with the fleet


def keyed_long_lists(schema: dict, path: str = "") -> list[str]:
    found = []
    if schema.get("type") == "array":
        if schema.get("x-kubernetes-list-type") in ("map", "set") and schema.get("maxItems", LONG + 1) > LONG:
            found.append(f"{path} ({schema['x-kubernetes-list-type']}, maxItems {schema.get('maxItems', 'unbounded')})")
        found += keyed_long_lists(schema.get("items") or {}, path + "[]")
    for name, sub in (schema.get("properties") or {}).items():
        found += keyed_long_lists(sub, f"{path}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        found += keyed_long_lists(schema["additionalProperties"], path + ".*")
    return found


@pytest.mark.parametrize("crd_file", CRDS, ids=[p.stem.split(".")[0] for p in CRDS])
def test_lists_that_grow_with_the_fleet_are_atomic(crd_file):
    crd = yaml.safe_load(crd_file.read_text())
    found = [f"{v['name']}{p}" for v in crd["spec"]["versions"]
             for p in keyed_long_lists(v["schema"]["openAPIV3Schema"])]
    assert not found, found


def test_the_rule_sees_a_keyed_fleet_list():
    schema = {"properties": {"status": {"properties": {"failedNodes": {
        "type": "array", "maxItems": 12288, "x-kubernetes-list-type": "map", "items": {"type": "object"}}}}}}
    assert keyed_long_lists(schema) == [".status.failedNodes (map, maxItems 12288)"]
