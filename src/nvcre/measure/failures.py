"""Why did a workload fail? Log tails and a short, human reason from any workload log.

A failed Job records the end of the failing container's log (``failureLog.tail``:
the last 800 lines, at most 32 KiB, keeping the end; ``dcgmi diag --json`` ends with
braces, so a line count alone is not enough) and a one-line reason for the failed
node entry. The reason is looked for in what the tools print when they break:
NCCL errors, dcgmi failures, Python tracebacks, CUDA and out-of-memory errors.
"""

from __future__ import annotations

import re

from nvcre.measure.dcgm import dcgm_failure_reason, parse_dcgm
from nvcre.measure.logtext import MAX_LINE_CHARS, split_k8s_prefix
from nvcre.measure.nccl import nccl_failure_reason, parse_nccl_log

TAIL_LINES = 800
TAIL_BYTES = 32 * 1024

_PYTHON_ERROR = re.compile(r"^(?:[A-Za-z_][\w.]*)?(?:Error|Exception|Interrupt)\b[^:\n]*:\s*\S.*$")
_GENERIC = re.compile(
    r"CUDA error|CUDA out of memory|OutOfMemoryError|out of memory|Killed|"
    r"Segmentation fault|core dumped|NCCL error|ncclInternalError|ncclSystemError|"
    r"RuntimeError|Watchdog caught collective operation timeout|timed out",
    re.IGNORECASE,
)


def log_tail(text: str | None, *, max_lines: int = TAIL_LINES, max_bytes: int = TAIL_BYTES) -> str:
    """The last ``max_lines`` lines of a pod log, then exactly its last ``max_bytes`` bytes.

    As the reference records ``failureLog.tail``: the byte cap falls where it falls,
    mid-line included, and a trailing newline is kept. Only a UTF-8 character split
    by the cap is dropped (its continuation bytes alone are not text), so the tail
    is never more than ``max_bytes`` and at most 3 bytes less.
    """
    if not text or max_lines <= 0 or max_bytes <= 0:
        return ""
    trailing = text.endswith("\n")
    lines = (text[:-1] if trailing else text).split("\n")
    tail = "\n".join(lines[-max_lines:]) + ("\n" if trailing else "")
    data = tail.encode("utf-8", "replace")
    if len(data) <= max_bytes:
        return tail
    cut = data[-max_bytes:]
    start = 0
    while start < min(3, len(cut)) and cut[start] & 0xC0 == 0x80:
        start += 1
    return cut[start:].decode("utf-8", "replace")


def failure_excerpt(text: str, *, max_chars: int = 1000) -> str | None:
    """A short reason found in a workload log, or None when nothing in it looks like one.

    Tried in order: dcgmi failures (GPU and test), NCCL/nccl-tests errors (with the
    host), the last Python exception line, then the last line mentioning a CUDA,
    memory, NCCL or timeout error.
    """
    if not text:
        return None
    if "Diagnostic" in text and ("Fail" in text or "fail" in text):
        reason = dcgm_failure_reason(parse_dcgm(text), max_chars=max_chars)
        if reason:
            return reason
    if "NCCL" in text or "#wrong" in text or "Out of bounds" in text:
        reason = nccl_failure_reason(parse_nccl_log(text), max_chars=max_chars)
        if reason:
            return reason
    contents = [split_k8s_prefix(line)[1].strip() for line in text.splitlines()]
    for line in reversed(contents):
        if ":" in line and len(line) <= MAX_LINE_CHARS and _PYTHON_ERROR.match(line):
            return line[:max_chars]
    for line in reversed(contents):
        if line and _GENERIC.search(line[:MAX_LINE_CHARS]):
            return line[:max_chars]
    return None
