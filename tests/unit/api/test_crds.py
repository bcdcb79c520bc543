"""The generated CRDs: committed files current, structural, bounded, and they refuse
what the Python validation refuses (checked with a model of the API server's checks)."""

from __future__ import annotations

import re
from pathlib import Path

import cel
import pytest
import yaml

from nvcre.api import KINDS
from nvcre.api.crd import (
    build_crd,
    crd_file_name,
    generate_all,
    iter_rules,
    main,
    structural_problems,
    unbounded_under_rules,
)

from .schema_sim import problems

REPO = Path(__file__).resolve().parents[3]
CRD_DIR = REPO / "charts" / "nvcre" / "crds"
MALFORMED = sorted((REPO / "tests" / "data" / "malformed").glob("*.yaml"))
SEEDS = sorted((REPO / "examples" / "seeds").glob("*.yaml"))


def _schema(kind_name: str) -> dict:
    return build_crd(KINDS[kind_name])["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def test_committed_crds_match_the_models():
    for name, text in generate_all().items():
        path = CRD_DIR / name
        assert path.exists(), f"{path} missing: run python -m nvcre.api.crd --write charts/nvcre/crds"
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run python -m nvcre.api.crd --write {CRD_DIR}"


def test_check_mode_reports_stale_files(tmp_path: Path, capsys):
    assert main(["--write", str(tmp_path)]) == 0
    assert main(["--check", str(tmp_path)]) == 0
    victim = tmp_path / crd_file_name(KINDS["Job"])
    victim.write_text(victim.read_text().replace("maxLength: 2048", "maxLength: 9"))
    assert main(["--check", str(tmp_path)]) == 1
    assert "jobs.nvcre.nvidia.com.yaml: differs" in capsys.readouterr().out


@pytest.mark.parametrize("kind_name", list(KINDS))
def test_schema_is_structural(kind_name: str):
    assert structural_problems(_schema(kind_name)) == []


@pytest.mark.parametrize("kind_name", list(KINDS))
def test_everything_a_cel_rule_walks_is_bounded(kind_name: str):
    assert unbounded_under_rules(_schema(kind_name)) == []


@pytest.mark.parametrize("kind_name", list(KINDS))
def test_every_cel_rule_parses(kind_name: str):
    rules = iter_rules(_schema(kind_name))
    for where, rule in rules:
        cel.compile(rule["rule"])  # raises on a syntax error
        assert rule["message"], where
        if "fieldPath" in rule:
            assert rule["fieldPath"].startswith("."), where


def test_structural_check_catches_bad_schemas():
    assert structural_problems({"type": "object", "properties": {"a": {}}})  # untyped node
    assert structural_problems({"type": "object", "properties": {"a": {"$ref": "#/x", "type": "string"}}})
    assert structural_problems({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}})
    assert structural_problems({"type": "object", "anyOf": [{"type": "string"}]})
    assert structural_problems({"type": "array"})
    assert unbounded_under_rules({"type": "object", "x-kubernetes-validations": [{"rule": "true", "message": "m"}],
                                  "properties": {"a": {"type": "array", "items": {"type": "string", "maxLength": 1}}}})


def test_crd_facts_for_every_kind():
    for kind in KINDS.values():
        crd = build_crd(kind)
        spec = crd["spec"]
        assert crd["metadata"]["name"] == f"{kind.crd.plural}.nvcre.nvidia.com"
        assert spec["group"] == "nvcre.nvidia.com"
        assert spec["names"]["categories"] == ["nvcre"]
        assert spec["names"]["shortNames"]
        assert spec["scope"] == ("Cluster" if kind.__name__ == "LogProfile" else "Namespaced")
        version = spec["versions"][0]
        assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
        assert ("subresources" in version) == (kind.__name__ not in ("LogProfile", "ReportExportPolicy"))
        columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
        assert columns["Age"]["jsonPath"] == ".metadata.creationTimestamp"


def test_short_names_are_unique():
    names = [n for kind in KINDS.values() for n in kind.crd.short_names]
    assert len(names) == len(set(names))


def _resolve(schema: dict, json_path: str) -> dict | None:
    node = schema
    for part in json_path.strip(".").split("."):
        if node.get("type") == "array":
            node = node["items"]
        props = node.get("properties", {})
        if part not in props:
            return None
        node = props[part]
    return node


@pytest.mark.parametrize("kind_name", list(KINDS))
def test_printer_columns_read_fields_that_exist(kind_name: str):
    kind = KINDS[kind_name]
    schema = _schema(kind_name)
    for column in kind.crd.columns:
        if column.json_path.startswith(".metadata."):
            continue
        node = _resolve(schema, column.json_path)
        assert node is not None, f"{kind_name} column {column.name}: {column.json_path} is not in the schema"
        want = {"integer": "integer", "number": "number", "string": "string", "boolean": "boolean"}[column.type]
        assert node.get("type") == want, f"{kind_name} column {column.name} is {node.get('type')}, declared {want}"


def test_certification_columns():
    columns = {c.name: c.json_path for c in KINDS["Certification"].crd.columns}
    assert columns["Phase"] == ".status.phase"
    assert columns["Passed"] == ".status.summary.categoriesPassed"
    assert columns["Failed-Nodes"] == ".status.summary.failedNodeCount"


def _manifest(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", SEEDS, ids=lambda p: p.name)
def test_server_model_accepts_the_seeds(path: Path):
    obj = _manifest(path)
    assert problems(_schema(obj["kind"]), obj) == []


def _server_checks(path: Path) -> bool:
    """The API server can refuse it, and our model of it can evaluate the rule involved
    (requests-vs-limits uses the Kubernetes-only quantity() CEL library: the Python
    validator and the integration test against a real API server cover those)."""
    text = path.read_text(encoding="utf-8")
    return "# server: no" not in text and "requests-above-limits" not in path.stem


@pytest.mark.parametrize("path", [p for p in MALFORMED if _server_checks(p)], ids=lambda p: p.stem)
def test_server_model_refuses_malformed_at_the_expected_field(path: Path):
    """What the API server would answer: a refusal naming the field the header expects."""
    expected = re.search(r"^# expect: (\S+)", path.read_text(encoding="utf-8"), re.M).group(1)
    obj = _manifest(path)
    found = problems(_schema(obj["kind"]), obj)
    fields = [f for f, _ in found]
    assert any(f == expected or f.startswith(expected + ".") or f.startswith(expected + "[") for f in fields), (
        f"{path.name}: model of the API server names {found}, expected {expected}"
    )
