"""Node-health CEL detectors over whole Node dicts (real fixture Nodes and edited copies)."""

from __future__ import annotations

import copy

import pytest
import yaml

from nvcre.errors import ManifestError
from nvcre.health.detectors import (
    CORDON_EXPRESSION,
    NodeHealthMonitor,
    check_detector_expression,
    default_detectors,
    detectors_for_job,
    evaluate_node_health,
    failed_node_entries,
)


@pytest.fixture()
def nodes(fixtures_dir):
    docs = yaml.safe_load_all((fixtures_dir / "nodes" / "nvcre-uat-aws-h100-p5-nodes.yaml").read_text())
    return [d for d in docs if d and d.get("kind") == "Node"]


@pytest.fixture()
def cordoned(fixtures_dir):
    docs = yaml.safe_load_all((fixtures_dir / "nodes" / "nvcre-uat-aws-h100-cordoned-node.yaml").read_text())
    return [d for d in docs if d and d.get("kind") == "Node"][0]


def _names(findings):
    return sorted((f["node"], f["detector"]) for f in findings)


def test_healthy_fixture_nodes_raise_nothing(nodes, fixtures_dir):
    assert evaluate_node_health(nodes) == []
    for name in ("nvcre-uat-gcp-gb200-a4x-nodes.yaml", "nvcre-uat-togetherai-h100-kubevirt-nodes.yaml",
                 "nvcre-uat-aws-gb300-nodes.yaml"):
        more = [d for d in yaml.safe_load_all((fixtures_dir / "nodes" / name).read_text()) if d and d.get("kind") == "Node"]
        assert evaluate_node_health(more) == [], name


def test_cordon_is_the_reference_default_and_opt_in_drops_it(cordoned):
    findings = evaluate_node_health([cordoned])
    assert _names(findings) == [("aws-h100-cordoned-node-01", "cordoned")]
    opted_in = NodeHealthMonitor(default_detectors(include_unschedulable=True))
    assert opted_in.evaluate([cordoned]) == []
    assert "cordoned" in [d.name for d in default_detectors()]


def test_gpu_fallen_off_the_bus_is_detected_with_detail(nodes):
    node = copy.deepcopy(nodes[0])
    node["metadata"]["name"] = "gpu-node-12"
    node["status"]["allocatable"]["nvidia.com/gpu"] = "7"
    node["status"]["conditions"].append(
        {"type": "GpuXidError", "status": "True", "reason": "Xid79", "message": "GPU has fallen off the bus"}
    )
    findings = evaluate_node_health([nodes[1], node])
    assert _names(findings) == [("gpu-node-12", "gpu-count-drop"), ("gpu-node-12", "gpu-health-condition")]
    messages = {f["detector"]: f["message"] for f in findings}
    assert "GpuXidError=True: GPU has fallen off the bus" in messages["gpu-health-condition"]
    assert "allocatable 7, capacity 8" in messages["gpu-count-drop"]
    (entry,) = failed_node_entries(findings)
    assert entry["name"] == "gpu-node-12" and entry["reason"] == "HardwareFailureDetected"
    assert "gpu-count-drop" in entry["message"] and "gpu-health-condition" in entry["message"]


@pytest.mark.parametrize(
    "condition,fires",
    [
        ({"type": "NVSentinelGPUHealthy", "status": "False"}, True),
        ({"type": "NVSentinelGPUHealthy", "status": "True"}, False),
        ({"type": "GpuXidError", "status": "False"}, False),
        ({"type": "gpu-ready", "status": "True"}, False),
        ({"type": "MemoryPressure", "status": "True"}, False),
    ],
)
def test_gpu_health_condition_polarity(nodes, condition, fires):
    node = copy.deepcopy(nodes[0])
    node["status"]["conditions"].append(condition)
    assert bool(evaluate_node_health([node])) is fires


