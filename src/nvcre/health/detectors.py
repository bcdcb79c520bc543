"""Node-health detectors: CEL expressions over whole Node objects, compiled once.

A detector is ``{name, expression, message}``; its expression sees one variable,
``node`` (the Node as a plain dict), and returns true when the node is unhealthy.
The controller evaluates them over the nodes of running workloads and records
``HardwareFailureDetected`` for each node that fires. This module is pure: it
takes Node dicts and returns findings; it never reads or writes the API.

Speed matters (4096 nodes per pass, budget 0.5 s), and converting a whole Node
into CEL values costs far more than evaluating a condition check. So each Node is
first reduced to the fields the expressions name (see ``_project``), and verdicts
are cached per (uid, resourceVersion): an unchanged Node is not evaluated again.
"""

from __future__ import annotations


import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import cel

from nvcre.errors import ManifestError

# The reference's only default: a node cordoned during the run.
CORDON_EXPRESSION = "node.spec.unschedulable == true"

_GPU_COUNT = "'nvidia.com/gpu'"
# A GPU condition is bad when a "...Healthy"/"...Ready" one is False, or a problem-style
# one (anything else naming the GPU, e.g. "GpuXidError") is True.
_GPU_CONDITION_BAD = (
    "(c.type.contains('GPU') || c.type.contains('Gpu') || c.type.contains('gpu')) && "
    "((c.type.endsWith('Healthy') || c.type.endsWith('healthy') || c.type.endsWith('Ready') || "
    "c.type.endsWith('ready')) ? c.status == 'False' : c.status == 'True')"
)


@dataclass(frozen=True)
class Detector:
    """One named CEL check. ``detail`` (optional CEL returning a string or list of
    strings) is evaluated only when the check fires, to say what exactly was seen."""

    name: str
    expression: str
    message: str | None = None
    detail: str | None = None


DEFAULT_DETECTORS: tuple[Detector, ...] = (
    Detector(
        name="cordoned",
        expression=CORDON_EXPRESSION,
        message="node was cordoned (spec.unschedulable) while the workload ran",
    ),
    Detector(
        name="not-ready",
        expression="node.status.conditions.exists(c, c.type == 'Ready' && c.status != 'True')",
        message="node is not Ready",
        detail=(
            "node.status.conditions.filter(c, c.type == 'Ready')"
            ".map(c, 'Ready=' + c.status + (has(c.reason) ? ' (' + c.reason + ')' : ''))"
        ),
    ),
    Detector(
        # A health agent (NVSentinel, node-problem-detector, DCGM exporters) reports a GPU
        # problem as a node condition: "...GPUHealthy"/"...GpuReady" = False, or a problem
        # condition such as "GpuXidError" = True.
        name="gpu-health-condition",
        expression=f"node.status.conditions.exists(c, {_GPU_CONDITION_BAD})",
        message="a GPU health condition reports a failure",
        detail=(
            f"node.status.conditions.filter(c, {_GPU_CONDITION_BAD})"
            ".map(c, c.type + '=' + c.status + (has(c.message) ? ': ' + c.message : (has(c.reason) ? ': ' + c.reason : '')))"
        ),
    ),
    Detector(
        # The device plugin withdraws an unhealthy GPU from allocatable (a GPU fallen off
        # the bus); a GPU that disappears entirely lowers capacity below GFD's count label.
        name="gpu-count-drop",
        expression=(
            f"({_GPU_COUNT} in node.status.capacity && {_GPU_COUNT} in node.status.allocatable && "
            f"int(node.status.allocatable[{_GPU_COUNT}]) < int(node.status.capacity[{_GPU_COUNT}])) || "
            f"('nvidia.com/gpu.count' in node.metadata.labels && {_GPU_COUNT} in node.status.capacity && "
            f"int(node.status.capacity[{_GPU_COUNT}]) < int(node.metadata.labels['nvidia.com/gpu.count']))"
        ),
        message="fewer usable GPUs than the node has",
        detail=(
            f"'nvidia.com/gpu allocatable ' + ({_GPU_COUNT} in node.status.allocatable ? "
            f"node.status.allocatable[{_GPU_COUNT}] : '?') + ', capacity ' + ({_GPU_COUNT} in node.status.capacity ? "
            f"node.status.capacity[{_GPU_COUNT}] : '?') + ', labelled count ' + "
            "('nvidia.com/gpu.count' in node.metadata.labels ? node.metadata.labels['nvidia.com/gpu.count'] : '?')"
        ),
    ),
)


