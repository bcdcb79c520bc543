"""``dcgmi diag -r N`` output (text table or ``-j`` JSON) -> per-test, per-GPU results.

The diagnostics category passes or fails on the tool's exit code; this parser says
*which* GPU failed *which* test and why, so a failed node is reported with a reason a
person can act on. It reads the DCGM 2.x/3.x table (``Pass - All``, ``Fail - GPU: 0``
and ``Warning`` rows), the DCGM 4.x table (``GPU0: Fail`` rows), and the JSON forms
(``test_categories`` with ``gpu_ids`` or ``entity_id``, including the malformed
variant where the category list sits directly under the root key). It never raises
on content: unreadable input gives an empty result with warnings.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from nvcre.measure.logtext import MAX_LINE_CHARS, split_k8s_prefix

_STATUS_WORDS = {"pass": "Pass", "fail": "Fail", "skip": "Skip", "warn": "Warn", "warning": "Warn",
                 "not run": "Skip", "error": "Fail"}


@dataclass
class DcgmTestResult:
    """One test's outcome for a set of GPUs (None = the test is not per GPU, or all GPUs)."""

    test: str
    category: str | None
    status: str  # Pass | Fail | Skip | Warn
    gpus: list[int] | None = None
    messages: list[str] = field(default_factory=list)  # warnings / errors
    info: list[str] = field(default_factory=list)


@dataclass
class DcgmReport:
    results: list[DcgmTestResult] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    format: str = "text"  # text | json
    warnings: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool | None:
        """False if any test failed, True if tests ran and none failed, None if nothing was read."""
        if not self.results:
            return None
        return not any(r.status == "Fail" for r in self.results)

    @property
    def failed_tests(self) -> list[str]:
        seen: dict[str, None] = {}
        for result in self.results:
            if result.status == "Fail":
                seen.setdefault(result.test, None)
        return list(seen)


def _status(text: str) -> tuple[str | None, list[int] | None]:
    """``Pass - All`` / ``Fail - GPU: 0`` / ``Pass - GPUs: 1, 2`` / ``Fail`` -> (status, gpus)."""
    match = re.match(r"^\s*(Pass|Fail|Skip|Warn(?:ing)?|Not Run|Error)\b\s*(?:-\s*(.*))?$", text, re.IGNORECASE)
    if not match:
        return None, None
    status = _STATUS_WORDS[match.group(1).lower()]
    scope = (match.group(2) or "").strip()
    if not scope or scope.lower() == "all":
        return status, None
    gpus = [int(n) for n in re.findall(r"\d+", scope[:1024]) if len(n) <= 6]
    return status, gpus or None


def _gpu_ids(value: object, depth: int = 0) -> list[int] | None:
    if value is None or value == "" or depth > 4:
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return [value] if 0 <= value < 1_000_000 else None
    if isinstance(value, list):
        out = []
        for item in value[:1024]:
            out.extend(_gpu_ids(item, depth + 1) or [])
        return out or None
    ids = [int(n) for n in re.findall(r"\d+", str(value)[:1024]) if len(n) <= 6]
    return ids or None


def _texts(value: object, depth: int = 0) -> list[str]:
    """Warnings/info as a list of strings (string, list of strings, or list of dicts)."""
    if value is None or depth > 4:
        return []
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, dict):
        text = value.get("warning") or value.get("message") or value.get("info") or ""
        text = text if isinstance(text, str) else _short(text)
        return [text.strip()[:1024]] if text.strip() else []
    if isinstance(value, list):
        out: list[str] = []
        for item in value[:256]:
            out.extend(_texts(item, depth + 1))
        return out
    return [_short(value)]


def _short(value: object) -> str:
    """``str`` of a JSON value, cut (a huge nested value must not become a huge message)."""
    try:
        return json.dumps(value)[:1024] if isinstance(value, (dict, list)) else str(value)[:1024]
    except (ValueError, RecursionError, TypeError):
        return "?"


# --- JSON ---------------------------------------------------------------------------------


def _as_list(value: object) -> list:
    return value if isinstance(value, list) else []


