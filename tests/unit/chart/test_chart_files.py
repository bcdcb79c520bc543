"""The chart's own files, checked without helm (tests/integration/test_chart.py renders it)."""

from __future__ import annotations

import yaml

NODE_WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}


def test_chart_metadata(repo_root):
    chart = yaml.safe_load((repo_root / "charts/nvcre/Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2" and chart["name"] == "nvcre"
    from nvcre import __version__

    assert chart["appVersion"] == __version__  # the image tag defaults to it


def test_values_have_the_documented_switches(repo_root):
    values = yaml.safe_load((repo_root / "charts/nvcre/values.yaml").read_text())
    assert values["rbac"]["scope"] == "namespaced"  # least privilege by default (issue 13)
    assert values["rbac"]["runNamespaces"] == []
    assert values["serviceMonitor"]["enabled"] is False
    assert values["metrics"]["enabled"] is True and values["metrics"]["service"]["port"]
    assert values["image"]["repository"]


def test_rbac_template_never_grants_node_writes(repo_root):
    """Every rule naming nodes reads only (the rendered RBAC is also checked by can-i)."""
    text = (repo_root / "charts/nvcre/templates/rbac.yaml").read_text()
    for doc in text.split("\n---"):
        body = "\n".join(line for line in doc.splitlines() if "{{" not in line)
        parsed = yaml.safe_load(body) or {}
        for rule in parsed.get("rules") or []:
            if "nodes" in rule.get("resources", []) or "*" in rule.get("resources", []):
                assert not NODE_WRITE_VERBS & set(rule["verbs"]), rule


def test_the_manager_role_watches_rolebindings_and_never_writes_rbac(repo_root):
    """The controller watches RoleBindings (a Workflow waiting for namespace permissions is
    woken by one); no rule of any role lets it write an RBAC object."""
    text = (repo_root / "charts/nvcre/templates/rbac.yaml").read_text()
    rules = []
    for doc in text.split("\n---"):
        body = "\n".join(line for line in doc.splitlines() if "{{" not in line)
        parsed = yaml.safe_load(body) or {}
        rules += [(parsed.get("metadata", {}).get("name"), rule) for rule in parsed.get("rules") or []]
    rbac = [(name, rule) for name, rule in rules if "rbac.authorization.k8s.io" in rule.get("apiGroups", [])]
    assert any("rolebindings" in rule["resources"] and {"list", "watch"} <= set(rule["verbs"]) for _, rule in rbac)
    for _, rule in rbac:
        assert set(rule["verbs"]) <= {"get", "list", "watch"}, rule


def test_crds_are_the_generated_ones(repo_root):
    names = sorted(p.name for p in (repo_root / "charts/nvcre/crds").glob("*.yaml"))
    assert "certifications.nvcre.nvidia.com.yaml" in names
    assert "workloadruns.nvcre.nvidia.com.yaml" in names


def test_dockerfile_runs_nvcrectl(repo_root):
    text = (repo_root / "Dockerfile").read_text()
    assert text.startswith("# ") and "FROM python:3.11-slim" in text
    assert 'ENTRYPOINT ["nvcrectl"]' in text and 'CMD ["controller", "run"]' in text


def test_logprofile_copies_match_their_source(repo_root):
    """The chart ships the measurement package's default LogProfiles, byte for byte.

    Refresh after changing a profile: cp src/nvcre/measure/profiles/*.yaml charts/nvcre/files/logprofiles/
    """
    source = {p.name: p.read_bytes() for p in (repo_root / "src/nvcre/measure/profiles").glob("*.yaml")}
    copies = {p.name: p.read_bytes() for p in (repo_root / "charts/nvcre/files/logprofiles").glob("*.yaml")}
    assert source, "no default LogProfiles in src/nvcre/measure/profiles"
    assert copies == source
    for name, text in copies.items():
        doc = yaml.safe_load(text)
        assert doc["kind"] == "LogProfile" and doc["metadata"]["name"] == name.removesuffix(".yaml")
