"""Bounded evaluation: RE2 for user regexes, a static CEL cost limit, a runtime budget."""

from __future__ import annotations

import time

import pytest

from nvcre.errors import ManifestError
from nvcre.health.detectors import DEFAULT_DETECTORS, NodeHealthMonitor, check_detector_expression, default_detectors
from nvcre.measure.celcost import SCALAR, check_cost, estimate_cost
from nvcre.measure.logprofile import load_log_profile
from nvcre.measure.thresholds import check_threshold, evaluate_thresholds
from nvcre.measure.userregex import UserRegexError, compile_user_regex

TEN = "[1,2,3,4,5,6,7,8,9,10]"
# ~170 characters, about a second per evaluation in the CEL library (seconds with 6 levels).
NESTED = f"{TEN}.map(a,{TEN}.map(b,{TEN}.map(c,{TEN}.map(d,{TEN}.map(f,a+b+c+d+f))))).size() > 0"


@pytest.mark.parametrize("pattern, reason", [
    (r"(a)\1", "backreferences"),
    (r"(?=x)y", "lookahead"),
    (r"(?<=a)b", "lookahead and lookbehind"),
    (r"a++", "bad repetition"),
    (r"end\Z", r"\z"),
    (r"(?P=n)", "backreferences"),
    (r"(?x) a b", "verbose"),
    ("a{1001}", "repetition size"),
])
def test_re2_refuses_what_it_cannot_express_with_the_reason(pattern, reason):
    with pytest.raises(UserRegexError) as err:
        compile_user_regex(pattern)
    assert reason in str(err.value)


def test_re2_accepts_go_syntax_and_matches_catastrophic_patterns_in_linear_time():
    regex = compile_user_regex(r"^(?<it>\d+) (?P<loss>[0-9.]+)\z")
    assert regex.search("12 0.5").groupdict() == {"it": "12", "loss": "0.5"}
    evil = compile_user_regex(r"^(a+)+$")  # exponential in a backtracking engine
    start = time.perf_counter()
    assert evil.search("a" * 200_000 + "!") is None
    assert time.perf_counter() - start < 0.5


def test_logprofile_loader_refuses_python_only_regex_naming_the_field():
    spec = {"timestamp": {"layout": "2006"}, "patterns": {"trainingStep": {"regex": r"(?P<step>\d+)(?=ms)"}}}
    with pytest.raises(ManifestError) as err:
        load_log_profile({"metadata": {"name": "p"}, "spec": spec})
    assert err.value.field == "spec.patterns.trainingStep.regex" and "lookahead" in str(err.value)


def test_default_detectors_fit_the_cost_limit_and_nested_comprehensions_do_not():
    for detector in DEFAULT_DETECTORS:
        assert check_detector_expression(detector.expression) is None, detector.name
    problem = check_detector_expression(NESTED)
    assert problem and "estimated cost" in problem
    with pytest.raises(ManifestError) as err:
        NodeHealthMonitor(default_detectors() + [{"name": "evil", "expression": NESTED}])
    assert "estimated cost" in str(err.value)


def test_the_estimate_grows_with_nesting_like_the_real_cost():
    costs = []
    for depth in range(1, 5):
        expression = TEN + "".join(f".map(a{i},{TEN}" for i in range(depth - 1)) + ".map(z, 1)" + ")" * (depth - 1)
        costs.append(estimate_cost(expression))
    assert all(b > 8 * a for a, b in zip(costs, costs[1:]))


@pytest.mark.parametrize("expression", [
    "(" * 40 + "value" + ")" * 40 + " > 1",
    "x.map(",
    "'unterminated",
    "a ? b",
    "value >= ",
    NESTED,
])
def test_check_cost_is_total_and_refuses(expression):
    assert check_cost(expression, 100_000, {"value": SCALAR}) is not None


def test_costly_threshold_refused_at_compile_and_at_judgement():
    problem = check_threshold("busBandwidthGBps", NESTED.replace("> 0", "> 0 && value > 1"))
    assert problem is not None and "estimated cost" in problem.message
    start = time.perf_counter()
    decision = evaluate_thresholds({"busBandwidthGBps": NESTED}, {"busBandwidthGBps": 5.0})
    assert time.perf_counter() - start < 0.2  # refused, never run
    assert decision.failed and decision.reason == "InvalidThresholdExpression"
    assert check_threshold("busBandwidthGBps", "value >= 900 && value < 1e6") is None


