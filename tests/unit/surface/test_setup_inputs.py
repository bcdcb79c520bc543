"""What `setup init` and `setup reset` check before touching a cluster."""

from __future__ import annotations

import pytest

from nvcre.cli.setup import (
    INIT_PHASES,
    RESET_PHASES,
    check_set,
    check_set_json,
    check_values_files,
    image_sets,
    kept_values,
    parse_phases,
    pull_secret_sets,
)
from nvcre.errors import UserError


def test_phases():
    assert parse_phases(["deps"], INIT_PHASES, "setup init") == {"deps"}
    assert parse_phases(["cr,helm"], RESET_PHASES, "setup reset") == {"cr", "helm"}
    with pytest.raises(UserError, match="unknown phase 'crds' for setup init; accepted: deps, helm"):
        parse_phases(["crds"], INIT_PHASES, "setup init")


def test_set_syntax():
    check_set(["a.b=1", "x=1,y=2", "rbac.runNamespaces={a,b}", "list[0].name=x", "k=v=w"])
    for bad in ("novalue", "=1", "a b=1", "a=1,broken"):
        with pytest.raises(UserError, match="expected KEY=VALUE"):
            check_set([bad])
    check_set_json(['controller.tolerations=[{"key":"x"}]'])
    with pytest.raises(UserError, match="not JSON"):
        check_set_json(["a={x"])


def test_values_files(tmp_path):
    good = tmp_path / "v.yaml"
    good.write_text("rbac:\n  scope: namespaced\n")
    assert check_values_files([str(good)], False) == [str(good)]
    with pytest.raises(UserError, match="no such file"):
        check_values_files([str(tmp_path / "missing.yaml")], False)
    with pytest.raises(UserError, match="URLs are not accepted"):
        check_values_files(["https://example.com/v.yaml"], False)
    with pytest.raises(UserError, match="needs --auto-approve"):
        check_values_files(["-"], False)
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n")
    with pytest.raises(UserError, match="expected a mapping"):
        check_values_files([str(listy)], False)


def test_image_flag():
    assert image_sets("reg.example.com/nvcre:v1", [], [], []) == ["image.repository=reg.example.com/nvcre", "image.tag=v1"]
    digest = "sha256:" + "a" * 64
    assert image_sets(f"reg:5000/nvcre@{digest}", [], [], []) == ["image.repository=reg:5000/nvcre", f"image.digest={digest}"]
    with pytest.raises(UserError, match="cannot be combined"):
        image_sets("r:t", ["image.tag=x"], [], [])


def test_kept_values():
    previous = {"image": {"tag": "old"}, "controller": {"replicas": 0}, "rbac": {"scope": "namespaced", "create": True}}
    assert kept_values(previous, reset=False) == {"controller": {"replicas": 0}, "rbac": {"scope": "namespaced", "create": True}}
    assert kept_values(previous, reset=True) == {"rbac": {"scope": "namespaced"}}
    assert kept_values({}, reset=True) == {}


def test_image_pull_secrets_become_the_charts_list(tmp_path):
    assert pull_secret_sets([], [], [], []) == []
    assert pull_secret_sets(["regcred", "mirror.pull", "regcred"], [], [], []) == [
        'imagePullSecrets=[{"name":"regcred"},{"name":"mirror.pull"}]']
    for bad in ("Reg_Cred", "-x", "a" * 254, "a/b", ""):
        with pytest.raises(UserError, match="--image-pull-secret .*DNS subdomain"):
            pull_secret_sets([bad], [], [], [])
    with pytest.raises(UserError, match="cannot be combined with values that set imagePullSecrets"):
        pull_secret_sets(["regcred"], ["imagePullSecrets[0].name=x"], [], [])
    values = tmp_path / "v.yaml"
    values.write_text("imagePullSecrets:\n- name: other\n")
    with pytest.raises(UserError, match="v.yaml: imagePullSecrets"):
        pull_secret_sets(["regcred"], [], [], [str(values)])


def test_reset_keeps_the_report_export_crds_as_the_reference_does():
    """The reference's reset "retains ReportExport resources": nvcre keeps both CRDs of that
    feature (deleting a CRD deletes its objects), deletes its other CRDs, and never a foreign one."""
    from pathlib import Path

    import yaml

    from nvcre.cli.setup import crds_to_delete

    chart = Path(__file__).resolve().parents[3] / "charts" / "nvcre" / "crds"
    crds = {}
    for f in chart.glob("*.yaml"):
        doc = yaml.safe_load(f.read_text())
        crds[doc["metadata"]["name"]] = doc
    crds["jobsets.jobset.x-k8s.io"] = {"spec": {"group": "jobset.x-k8s.io"}}
    deleted, kept = crds_to_delete(crds)
    assert kept == ["reportexportpolicies.nvcre.nvidia.com", "reportexports.nvcre.nvidia.com"]
    assert "certifications.nvcre.nvidia.com" in deleted and "workloadruns.nvcre.nvidia.com" in deleted
    assert "jobsets.jobset.x-k8s.io" not in deleted
    assert len(deleted) + len(kept) == len(crds) - 1
