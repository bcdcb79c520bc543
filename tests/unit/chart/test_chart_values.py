"""The chart's values: the schema accepts the defaults and refuses bad values, the README
is the one hack/chart-readme.py generates, and one version runs through the project."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
import yaml


@pytest.fixture(scope="module")
def schema(repo_root):
    return json.loads((repo_root / "charts/nvcre/values.schema.json").read_text())


@pytest.fixture
def values(repo_root):
    return yaml.safe_load((repo_root / "charts/nvcre/values.yaml").read_text())


def test_defaults_pass_the_schema(schema, values):
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.validate(values, schema)


@pytest.mark.parametrize(
    "path,bad",
    [
        ("controller.logLevel", "verbose"),
        ("controller.logFormat", "xml"),
        ("controller.replicas", -1),
        ("controller.podLabels", {"team": 3}),
        ("controller.strategy", {"type": "BlueGreen"}),
        ("controller.topologySpreadConstraints", [{"maxSkew": 1}]),
        ("controller.resourcez", {}),
        ("image.digest", "sha256:short"),
        ("image.pullPolicy", "Sometimes"),
        ("metrics.port", 70000),
        ("metrics.nodeDetailLimit", -5),
        ("metrics.referenceCompatible", "yes"),
        ("serviceMonitorr", {"enabled": True}),
        ("serviceMonitor.interval", "thirty seconds"),
        ("rbac.runNamespaces", ["Not_A_Namespace"]),
    ],
)
def test_schema_refuses_bad_values(schema, values, path, bad):
    node = values
    *parents, leaf = path.split(".")
    for key in parents:
        node = node[key]
    node[leaf] = bad
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(values, schema)


def test_top_level_is_closed_but_global_and_other_pod_labels_pass(schema, values):
    """A misspelled top-level key fails; ``global`` (what an umbrella chart passes to every
    subchart) and a pod label that is not a selector label pass."""
    assert schema["additionalProperties"] is False
    values["global"] = {"imageRegistry": "mirror.example.com"}
    values["controller"]["podLabels"] = {"team": "gpu-infra", "app.kubernetes.io/part-of": "platform"}
    values["metrics"]["referenceCompatible"] = True
    jsonschema.validate(values, schema)


def test_every_value_is_in_the_schema(schema, values):
    """A value the schema does not know would pass unchecked (sections we own are closed)."""

    def walk(vals, sch, path):
        props = sch.get("properties") or {}
        for key, val in vals.items():
            assert key in props, f"{path}{key} is not in values.schema.json"
            sub = props[key]
            if "$ref" in sub:
                continue
            if isinstance(val, dict) and sub.get("properties"):
                walk(val, sub, f"{path}{key}.")

    walk(values, schema, "")


def test_readme_is_generated_from_values(repo_root):
    result = subprocess.run([sys.executable, str(repo_root / "hack/chart-readme.py"), "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    readme = (repo_root / "charts/nvcre/README.md").read_text()
    assert "| `controller.logFormat` | string | `\"text\"` |" in readme


def test_readme_generator_reads_the_comment_above_each_value(repo_root):
    import importlib.util

    spec = importlib.util.spec_from_file_location("chart_readme", repo_root / "hack/chart-readme.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    docs = mod.value_docs("a:\n  # the b\n  b: 1\n\n  c: 2\n# top d\nd: []\n")
    assert docs == {"a.b": "the b", "d": "top d"}


def test_one_version(repo_root):
    """nvcre/__init__.py is the one version; the chart follows it."""
    from importlib.metadata import version

    from nvcre import __version__

    chart = yaml.safe_load((repo_root / "charts/nvcre/Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == __version__
    assert version("nvcre") == __version__
    pyproject = (repo_root / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and 'version = { attr = "nvcre.__version__" }' in pyproject