def test_runtime_budget_skips_a_slow_detector_for_the_rest_of_the_pass():
    slow = "[1,2,3,4,5,6,7,8,9,10].map(a,[1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, a+b+c))).size() < 0 || node.status.conditions.exists(c, c.message == 'x')"
    monitor = NodeHealthMonitor([{"name": "slow", "expression": slow}], pass_budget_s=0.0)
    nodes = [{"metadata": {"name": f"n{i}", "uid": str(i), "resourceVersion": "1"},
              "status": {"conditions": [{"type": "Ready", "status": "True", "message": str(i)}]}} for i in range(5)]
    assert monitor.evaluate(nodes) == []
    skipped = [e for e in monitor.errors if "runtime budget" in e["error"]]
    assert len(skipped) == 4  # the first node ran, then the budget (0 s) was spent


def test_verdicts_are_shared_between_nodes_that_look_alike():
    monitor = NodeHealthMonitor(default_detectors())
    nodes = [{"metadata": {"name": f"n{i}"}, "spec": {"unschedulable": i == 3},
              "status": {"conditions": [{"type": "Ready", "status": "True"}]}} for i in range(50)]
    findings = monitor.evaluate(nodes)
    assert [f["node"] for f in findings] == ["n3"]
    assert len(monitor._verdicts) == 2


class _Clock:
    """A clock that advances ``step`` seconds per reading: every evaluation (two readings) 'takes' ``step``."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def fresh_budget_memory():
    from nvcre.measure import thresholds

    thresholds._OVER_BUDGET.clear()
    yield
    thresholds._OVER_BUDGET.clear()


def test_threshold_over_the_runtime_budget_fails_with_the_reason_and_never_runs_again(fresh_budget_memory):
    from nvcre.measure import celcost

    slow = celcost.RuntimeBudget(0.5, clock=_Clock(1.0))  # the one evaluation takes 1 s
    decision = evaluate_thresholds({"busBandwidthGBps": "value >= 1.5"}, {"busBandwidthGBps": 900.0}, budget=slow)
    assert decision.failed and decision.reason == "InvalidThresholdExpression"
    assert "took 1.00 s, over the runtime budget of 0.5 s" in decision.message and "simplify it" in decision.message
    # re-judged on the next reconcile: refused from memory, the program is not run again
    untouched = celcost.RuntimeBudget(0.5, clock=lambda: pytest.fail("an over-budget threshold ran again"))
    again = evaluate_thresholds({"busBandwidthGBps": "value >= 1.5"}, {"busBandwidthGBps": 900.0}, budget=untouched)
    assert again.failed and "is not run again" in again.message


def test_thresholds_after_the_budget_is_spent_are_not_evaluated(fresh_budget_memory):
    from nvcre.measure.celcost import RuntimeBudget

    budget = RuntimeBudget(0.5, clock=_Clock(0.3))  # 0.3 s per evaluation: the third finds 0.6 s spent
    thresholds = {"algBandwidthGBps": "value >= 2.5", "avgStepTimeSec": "value < 9.5", "busBandwidthGBps": "value >= 3.5"}
    metrics = {"algBandwidthGBps": 10.0, "avgStepTimeSec": 1.0, "busBandwidthGBps": 10.0}
    decision = evaluate_thresholds(thresholds, metrics, budget=budget)
    verdicts = {e.metric: (e.passed, e.reason) for e in decision.evaluations}
    assert verdicts["algBandwidthGBps"] == (True, "ThresholdMet")
    assert verdicts["avgStepTimeSec"] == (True, "ThresholdMet")
    assert verdicts["busBandwidthGBps"] == (False, "InvalidThresholdExpression")
    assert decision.failed and "spent its runtime budget of 0.5 s" in decision.message


def test_thresholds_within_the_budget_are_judged_as_before(fresh_budget_memory):
    from nvcre.measure.thresholds import THRESHOLD_BUDGET_S

    assert 0 < THRESHOLD_BUDGET_S <= 2.0  # no more than a detector's pass budget
    ok = evaluate_thresholds({"busBandwidthGBps": "value >= 4.5"}, {"busBandwidthGBps": 900.0})
    assert not ok.failed and ok.reason == "ThresholdsMet"


def test_the_runtime_budget_measures_real_time():
    from nvcre.measure.celcost import RuntimeBudget

    budget = RuntimeBudget(0.01)
    assert budget.spend(lambda: time.sleep(0.02) or 7) == 7
    assert budget.last_s >= 0.02 and budget.exhausted
    with pytest.raises(ZeroDivisionError):
        budget.spend(lambda: 1 / 0)
    assert budget.spent_s >= budget.last_s + 0.02
