"""The shape bounds on user CEL (thresholds, detectors): the Python check the CLI runs and
the CRD rules the API server runs are the same rules, real expressions pass, the
pathological class is refused. The real API server: tests/integration/test_hostile_manifests.py."""

from __future__ import annotations

import re

import cel
import pytest

from nvcre.api import KINDS
from nvcre.api.crd import build_crd, iter_rules
from nvcre.api.rules import DETECTOR_SHAPE, THRESHOLD_SHAPE, cel_shape_rules, check_cel_shape
from nvcre.health.detectors import DEFAULT_DETECTORS, check_detector_expression
from nvcre.measure.thresholds import check_threshold

_FIND_ALL = re.compile(r"^self\.findAll\('((?:[^'\\]|\\.)*)'\)\.size\(\) <= (\d+)$")

REAL_THRESHOLDS = ["value >= 900", "value >= 0.9 && value <= 1.0", "value > 300 || value == 0",
                   "[900.0, 950.0].exists(x, value >= x)", "(value >= 400.0) && !(value > 1e6)"]
REFUSED_THRESHOLDS = [
    "(" * 33 + "value" + ")" * 33 + " > 1",
    "[1,2].exists(a, value > a) && [3,4].all(b, value < b)",
    "[1,2,3].map (a, [1,2,3] .\n map(b, a+b)).size() > 0",
    "[" + ",".join(str(i) for i in range(70)) + "].exists(x, value >= x)",
]
REFUSED_DETECTORS = [
    "node.status.conditions.exists(a, node.status.conditions.exists(b, node.status.conditions.exists(c, true)))",
    "(" * 65 + "node.spec.unschedulable" + ")" * 65,
]


def _python_counts(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text))


@pytest.mark.parametrize("shape", [THRESHOLD_SHAPE, DETECTOR_SHAPE], ids=["threshold", "detector"])
def test_the_crd_rules_count_what_the_python_check_counts(shape):
    samples = REAL_THRESHOLDS + REFUSED_THRESHOLDS + REFUSED_DETECTORS + [d.expression for d in DEFAULT_DETECTORS]
    for rule in cel_shape_rules(shape):
        literal, limit = _FIND_ALL.match(rule["rule"]).groups()
        pattern = cel.evaluate(f"'{literal}'")  # the string the API server's findAll receives
        for text in samples:
            over = _python_counts(pattern, text) > int(limit)
            assert not over or check_cel_shape(text, shape) is not None, (rule["rule"], text)
    for text in samples:  # and nothing the Python check refuses passes every CRD rule
        if check_cel_shape(text, shape) is not None:
            assert any(_python_counts(cel.evaluate(f"'{_FIND_ALL.match(r['rule']).group(1)}'"), text)
                       > int(_FIND_ALL.match(r["rule"]).group(2)) for r in cel_shape_rules(shape)), text


def test_every_user_cel_field_of_every_crd_carries_the_shape_rules():
    fields = set()
    for kind in KINDS.values():
        schema = build_crd(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        for where, rule in iter_rules(schema):
            if "findAll" in rule["rule"]:
                fields.add((kind.__name__, where))
    paths = {where for _, where in fields}
    assert ".spec.nodeHealthMonitor.cel.expression" in paths
    assert ".spec.thresholds[*]" in paths and ".spec.jobTemplate.spec.thresholds[*]" in paths
    assert ".spec.categories[*].options.thresholds[*]" in paths
    assert {k for k, _ in fields} >= {"Certification", "Job", "Workflow", "WorkloadRun"}


def test_real_expressions_fit_the_shape():
    for text in REAL_THRESHOLDS:
        assert check_cel_shape(text, THRESHOLD_SHAPE) is None, text
        assert check_threshold("busBandwidthGBps", text) is None, text
    for detector in DEFAULT_DETECTORS:
        assert check_cel_shape(detector.expression, DETECTOR_SHAPE) is None, detector.name
        assert check_cel_shape(detector.detail or "x", DETECTOR_SHAPE) is None, detector.name
        assert check_detector_expression(detector.expression) is None, detector.name


@pytest.mark.parametrize("text", REFUSED_THRESHOLDS)
def test_pathological_thresholds_are_refused_with_the_bound(text):
    problem = check_cel_shape(text, THRESHOLD_SHAPE)
    assert problem and problem.startswith("CEL expression refused: a threshold may hold at most"), problem


@pytest.mark.parametrize("text", REFUSED_DETECTORS)
def test_pathological_detectors_are_refused_with_the_bound(text):
    problem = check_cel_shape(text, DETECTOR_SHAPE)
    assert problem and problem.startswith("CEL expression refused: a health detector may hold at most"), problem
