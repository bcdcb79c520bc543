"""``dig``: a field deep inside an object, None where any level is absent or not a mapping."""

from __future__ import annotations

from collections import OrderedDict
from types import MappingProxyType

from nvcre.objpath import dig


def test_plain_dicts_and_other_mappings_are_walked_alike():
    body = {"status": {"conditions": [{"type": "Ready"}]}}
    assert dig(body, "status", "conditions") == [{"type": "Ready"}]
    assert dig(OrderedDict(status=MappingProxyType({"phase": "Running"})), "status", "phase") == "Running"


def test_a_missing_null_or_non_mapping_level_reads_as_none():
    assert dig({"status": None}, "status", "phase") is None
    assert dig({"status": ["Running"]}, "status", "phase") is None
    assert dig({"spec": "x"}, "spec", "nodeName") is None
    assert dig(None, "metadata") is None
    assert dig({"a": 1}) == {"a": 1}
