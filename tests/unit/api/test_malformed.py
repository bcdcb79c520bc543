"""Every manifest in tests/data/malformed is refused with a ManifestError naming its field.

Each file's header says ``# expect: <field path>`` (the path the API server also names)
and, when only our client-side checks can catch it, ``# server: no``. The error may
name a field below the expected one (``thresholds.fooBar`` under ``thresholds``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nvcre.api.load import load_file, parse_object
from nvcre.errors import ManifestError, UserError

MALFORMED_DIR = Path(__file__).resolve().parents[2] / "data" / "malformed"
FILES = sorted(MALFORMED_DIR.glob("*.yaml"))
EXPECT = re.compile(r"^# expect: (\S+)\s*$", re.M)


def expected_field(path: Path) -> str:
    match = EXPECT.search(path.read_text(encoding="utf-8"))
    assert match, f"{path.name}: missing '# expect: <field path>' header"
    return match.group(1)


def names(expected: str, field: str) -> bool:
    return field == expected or field.startswith(expected + ".") or field.startswith(expected + "[")


def test_at_least_thirty_malformed_manifests():
    assert len(FILES) >= 30


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_malformed_manifest_is_refused_naming_the_field(path: Path):
    expected = expected_field(path)
    with pytest.raises(ManifestError) as caught:
        load_file(path)
    err = caught.value
    assert names(expected, err.field), f"{path.name}: error names {err.field!r}, expected {expected!r}: {err}"
    assert str(path) in str(err), "the message names the file"
    assert len(err.message) > len(err.field) + 10, "the message says what is wrong, not just where"


def test_headers_are_parseable_for_the_integration_test():
    for path in FILES:
        head = [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
        assert head[0].startswith("# expect: ")
        assert all(re.match(r"^# (expect|server|why): ", line) for line in head), path.name
        assert all(line == "# server: no" for line in head if line.startswith("# server:")), path.name


def test_messages_say_what_is_allowed():
    cases = {
        "cert-unknown-domain": "communication",
        "cert-bad-test-scale": "intra-rack",
        "cert-env-33-entries": "at most 32",
        "cert-threshold-unknown-key": "busBandwidthGBps",
        "cert-negative-nodes-per-job": "greater than or equal to 1",
        "cert-unknown-field": "nodeSelector",
        "run-framework-none": "torch, mpi or exec",
        "cert-env-value-from": "valueFrom is not allowed",
        "cert-threshold-does-not-compile": "does not compile",
    }
    for stem, text in cases.items():
        with pytest.raises(ManifestError) as caught:
            load_file(MALFORMED_DIR / f"{stem}.yaml")
        assert text in str(caught.value), (stem, str(caught.value))


def test_missing_file_and_bad_yaml_are_user_errors(tmp_path: Path):
    with pytest.raises(UserError, match="no such file"):
        load_file(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: nvcre.nvidia.com/v1alpha1\nkind: [Certification\n")
    with pytest.raises(UserError, match=r"bad\.yaml:.*line 3"):
        load_file(bad)
    empty = tmp_path / "empty.yaml"
    empty.write_text("---\n")
    with pytest.raises(UserError, match="no objects"):
        load_file(empty)


def test_snake_case_keys_are_refused():
    obj = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1",
        "kind": "Certification",
        "metadata": {"name": "x"},
        "spec": {"target": {}, "categories": [{"domain": "training", "variant": "nemotron5-8b"}], "nodes_per_job": 2},
    }
    with pytest.raises(ManifestError) as caught:
        parse_object(obj)
    assert caught.value.field == "spec.nodes_per_job"


def test_non_mapping_document_is_refused():
    with pytest.raises(ManifestError, match="expected a mapping"):
        parse_object(["not", "an", "object"], source="list.yaml")
