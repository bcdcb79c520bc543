"""The escalation class of the hostile-manifest suite (tests/data/hostile, ``# policy:``
header) through the chart's least-privilege ValidatingAdmissionPolicy: each file is refused
for a tenant, needs exactly the verb its header names, and is admitted with that verb."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from admission_policy import admitted, findings

HOSTILE = Path(__file__).resolve().parents[2] / "data" / "hostile"
_VERB = re.compile(r"^# policy: (\S+)$", re.MULTILINE)
FILES = sorted(p for p in HOSTILE.glob("*.yaml") if _VERB.search(p.read_text()))
RESOURCE = {"Job": "jobs", "Workflow": "workflows", "WorkloadRun": "workloadruns", "Certification": "certifications"}
OTHER = {"privileged": "escalate", "escalate": "privileged"}


def test_every_escalation_class_is_in_the_suite():
    names = {p.stem for p in FILES}
    for fragment in ("privileged-container", "host-pid", "host-network", "host-path", "secret-object", "secret-env",
                     "secret-volume", "rbac", "cluster-scoped", "raw-trainjob", "bound-to-run", "apparmor", "selinux",
                     "sysctl", "privileged-init"):
        assert any(fragment in n for n in names), fragment


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_a_tenant_is_refused_and_needs_the_named_verb(path):
    text = path.read_text()
    verb = _VERB.search(text).group(1)
    obj = yaml.safe_load(text)
    obj["metadata"]["namespace"] = "team-a"
    resource = RESOURCE[obj["kind"]]
    found = findings(resource, obj)
    assert found[verb], f"{path.name}: no {verb} finding: {found}"
    assert not admitted(resource, obj), f"{path.name}: a tenant with no grant was admitted"
    assert not admitted(resource, obj, grants={OTHER[verb]}), f"{path.name}: the other verb was enough"
    assert admitted(resource, obj, grants={verb}), f"{path.name}: the named verb {verb} was not enough: {found}"
