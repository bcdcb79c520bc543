"""Load the chart's least-privilege ValidatingAdmissionPolicy without helm and evaluate its
CEL variables with the same CEL engine family the API server uses (cel-rust here, cel-go
there), so every escalation class is checked in the unit suite; tests/e2e runs the policy
in the real API server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cel
import yaml

CHART = Path(__file__).resolve().parents[3] / "charts" / "nvcre"
CONTROLLER = "system:serviceaccount:nvcre:nvcre"


def load_policy() -> dict:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    text = (CHART / "templates" / "admission-policy.yaml").read_text()
    categories = json.dumps(json.dumps(values["admissionPolicy"]["hostAccessCategories"]))
    text = text.replace('{{ .Values.admissionPolicy.hostAccessCategories | toJson | quote }}', categories)
    text = text.replace("{{ .Release.Namespace }}", "nvcre").replace('{{ include "nvcre.serviceAccountName" . }}', "nvcre")
    text = text.replace('{{ include "nvcre.fullname" . }}', "nvcre")
    lines = [line for line in text.splitlines() if not re.match(r"\s*\{\{-", line)]
    docs = [d for d in yaml.safe_load_all("\n".join(lines)) if d]
    return next(d for d in docs if d["kind"] == "ValidatingAdmissionPolicy")


POLICY = load_policy()
PROGRAMS = [(var["name"], cel.compile(var["expression"])) for var in POLICY["spec"]["variables"]]


def findings(resource: str, obj: dict, *, user: str = "alice", namespace: str = "team-a") -> dict[str, object]:
    """The policy's variables for one request (``trusted`` and both finding lists)."""
    request = {"resource": {"group": "nvcre.nvidia.com", "resource": resource}, "namespace": namespace,
               "userInfo": {"username": user}, "operation": "CREATE"}
    variables: dict[str, object] = {}
    for name, program in PROGRAMS:
        variables[name] = program.execute({"request": request, "object": obj, "variables": variables})
    return {"trusted": variables["trusted"], "privileged": list(variables["privilegedFindings"]),
            "escalate": list(variables["escalateFindings"])}


def admitted(resource: str, obj: dict, *, grants: set[str] = frozenset(), **kw) -> bool:
    """What the two validations decide, with ``grants`` the verbs the authorizer allows."""
    f = findings(resource, obj, **kw)
    return bool(f["trusted"]) or all(not f[verb] or verb in grants for verb in ("privileged", "escalate"))