def default_detectors(*, include_unschedulable: bool = False) -> list[Detector]:
    """The default health monitor. Opting cordoned nodes in (``include_unschedulable``)
    drops the cordon check, so a cordon is not reported as a hardware failure."""
    return [d for d in DEFAULT_DETECTORS if not (include_unschedulable and d.name == "cordoned")]


def detectors_for_job(
    expression: str | None = None,
    user_detectors: Sequence[Mapping | Detector] | None = None,
    *,
    include_unschedulable: bool = False,
) -> list[Detector]:
    """Detectors for one Job: the defaults, the Job's ``nodeHealthMonitor.cel.expression``
    (when it is not just the reference's cordon default), and any user detectors."""
    detectors = default_detectors(include_unschedulable=include_unschedulable)
    if expression and expression.strip() and expression.strip() != CORDON_EXPRESSION:
        detectors.append(Detector("nodeHealthMonitor", expression.strip(), None))
    for index, item in enumerate(user_detectors or []):
        detectors.append(_as_detector(item, f"detectors[{index}]"))
    return detectors


def _as_detector(item: Mapping | Detector, field: str) -> Detector:
    if isinstance(item, Detector):
        return item
    if not isinstance(item, Mapping):
        raise ManifestError(field, "a detector must be a mapping with name, expression and optional message")
    name = item.get("name")
    expression = item.get("expression")
    if not isinstance(name, str) or not name.strip():
        raise ManifestError(f"{field}.name", "a detector needs a non-empty name")
    if not isinstance(expression, str) or not expression.strip():
        raise ManifestError(f"{field}.expression", "a detector needs a CEL expression over 'node' returning bool")
    message = item.get("message")
    if message is not None and not isinstance(message, str):
        raise ManifestError(f"{field}.message", "the message must be a string")
    return Detector(name.strip(), expression.strip(), message)


def check_detector_expression(expression: str) -> str | None:
    """Why a health expression cannot be used (does not compile, or returns a non-bool
    on a healthy Node), or None. For admission-style validation of user input."""
    if not isinstance(expression, str) or not expression.strip():
        return "the expression is empty; write e.g. \"node.spec.unschedulable == true\""
    if len(expression) > 2048:
        return "the expression is longer than 2048 characters"
    from nvcre.measure.celcost import check_cost

    try:
        program = cel.compile(expression)
    except Exception as err:
        return f"CEL expression does not compile: {_first_line(err)}"
    undeclared = undeclared_reference(expression, program)
    if undeclared is not None:
        return f"CEL expression does not compile: {undeclared}"
    problem = check_cost(expression, DETECTOR_COST_LIMIT)
    if problem is not None:
        return f"CEL expression refused: {problem}"
    try:
        probe = program.execute({"node": _with_defaults(_PROBE_NODE)})
    except Exception:
        return None  # it may need fields the probe lacks; real Nodes decide at run time
    if not isinstance(probe, bool):
        return f"CEL expression must return a bool, got {type(probe).__name__}"
    return None


# The variables a detector expression may name (the reference's CEL environment declares
# only ``node``). Comprehension variables (``exists(c, ...)``) are bound by the macro.
DECLARED_VARIABLES = ("node",)
_COMPREHENSION = re.compile(
    r"\.\s*(?:all|exists|exists_one|existsOne|map|filter|transformList|transformMap)\s*\(\s*"
    r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:,\s*([A-Za-z_][A-Za-z0-9_]*)\s*)?,"
)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")


def undeclared_reference(expression: str, program: object | None = None, declared: Sequence[str] = DECLARED_VARIABLES) -> str | None:
    """The CEL checker's error for the first identifier that is neither declared nor bound
    by a comprehension, e.g. ``ERROR: <input>:1:1: undeclared reference to 'nod' (in
    container '')``; None when every identifier is known.

    The Rust CEL library only parses; an unknown name would surface at evaluation as an
    error on every Node, so a typo'd detector would never fire. This is the check the
    reference's type checker does at admission."""
    program = program if program is not None else cel.compile(expression)
    names = list(program.variables())  # type: ignore[attr-defined]
    bound = {m for pair in _COMPREHENSION.findall(expression) for m in pair if m}
    unknown = [n for n in names if n not in declared and n not in bound]
    if not unknown:
        return None
    name = sorted(unknown, key=lambda n: _position(expression, n))[0]
    line, column = _line_column(expression, _position(expression, name))
    return f"ERROR: <input>:{line}:{column}: undeclared reference to '{name}' (in container '')"


def _position(expression: str, name: str) -> int:
    """Offset of ``name`` used as a top-level identifier (not a field after '.', not in a string)."""
    blanked = _STRING.sub(lambda m: " " * len(m.group(0)), expression)
    for match in re.finditer(r"(?<![A-Za-z0-9_.])" + re.escape(name) + r"(?![A-Za-z0-9_])", blanked):
        return match.start()
    return 0