def test_not_ready_and_capacity_below_label(nodes):
    node = copy.deepcopy(nodes[0])
    node["status"]["conditions"][0]["status"] = "Unknown"
    node["status"]["capacity"]["nvidia.com/gpu"] = "6"
    node["status"]["allocatable"]["nvidia.com/gpu"] = "6"
    findings = evaluate_node_health([node])
    assert _names(findings) == [("aws-h100-node-01", "gpu-count-drop"), ("aws-h100-node-01", "not-ready")]
    assert "Ready=Unknown (KubeletReady)" in next(f["message"] for f in findings if f["detector"] == "not-ready")


def test_user_detectors_see_the_whole_node(nodes):
    node = copy.deepcopy(nodes[0])
    node["spec"]["taints"] = [{"key": "gpu.health/error", "effect": "NoSchedule"}]
    node["metadata"]["annotations"]["example.com/health"] = "bad"
    detectors = [
        {"name": "taint", "expression": "node.spec.taints.exists(t, t.key == 'gpu.health/error' && t.effect == 'NoSchedule')",
         "message": "health taint present"},
        {"name": "annotation", "expression": "node.metadata.annotations['example.com/health'] == 'bad'"},
        {"name": "labels-iterated", "expression": "node.metadata.labels.exists(k, k.startsWith('nvidia.com/gpu.fam'))"},
        {"name": "provider", "expression": "node.spec.providerID.startsWith('aws://')"},
    ]
    findings = evaluate_node_health([node, nodes[1]], detectors)
    assert _names(findings) == [
        ("aws-h100-node-01", "annotation"),
        ("aws-h100-node-01", "labels-iterated"),
        ("aws-h100-node-01", "provider"),
        ("aws-h100-node-01", "taint"),
        ("aws-h100-node-02", "labels-iterated"),
        ("aws-h100-node-02", "provider"),
    ]
    taint = next(f for f in findings if f["detector"] == "taint")
    assert taint["message"] == "health taint present"
    annotation = next(f for f in findings if f["detector"] == "annotation")
    assert annotation["message"] == "CEL expression evaluated to true for node aws-h100-node-01"


def test_missing_fields_get_defaults_and_errors_are_skipped():
    bare = {"metadata": {"name": "bare"}}
    monitor = NodeHealthMonitor(default_detectors() + [{"name": "odd", "expression": "node.spec.nothing == 1"}])
    assert monitor.evaluate([bare]) == []
    assert [e["detector"] for e in monitor.errors] == ["odd"]
    non_bool = NodeHealthMonitor([{"name": "num", "expression": "1 + 1"}])
    assert non_bool.evaluate([bare]) == [] and non_bool.errors


def test_bad_user_detector_is_a_manifest_error():
    with pytest.raises(ManifestError) as err:
        NodeHealthMonitor([{"name": "x", "expression": "node.spec.unschedulable =="}])
    assert "detectors[0].expression" in str(err.value) and "'x'" in str(err.value)
    with pytest.raises(ManifestError):
        NodeHealthMonitor([{"name": "", "expression": "true"}])
    with pytest.raises(ManifestError):
        NodeHealthMonitor(["not a mapping"])


def test_verdicts_cached_per_resource_version(nodes):
    node = copy.deepcopy(nodes[0])
    node["metadata"].update(uid="u1", resourceVersion="1")
    monitor = NodeHealthMonitor()
    assert monitor.evaluate([node]) == []
    node["spec"]["unschedulable"] = True  # same resourceVersion: the cached verdict stands
    assert monitor.evaluate([node]) == []
    node["metadata"]["resourceVersion"] = "2"
    assert _names(monitor.evaluate([node])) == [("aws-h100-node-01", "cordoned")]


def test_input_nodes_are_not_mutated(nodes):
    before = copy.deepcopy(nodes)
    evaluate_node_health(nodes)
    assert nodes == before


def test_detectors_for_job():
    names = [d.name for d in detectors_for_job(CORDON_EXPRESSION)]
    assert names == [d.name for d in default_detectors()]
    custom = detectors_for_job("node.metadata.labels['x'] == 'y'", [{"name": "u", "expression": "false"}],
                               include_unschedulable=True)
    assert [d.name for d in custom] == ["not-ready", "gpu-health-condition", "gpu-count-drop", "nodeHealthMonitor", "u"]


