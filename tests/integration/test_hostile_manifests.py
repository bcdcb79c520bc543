"""The hostile-manifest suite against the real API server: every file of tests/data/hostile
not marked ``# server: no`` is refused at admission (schema, CEL rules, RE2 through CEL's
``matches``) with the field named; the CLI side is tests/unit/api/test_hostile_manifests.py.

One kubectl server-side dry-run per file; failures are collected and reported together.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "charts" / "nvcre" / "crds"
HOSTILE = REPO / "tests" / "data" / "hostile"
_FIELD = re.compile(r"^#\s*expect:\s*(\S+)", re.MULTILINE)
_SERVER_ACCEPTS = re.compile(r"^#\s*server:\s*no\b", re.MULTILINE)
# The API server reports a CEL evaluation error (RE2 via matches()) at the object holding
# the rule; "(kubectl)": kubectl itself refuses the name before sending anything.
_SERVER_FIELD = re.compile(r"^#\s*server-field:\s*(\S+)", re.MULTILINE)


def _names_field(message: str, field: str) -> bool:
    path = re.escape(field) + r"(?:[.\[][^\s:\"]*)?"
    return re.search(rf"{path}: |unknown field \"{path}\"", message) is not None


@pytest.fixture(scope="module")
def crds(kubectl):
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_DIR))
    for path in sorted(CRD_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                kubectl("wait", "--for=condition=Established", f"crd/{doc['metadata']['name']}", "--timeout=60s")


def test_hostile_manifests_are_refused_at_admission_naming_the_field(crds, kubectl, namespace):
    files = sorted(HOSTILE.glob("*.yaml"))
    assert len(files) >= 120
    problems, refused = [], 0
    for path in files:
        text = path.read_text()
        field = _FIELD.search(text).group(1)
        override = _SERVER_FIELD.search(text)
        field = override.group(1) if override else field
        if _SERVER_ACCEPTS.search(text):
            continue  # the CLI and the controller refuse these (CEL cost, duplicates); see the unit suite
        result = kubectl("apply", "--dry-run=server", "-n", namespace, "-f", "-", check=False, input=text)
        if result.returncode == 0:
            problems.append(f"{path.name}: accepted by the API server")
        elif field == "(kubectl)":
            refused += 1
        elif not _names_field(result.stderr, field):
            problems.append(f"{path.name}: refusal does not name {field}: {result.stderr.strip()[:300]}")
        else:
            refused += 1
    assert not problems, f"{len(problems)} of {len(files)} not refused as expected:\n" + "\n".join(problems)
    assert refused >= 100
