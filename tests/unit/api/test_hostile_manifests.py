"""The hostile-manifest suite (tests/data/hostile, all five kinds): the CLI refuses every
one with the field named. The same files go to the real API server in
tests/integration/test_hostile_manifests.py; the generator is tests/data/hostile/generate.py."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from nvcre.api.load import load_file
from nvcre.errors import ManifestError, UserError

HOSTILE = Path(__file__).resolve().parents[2] / "data" / "hostile"
FILES = sorted(HOSTILE.glob("*.yaml"))
_FIELD = re.compile(r"^#\s*expect:\s*(\S+)", re.MULTILINE)
POLICY_ONLY = "(admission-policy)"  # escalations: valid objects that need a verb of the chart's policy
REFUSED = [p for p in FILES if _FIELD.search(p.read_text()).group(1) != POLICY_ONLY]
ESCALATIONS = [p for p in FILES if _FIELD.search(p.read_text()).group(1) == POLICY_ONLY]


def _generator():
    spec = importlib.util.spec_from_file_location("hostile_generate", HOSTILE / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_suite_is_large_covers_every_kind_and_is_generated_fresh():
    assert len(FILES) >= 120
    kinds = {re.search(r"^kind: (\w+)", p.read_text(), re.MULTILINE).group(1) for p in FILES}
    assert kinds == {"Certification", "WorkloadRun", "Job", "Workflow", "LogProfile"}
    rendered = _generator().render()
    assert sorted(rendered) == [p.name for p in FILES], "run: python tests/data/hostile/generate.py"
    for path in FILES:
        assert path.read_text() == rendered[path.name], f"{path.name} is stale; rerun the generator"


@pytest.mark.parametrize("base", sorted(_generator().BASES))
def test_each_base_object_is_valid(base):
    from nvcre.api.load import parse_object

    parse_object(_generator().BASES[base])  # so each hostile file breaks exactly one thing


@pytest.mark.parametrize("path", ESCALATIONS, ids=[p.name for p in ESCALATIONS])
def test_escalations_are_valid_objects_so_the_admission_policy_decides(path):
    """Someone granted the verb may ask for these; the CLI must not refuse them, and the
    chart's policy must (tests/unit/chart/test_hostile_escalations.py)."""
    assert re.search(r"^# policy: (privileged|escalate)$", path.read_text(), re.MULTILINE), path.name
    load_file(path)


def test_the_suite_holds_every_escalation_class():
    assert len(ESCALATIONS) >= 15
    assert len(REFUSED) >= 120


@pytest.mark.parametrize("path", REFUSED, ids=[p.name for p in REFUSED])
def test_cli_refuses_hostile_manifest_naming_the_field(path):
    field = _FIELD.search(path.read_text()).group(1)
    with pytest.raises(UserError) as err:
        load_file(path)
    if field == "(document)":
        assert "duplicate key" in str(err.value)
        return
    assert isinstance(err.value, ManifestError), str(err.value)
    got = err.value.field
    assert got == field or got.startswith((field + ".", field + "[")), f"{path.name}: named {got!r}: {err.value}"