def test_check_detector_expression():
    assert check_detector_expression(CORDON_EXPRESSION) is None
    assert check_detector_expression("node.metadata.labels['x'] == 'y'") is None  # needs a real node to decide
    assert "compile" in check_detector_expression("node.(")
    assert "bool" in check_detector_expression("size(node.status.conditions)")
    assert "empty" in check_detector_expression(" ")
    assert "2048" in check_detector_expression("true || " * 400 + "true")


# --- compiled against the declared variables (issue 11) ---------------------------------

import pytest as _pytest  # noqa: E402

from nvcre.health.detectors import (  # noqa: E402
    NodeHealthMonitor as _Monitor,
    check_detector_expression as _check,
    describe_errors as _describe,
    undeclared_reference as _undeclared,
)


@_pytest.mark.parametrize(
    "expression, name, where",
    [
        ("nod.spec.unschedulable == true", "nod", "1:1"),
        ("node.spec.unschedulable == true || nodes.metadata.labels['x'] == 'y'", "nodes", "1:36"),
        ("node.status.conditions.exists(c, c.type == 'Ready' && status == 'False')", "status", "1:55"),
        ("node.spec.taints.exists(t,\n  t.key == 'a') && taint.effect == 'NoSchedule'", "taint", "2:20"),
    ],
)
def test_an_undeclared_identifier_is_refused_with_the_checkers_message(expression, name, where):
    expected = f"ERROR: <input>:{where}: undeclared reference to '{name}' (in container '')"
    assert _undeclared(expression) == expected
    assert _check(expression) == f"CEL expression does not compile: {expected}"
    with _pytest.raises(ManifestError) as caught:
        _Monitor([{"name": "typo", "expression": expression}])
    assert expected in caught.value.message and caught.value.field == "detectors[0].expression"


@_pytest.mark.parametrize(
    "expression",
    [
        "node.spec.unschedulable == true",
        "node.status.conditions.exists(c, c.type == 'Ready' && c.status == 'False')",
        "node.metadata.labels.all(k, v, v != 'nod')",
        "'nod' in node.metadata.labels",
        "node.spec.taints.map(t, t.key).exists(k, k == 'x')",
    ],
)
def test_declared_and_comprehension_variables_are_accepted(expression):
    assert _undeclared(expression) is None and _check(expression) is None


def test_the_job_manifest_refuses_an_undeclared_identifier_at_admission():
    from nvcre.api.load import parse_object

    job = {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"workload": {"native": {}}, "nodeHealthMonitor": {"cel": {"expression": "nod.spec.unschedulable == true"}}},
    }
    with _pytest.raises(ManifestError) as caught:
        parse_object(job)
    assert caught.value.field == "spec.nodeHealthMonitor.cel.expression"
    assert "undeclared reference to 'nod'" in caught.value.message
    job["spec"]["nodeHealthMonitor"]["cel"]["expression"] = "node.spec.unschedulable == true"
    assert parse_object(job).spec.node_health_monitor.cel.expression == "node.spec.unschedulable == true"


def test_evaluation_errors_are_collected_and_described_even_for_cached_nodes():
    monitor = _Monitor([{"name": "nic", "expression": "node.status.allocatable['example.com/nic'] == '0'"}])
    node = {"metadata": {"name": "n1", "uid": "u1", "resourceVersion": "7"}, "status": {"allocatable": {}}}
    for _ in range(2):  # the second pass hits the verdict cache and still reports the error
        assert monitor.evaluate([node]) == []
        assert [e["node"] for e in monitor.errors] == ["n1"]
    line = _describe(monitor.errors)
    assert line == "detector 'nic' could not be evaluated on 1 node(s) (n1): no such key: 'example.com/nic'"
    assert _describe([]) is None