def _categories(data: dict) -> tuple[list, dict]:
    for key in ("DCGM GPU Diagnostic", "DCGM Diagnostic", "dcgm_diagnostic"):
        body = data.get(key)
        if isinstance(body, list):
            return body, {}
        if isinstance(body, dict):
            meta = {k: str(v) for k, v in body.items() if isinstance(v, (str, int, float)) and not isinstance(v, bool)}
            return _as_list(body.get("test_categories")), meta
    if isinstance(data.get("test_categories"), list):
        return data["test_categories"], {}
    return [], {}


def _parse_json(data: dict) -> DcgmReport:
    report = DcgmReport(format="json")
    categories, meta = _categories(data)
    report.metadata.update(meta)
    for source in (data.get("metadata"), data):
        if isinstance(source, dict):
            for key, value in source.items():
                if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                    report.metadata.setdefault(key, str(value))
    if not categories:
        report.warnings.append("no DCGM test categories found in the JSON")
    for category in categories:
        if not isinstance(category, dict):
            continue
        name = category.get("category")
        for test in _as_list(category.get("tests")):
            if not isinstance(test, dict):
                continue
            test_name = str(test.get("name") or "?")
            results = _as_list(test.get("results"))
            if not results and isinstance(test.get("test_summary"), dict):
                results = [test["test_summary"]]
            for entry in results:
                if not isinstance(entry, dict):
                    continue
                status, _ = _status(str(entry.get("status") or ""))
                if status is None:
                    report.warnings.append(f"{test_name}: unknown status {entry.get('status')!r}")
                    continue
                gpus = _gpu_ids(entry.get("gpu_ids"))
                if gpus is None and str(entry.get("entity_group", "GPU")).upper() == "GPU" and "entity_id" in entry:
                    gpus = _gpu_ids(entry.get("entity_id"))
                report.results.append(
                    DcgmTestResult(
                        test=test_name,
                        category=str(name) if name else None,
                        status=status,
                        gpus=gpus,
                        messages=_texts(entry.get("warnings")) + _texts(entry.get("errors")),
                        info=_texts(entry.get("info")),
                    )
                )
    return report


# --- text table -----------------------------------------------------------------------------

# Table lines are split by hand, not by regex: ``^\|(.*)\|(.*)\|`` and a lazy section
# name between ``\s+`` runs backtrack polynomially on long lines of bars or spaces.
_SECTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 /]*")


def _section(line: str) -> str | None:
    """``+--- Integration -----+`` / ``|----- Metadata ----------+`` -> the section name."""
    if line[:1] not in ("|", "+") or line[1:2] != "-":
        return None
    rest = line[1:].lstrip("-")
    dashes = rest.find("-")
    if dashes <= 0 or not rest[:1].isspace() or not rest[dashes - 1].isspace():
        return None
    name = rest[:dashes].strip()
    after = rest[dashes:].lstrip("-")
    if not name or after[:1] not in ("+", "|") or not _SECTION_NAME.fullmatch(name):
        return None
    return name


def _row(line: str) -> tuple[str, str] | None:
    """``| left | right |`` -> (left, right), split at the last inner bar (like a greedy regex)."""
    body = line.rstrip()
    if len(body) < 3 or body[0] != "|" or body[-1] != "|":
        return None
    left, bar, right = body[1:-1].rpartition("|")
    return (left, right) if bar else None
_MESSAGE_LEFT = re.compile(r"^(Warning|Info|Error)\b\s*:?\s*(.*)$", re.IGNORECASE)
_GPU_ROW = re.compile(r"^GPU\s*(\d+)\s*:\s*(\w[\w ]*)$", re.IGNORECASE)