def _line_column(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


# --- evaluation ----------------------------------------------------------------------------

_PROBE_NODE = {"metadata": {"name": "probe"}, "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}

# Fields the reference injects so expressions do not trip over absent keys.
_DEFAULTS = {
    "metadata": {"labels": {}, "annotations": {}},
    "spec": {"taints": [], "unschedulable": False},
    "status": {"conditions": [], "addresses": [], "capacity": {}, "allocatable": {}},
}
# Object-shaped parts of a Node whose keys are field names (pruned to the names the
# expressions use). Everything else (labels, capacity, ...) is data and kept whole.
_STRUCTURAL_LISTS = {("status", "conditions"), ("spec", "taints"), ("status", "addresses")}


def _with_defaults(node: Mapping) -> dict:
    out = dict(node)
    for section, defaults in _DEFAULTS.items():
        current = out.get(section)
        merged = dict(current) if isinstance(current, Mapping) else {}
        for key, value in defaults.items():
            if merged.get(key) is None:
                merged[key] = type(value)() if isinstance(value, (dict, list)) else value
        out[section] = merged
    return out


_MISSING = object()
_DATA_MAPS = {("metadata", "labels"), ("metadata", "annotations"), ("status", "capacity"), ("status", "allocatable")}


class _Projection:
    """The part of a Node the expressions can see.

    Converting a value into CEL is the dominant cost, so fields no expression names
    are dropped: object keys (``metadata``, ``status.conditions[].type``, ...) are kept
    only when their name appears in an expression. A data map (labels, annotations,
    capacity, allocatable) is kept whole when an expression uses it as a whole
    (``labels.exists(...)``, ``size(...)``), and cut to the quoted keys when every use
    is a lookup (``m['k']`` or ``'k' in m``).
    """

    def __init__(self, expressions: Iterable[str]) -> None:
        texts = list(expressions)
        words: set[str] = set()
        literals: set[str] = set()
        for text in texts:
            # Words inside string literals count too (``node['status']``).
            words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
            literals.update(a or b for a, b in re.findall(r"'([^']*)'|\"([^\"]*)\"", text))
        self.words = words
        self.literals = literals
        self.keyed_only = {name: all(_keyed_uses_only(text, name) for text in texts) for _, name in _DATA_MAPS}

    def project(self, node: Mapping) -> dict:
        """``apply(_with_defaults(node))`` in one pass that touches only the named fields."""
        words = self.words
        out: dict = {}
        for section, value in node.items():
            if section not in words:
                continue
            defaults = _DEFAULTS.get(section)
            if defaults is None:
                out[section] = value
                continue
            if not isinstance(value, dict):
                value = dict(value) if isinstance(value, Mapping) else {}
            part = {}
            for key in words:
                sub = value.get(key)
                if sub is None:
                    default = defaults.get(key, _MISSING)
                    if default is _MISSING:
                        if key in value:
                            part[key] = None
                        continue
                    sub = type(default)() if isinstance(default, (dict, list)) else default
                    part[key] = sub
                    continue
                if (section, key) in _STRUCTURAL_LISTS and isinstance(sub, list):
                    sub = [{k: v for k, v in item.items() if k in words} if isinstance(item, dict) else item
                           for item in sub]
                elif (section, key) in _DATA_MAPS and isinstance(sub, dict) and self.keyed_only[key]:
                    sub = {k: sub[k] for k in self.literals if k in sub}
                part[key] = sub
            out[section] = part
        for section, defaults in _DEFAULTS.items():
            if section in words and section not in out:
                out[section] = {k: (type(v)() if isinstance(v, (dict, list)) else v) for k, v in defaults.items()
                                if k in words}
        return out

    def apply(self, node: dict) -> dict:
        words = self.words
        out: dict = {}
        for section, value in node.items():
            if section not in words:
                continue
            if section in ("metadata", "spec", "status") and isinstance(value, Mapping):
                part = {}
                for key, sub in value.items():
                    if key not in words:
                        continue
                    if (section, key) in _STRUCTURAL_LISTS and isinstance(sub, list):
                        sub = [
                            {k: v for k, v in item.items() if k in words} if isinstance(item, Mapping) else item
                            for item in sub
                        ]
                    elif (section, key) in _DATA_MAPS and isinstance(sub, Mapping) and self.keyed_only[key]:
                        sub = {k: v for k, v in sub.items() if k in self.literals}
                    part[key] = sub
                out[section] = part
            else:
                out[section] = value
        return out


def _keyed_uses_only(text: str, name: str) -> bool:
    """True when every ``.name`` in ``text`` is a lookup: ``.name[...]`` or ``... in X.name``."""
    for match in re.finditer(r"\." + re.escape(name) + r"\b", text):
        after = text[match.end():].lstrip()
        if after.startswith("["):
            continue
        before = text[: match.start()]
        if re.search(r"\bin\s+[A-Za-z_][A-Za-z0-9_.]*$", before) and not after.startswith("."):
            continue
        return False
    return True


@dataclass
class _Compiled:
    detector: Detector
    program: object
    detail: object | None


# Compile-time cost limit per detector (units of the API server's CEL cost estimate, see
# nvcre.measure.celcost) and the runtime budget one detector may spend in one pass.
DETECTOR_COST_LIMIT = 200_000
PASS_BUDGET_S = 2.0


def compile_detector(expression: str, field: str, name: str) -> object:
    """The compiled program, or ManifestError (does not compile, or costs too much)."""
    from nvcre.measure.celcost import check_cost

    try:
        program = cel.compile(expression)
    except Exception as err:
        raise ManifestError(field, f"detector {name!r}: CEL expression does not compile: {_first_line(err)}") from None
    undeclared = undeclared_reference(expression, program)
    if undeclared is not None:
        raise ManifestError(field, f"detector {name!r}: CEL expression does not compile: {undeclared}")
    problem = check_cost(expression, DETECTOR_COST_LIMIT)
    if problem is not None:
        raise ManifestError(field, f"detector {name!r}: CEL expression refused: {problem}")
    return program


class NodeHealthMonitor:
    """Compile detectors once; evaluate them over many Nodes, repeatedly.

    Raises ``ManifestError`` at construction for an expression that does not compile
    or whose estimated cost is over ``DETECTOR_COST_LIMIT`` (a user's mistake, named
    by detector). Evaluation errors on a particular Node (a missing field, a type
    mismatch) are collected in ``errors``: one odd Node never stops the monitor, and the caller
    reports them (condition, Event, report line) instead of swallowing them as the
    reference does. A detector that spends more than ``pass_budget_s``
    in one pass is skipped for the rest of that pass (an error says so).

    Verdicts are a pure function of the projected Node (the only thing the programs
    see), so they are cached by the projection: a fleet of healthy Nodes shares a few
    distinct projections and a cold pass evaluates CEL only for those. Evaluation
    takes no lock: the caches are plain dicts whose single get/set is atomic.
    """

    def __init__(self, detectors: Sequence[Mapping | Detector] | None = None, *, cache_size: int = 20000,
                 pass_budget_s: float = PASS_BUDGET_S) -> None:
        items = list(detectors) if detectors is not None else default_detectors()
        self._compiled: list[_Compiled] = []
        for index, item in enumerate(items):
            detector = _as_detector(item, f"detectors[{index}]")
            program = compile_detector(detector.expression, f"detectors[{index}].expression", detector.name)
            detail = None
            if detector.detail:
                try:
                    detail = compile_detector(detector.detail, f"detectors[{index}].detail", detector.name)
                except ManifestError:
                    detail = None
            self._compiled.append(_Compiled(detector, program, detail))
        self._projection = _Projection([c.detector.expression for c in self._compiled])
        self._cache: dict[tuple[str, str], tuple[list[dict], list[dict]]] = {}  # (uid, resourceVersion) -> (found, errors)
        self._verdicts: dict[str, tuple[tuple[int, ...], tuple[tuple[int, str], ...]]] = {}
        self._cache_size = cache_size
        self.pass_budget_s = pass_budget_s
        self.errors: list[dict] = []

    @property
    def detectors(self) -> list[Detector]:
        return [c.detector for c in self._compiled]

    def evaluate(self, nodes: Iterable[Mapping]) -> list[dict]:
        """Findings ``{node, detector, message}`` for every (node, detector) that fired."""
        errors: list[dict] = []
        spent = [0.0] * len(self._compiled)
        findings: list[dict] = []
        for node in nodes:
            findings.extend(self._evaluate_node(node, errors, spent))
        self.errors = errors
        return findings

    def evaluate_node(self, node: Mapping) -> list[dict]:
        errors: list[dict] = []
        found = self._evaluate_node(node, errors, [0.0] * len(self._compiled))
        self.errors = errors
        return found

    def _evaluate_node(self, node: Mapping, errors: list[dict], spent: list[float]) -> list[dict]:
        metadata = node.get("metadata") or {}
        name = str(metadata.get("name") or "")
        key = None
        uid, version = metadata.get("uid"), metadata.get("resourceVersion")
        if uid and version:
            key = (str(uid), str(version))
            cached = self._cache.get(key)
            if cached is not None:
                found, cached_errors = cached
                errors.extend(dict(e) for e in cached_errors)  # an unchanged Node still cannot be evaluated
                return [dict(f) for f in found]
        projected = self._projection.project(node)
        shape = repr(projected)
        verdict = self._verdicts.get(shape)
        complete = True
        if verdict is None:
            fired, failures, complete = self._run(projected, spent)
            verdict = (fired, failures)
            if complete:  # a detector skipped for its budget leaves a partial verdict: not cached
                if len(self._verdicts) >= self._cache_size:
                    self._verdicts.clear()
                self._verdicts[shape] = verdict
        fired, failures = verdict
        node_errors = [{"node": name, "detector": self._compiled[index].detector.name, "error": error} for index, error in failures]
        errors.extend(node_errors)
        found = [{"node": name, "detector": self._compiled[i].detector.name,
                  "message": self._message(self._compiled[i], name, node)} for i in fired]
        if key is not None and complete:
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[key] = ([dict(f) for f in found], [dict(e) for e in node_errors])
        return found

    def _run(self, projected: dict, spent: list[float]):
        """(indices that fired, ((index, error), ...), complete: no detector skipped)."""
        context = cel.Context({"node": projected})
        fired: list[int] = []
        failures: list[tuple[int, str]] = []
        partial = False
        for index, compiled in enumerate(self._compiled):
            if spent[index] > self.pass_budget_s:
                failures.append((index, f"skipped: over its runtime budget of {self.pass_budget_s:g} s in this pass"))
                partial = True
                continue
            start = time.perf_counter()
            try:
                verdict = compiled.program.execute(context)
            except KeyError as err:
                failures.append((index, f"no such key: {err}"))
                continue
            except Exception as err:
                failures.append((index, _first_line(err)))
                continue
            finally:
                spent[index] += time.perf_counter() - start
            if verdict is True:
                fired.append(index)
            elif not isinstance(verdict, bool):
                failures.append((index, f"expression returned {type(verdict).__name__}, not bool"))
        return tuple(fired), tuple(failures), not partial

    def _message(self, compiled: _Compiled, name: str, node: Mapping) -> str:
        base = compiled.detector.message or f"CEL expression evaluated to true for node {name}"
        if compiled.detail is None:
            return base
        try:
            detail = compiled.detail.execute({"node": _with_defaults(node)})
        except Exception:
            return base
        if isinstance(detail, list):
            detail = "; ".join(str(d) for d in detail)
        return f"{base}: {detail}" if detail else base


def evaluate_node_health(
    nodes: Iterable[Mapping], detectors: Sequence[Mapping | Detector] | None = None
) -> list[dict]:
    """One-shot form of ``NodeHealthMonitor(detectors).evaluate(nodes)`` (defaults when None)."""
    return NodeHealthMonitor(detectors).evaluate(nodes)


def describe_errors(errors: Sequence[Mapping], *, max_nodes: int = 5) -> str | None:
    """One line per detector for evaluation errors (``NodeHealthMonitor.errors``), or None.

    E.g. ``detector 'nodeHealthMonitor' could not be evaluated on 2 node(s) (n1, n2): no such key: 'x'``."""
    by_detector: dict[str, tuple[list[str], str]] = {}
    for err in errors:
        nodes, first = by_detector.setdefault(str(err["detector"]), ([], str(err["error"])))
        if err["node"] not in nodes:
            nodes.append(str(err["node"]))
    if not by_detector:
        return None
    parts = []
    for detector, (nodes, first) in sorted(by_detector.items()):
        shown = ", ".join(sorted(nodes)[:max_nodes]) + (", ..." if len(nodes) > max_nodes else "")
        parts.append(f"detector {detector!r} could not be evaluated on {len(nodes)} node(s) ({shown}): {first}")
    return "; ".join(parts)


def failed_node_entries(findings: Iterable[Mapping]) -> list[dict]:
    """Findings merged per node into ``{name, reason: HardwareFailureDetected, message}``, sorted."""
    by_node: dict[str, list[str]] = {}
    for finding in findings:
        by_node.setdefault(str(finding["node"]), []).append(f"{finding['detector']}: {finding['message']}")
    return [
        {"name": name, "reason": "HardwareFailureDetected", "message": "; ".join(messages)}
        for name, messages in sorted(by_node.items())
    ]


def _first_line(err: Exception) -> str:
    text = str(err).strip() or type(err).__name__
    return text.splitlines()[0]
