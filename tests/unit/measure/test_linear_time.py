"""Linear time: 1 MB of pathological lines through every parser, under a stated time.

Each body is built from lines that made the old patterns backtrack (long digit runs
before a non-digit, runs of bars, spaced section names, nested error tokens, long
runs of spaces around timestamps), at full line length and as one 1 MB line. The
limit, 4 s per parser and MB, is generous for a loaded CI machine; the quadratic
patterns took 16-28 s for a single 20 kB line.
"""

from __future__ import annotations

import time

import pytest

from nvcre.controller.measurements import read_bandwidth
from nvcre.measure.dcgm import parse_dcgm
from nvcre.measure.failures import failure_excerpt
from nvcre.measure.logprofile import default_log_profiles
from nvcre.measure.logtext import parse_timestamp
from nvcre.measure.nccl import parse_nccl_log
from nvcre.measure.training import parse_training_log

MB = 1 << 20
LIMIT_S = 4.0
LINES = [
    "1" * 8000 + "!",  # nccl number pattern
    "   8   2   float   sum   -1   " + "1" * 8000 + "x",
    "|" * 8000 + "x",  # dcgm row pattern
    "| " * 4000 + "x",
    "+-- " + "a " * 4000 + "x",  # dcgm section name
    "Error." * 1300 + " no colon",  # python error pattern
    "Error " * 1300 + ":",
    "# Rank " + "1" * 8000,
    "# nThread 1 nGpus " + "9" * 8000,
    "NCCL INFO Using network " + " " * 8000 + "x",
    "2026-01-01T00:00:00" + " " * 8000 + "x",
    "[1,0]<stdout>:" + "1 " * 4000,
    "iteration " + "9" * 8000 + "/ 100 | elapsed time per iteration (ms): " + "1" * 4000,
]


def _bodies():
    for line in LINES:
        yield line[:20], "\n".join([line] * (MB // (len(line) + 1)))
    yield "one 1 MB line", "1" * MB + "!"


PARSERS = {
    "nccl": parse_nccl_log,
    "read_bandwidth": read_bandwidth,
    "dcgm": parse_dcgm,
    "failure_excerpt": failure_excerpt,
    "training": lambda text: parse_training_log(text, default_log_profiles()[0]),
}


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_a_megabyte_of_pathological_lines_parses_in_linear_time(name):
    parse = PARSERS[name]
    for label, body in _bodies():
        start = time.perf_counter()
        parse(body)
        elapsed = time.perf_counter() - start
        assert elapsed < LIMIT_S, f"{name} took {elapsed:.2f} s on 1 MB of {label!r}"


def test_timestamp_parser_is_linear_on_long_space_runs():
    start = time.perf_counter()
    for _ in range(100):
        parse_timestamp("2026-01-01T00:00:00" + " " * 8000 + "x")
    assert time.perf_counter() - start < LIMIT_S