def _parse_text(text: str) -> DcgmReport:
    report = DcgmReport(format="text")
    category: str | None = None
    current: list[DcgmTestResult] = []  # results of the test being read
    message_target: tuple[str, list[int] | None] | None = None  # (kind, gpus) of the open message
    for raw in text.splitlines():
        line = split_k8s_prefix(raw)[1].rstrip()
        line = line[:MAX_LINE_CHARS]
        section = _section(line)
        if section:
            category = section
            current, message_target = [], None
            continue
        row = _row(line)
        if not row:
            continue
        left, right = row[0].strip(), row[1].strip()
        if left == "Diagnostic" and right == "Result":
            continue
        if category and category.lower() == "metadata":
            if left:
                report.metadata[left] = right
            continue
        message = _MESSAGE_LEFT.match(left) if left else None
        if message:
            kind = message.group(1).lower()
            gpus = _gpu_ids(message.group(2)) or _gpu_ids(re.findall(r"GPU\s*(\d+)", right)[:1] or None)
            message_target = (kind, gpus)
            _attach(current, kind, gpus, right)
            continue
        if left:
            status, gpus = _status(right)
            if status is None:
                report.warnings.append(f"unreadable result for {left!r}: {right!r}")
                current, message_target = [], None
                continue
            result = DcgmTestResult(test=left, category=category, status=status, gpus=gpus)
            report.results.append(result)
            current, message_target = [result], None
            continue
        # Continuation row (empty left cell): another GPU's result, or more message text.
        gpu_row = _GPU_ROW.match(right)
        if gpu_row:
            status, gpus = _status(gpu_row.group(2))[0], [int(gpu_row.group(1))]
        else:
            status, gpus = _status(right)
        if status is not None and current and (gpu_row or message_target is None):
            result = DcgmTestResult(test=current[0].test, category=category, status=status, gpus=gpus)
            report.results.append(result)
            current.append(result)
            continue
        if message_target is not None and right:
            _attach(current, message_target[0], message_target[1], right, continuation=True)
    _drop_summary_rows(report)
    if not report.results:
        report.warnings.append("no dcgmi diag results found")
    return report


def _attach(results: list[DcgmTestResult], kind: str, gpus: list[int] | None, text: str, *, continuation: bool = False) -> None:
    """Add warning/info text to the result it belongs to (the failed GPU's row when known)."""
    if not results or not text:
        return
    target = results[-1]
    candidates = [r for r in results if r.status in ("Fail", "Warn")] or results
    if gpus:
        for result in candidates:
            if result.gpus and set(gpus) & set(result.gpus):
                target = result
                break
        else:
            target = candidates[-1]
    else:
        target = candidates[-1]
    bucket = target.info if kind == "info" else target.messages
    if continuation and bucket:
        bucket[-1] = f"{bucket[-1]} {text}".strip()
    else:
        bucket.append(text)


def _drop_summary_rows(report: DcgmReport) -> None:
    """A DCGM 4.x summary row without GPUs is redundant once per-GPU rows follow it."""
    kept: list[DcgmTestResult] = []
    for index, result in enumerate(report.results):
        following = report.results[index + 1] if index + 1 < len(report.results) else None
        if (result.gpus is None and following is not None and following.test == result.test
                and following.gpus is not None and not result.messages):
            continue
        kept.append(result)
    report.results = kept


# --- entry points ----------------------------------------------------------------------------


def parse_dcgm(text: str) -> DcgmReport:
    """Parse dcgmi diag output (JSON or table, bare or inside a pod log)."""
    if not isinstance(text, str):
        text = bytes(text).decode("utf-8", errors="replace")
    stripped = "\n".join(split_k8s_prefix(line)[1] for line in text.splitlines())
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end and ("Diagnostic" in stripped or "test_categories" in stripped):
        try:
            data = json.loads(stripped[start : end + 1])
        except (ValueError, RecursionError):
            data = None
        if isinstance(data, dict):
            return _parse_json(data)
    report = _parse_text(stripped)
    if not report.results and "{" in stripped:
        report.warnings.append("the JSON output could not be read")
    return report


def dcgm_failures(report: DcgmReport, *, node: str | None = None) -> list[dict]:
    """One entry per failed (GPU, test): ``{gpu, test, message}`` (+ ``node`` when given).

    ``gpu`` is None for a test that is not per GPU (deployment checks such as the CUDA
    library) or failed on all GPUs.
    """
    out: list[dict] = []
    for result in report.results:
        if result.status != "Fail":
            continue
        message = "; ".join(result.messages) or f"{result.test} failed"
        for gpu in result.gpus or [None]:
            entry = {"gpu": gpu, "test": result.test, "message": message}
            if node is not None:
                entry["node"] = node
            out.append(entry)
    return out


def dcgm_failure_reason(report: DcgmReport, *, max_chars: int = 1000) -> str | None:
    """A one-paragraph reason for a failed-node entry, or None when nothing failed."""
    failures = dcgm_failures(report)
    if not failures:
        return None
    parts = []
    for failure in failures:
        where = f"GPU {failure['gpu']}" if failure["gpu"] is not None else "node"
        parts.append(f"{failure['test']} failed on {where}: {failure['message']}")
    text = "; ".join(parts)
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."
