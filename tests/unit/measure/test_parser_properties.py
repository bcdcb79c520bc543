"""Property tests: every parser is total over mutated real tool outputs.

Real outputs from ``tests/data/fixtures`` are mutated (hostile tokens swapped in,
lines cut, duplicated, deleted or inserted, JSON values replaced) and fed to every
parser and measurement path. Property: no exception escapes but the project's own
(``ManifestError``/``UserError`` where a function documents it), and what the
controller would write as a measurement status is valid for the API server's schema,
so a hostile log can never wedge a Job on a refused status write.
Each test runs a fixed number of examples (derandomized) to keep CI time bounded.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nvcre.api.measurement import BandwidthMeasurementStatus
from nvcre.controller.measurements import _read_bandwidth, read_goodput
from nvcre.errors import ManifestError, UserError
from nvcre.measure.dcgm import dcgm_failure_reason, dcgm_failures, parse_dcgm
from nvcre.measure.failures import failure_excerpt, log_tail
from nvcre.measure.logprofile import default_log_profiles, load_log_profile
from nvcre.measure.logtext import format_timestamp, parse_timestamp
from nvcre.measure.nccl import bandwidth_summary, nccl_failure_reason, parse_bandwidth_log, parse_nccl_log
from nvcre.measure.training import measure_training_log, parse_training_log

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "fixtures"
def _outputs(folder: str) -> list[Path]:
    """The tool outputs of a fixture folder (case folders hold input_logs*.txt beside expected.json)."""
    return sorted(p for p in (FIXTURES / folder).rglob("*") if p.is_file() and p.name != "expected.json")


NCCL = _outputs("nccl")
DCGM = _outputs("dcgm")
TRAINING = _outputs("training")
PROFILES = default_log_profiles()

PROPERTY = settings(max_examples=80, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

HOSTILE_TOKENS = [
    "1e999", "-1e999", "nan", "inf", "-inf", "-1", "-0", "0x10", "9" * 5000, "1" * 40 + ".5", "", " ", "|", "||",
    "#", "{", "}", "[", "]", "N/A", "\x00", "\ufffd", "é", "1,5", "1.2.3", "+", "--", "Rank", "GPU", ":",
    "Fail", "Pass", "Error:", "NCCL WARN", "2026-13-45T99:99:99Z", "2026-01-01T00:00:00+99:99",
    "2026-01-01T00:00:00+24:00", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+01:00", "null", "true", '"', "'", "\\", "%s",
]


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


@st.composite
def mutated_text(draw, paths: list[Path]) -> str:
    """A real output with line- and token-level mutations."""
    lines = _read(draw(st.sampled_from(paths))).splitlines()
    for _ in range(draw(st.integers(1, 8))):
        if not lines:
            lines = [""]
        index = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["token", "token", "token", "cut", "delete", "duplicate", "insert", "truncate"]))
        line = lines[index]
        if action == "token":
            tokens = line.split(" ")
            spot = draw(st.integers(0, max(0, len(tokens) - 1)))
            tokens[spot] = draw(st.sampled_from(HOSTILE_TOKENS) | st.text(max_size=12))
            lines[index] = " ".join(tokens)
        elif action == "cut":
            lines[index] = line[: draw(st.integers(0, len(line)))]
        elif action == "delete":
            del lines[index]
        elif action == "duplicate":
            lines[index:index] = [line] * draw(st.integers(1, 3))
        elif action == "insert":
            lines.insert(index, draw(st.text(max_size=80) | st.sampled_from(HOSTILE_TOKENS)))
        else:
            lines = lines[:index]
    return "\n".join(lines)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20) | st.sampled_from(HOSTILE_TOKENS),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, sub in value.items():
            yield from _paths(sub, prefix + (key,))
    elif isinstance(value, list):
        for index, sub in enumerate(value):
            yield from _paths(sub, prefix + (index,))


def _replace(value, path, new):
    if not path:
        return new
    value[path[0]] = _replace(value[path[0]], path[1:], new)
    return value


@st.composite
def mutated_json(draw, base) -> object:
    """A real JSON document with some values (at any depth) replaced by hostile ones."""
    data = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 5))):
        paths = list(_paths(data))
        data = _replace(data, draw(st.sampled_from(paths)), draw(JSON_VALUES))
    return data


def _json_fixtures(paths: list[Path]) -> list[object]:
    out = []
    for path in paths:
        try:
            out.append(json.loads(_read(path)))
        except ValueError:
            continue
    return out


NCCL_JSON = _json_fixtures(NCCL)
DCGM_JSON = _json_fixtures(DCGM)


def _check_bandwidth(text: str) -> None:
    result = parse_nccl_log(text)
    bandwidth_summary(result)
    nccl_failure_reason(result)
    reading = _read_bandwidth(text)  # the unguarded path: totality is the parser's, not a try/except's
    if reading.ok:
        BandwidthMeasurementStatus.model_validate(reading.status)  # the status write would be accepted
    else:
        assert reading.note == "NoDataCollected" and reading.message


@PROPERTY
@given(mutated_text(NCCL))
def test_nccl_text_parser_is_total(text):
    _check_bandwidth(text)


@PROPERTY
@given(st.sampled_from(NCCL_JSON).flatmap(mutated_json))
def test_nccl_json_parser_is_total(data):
    _check_bandwidth(json.dumps(data))


@PROPERTY
@given(mutated_text(DCGM))
def test_dcgm_parser_is_total(text):
    report = parse_dcgm(text)
    dcgm_failures(report, node="n1")
    dcgm_failure_reason(report)


@PROPERTY
@given(st.sampled_from(DCGM_JSON).flatmap(mutated_json))
def test_dcgm_json_parser_is_total(data):
    report = parse_dcgm(json.dumps(data))
    dcgm_failures(report)
    dcgm_failure_reason(report)


@PROPERTY
@given(mutated_text(NCCL + DCGM + TRAINING))
def test_failure_excerpt_and_tail_are_total(text):
    excerpt = failure_excerpt(text)
    assert excerpt is None or len(excerpt) <= 1000
    assert len(log_tail(text).encode("utf-8")) <= 32 * 1024


@PROPERTY
@given(mutated_text(TRAINING), st.sampled_from(PROFILES))
def test_training_parser_and_goodput_are_total(text, profile):
    parse_training_log(text, profile)
    measure_training_log([text, text], profile)
    reading = read_goodput(text, profile, prior=[text])
    assert reading.ok or reading.note in ("NoDataCollected", "LogsUnavailable")


@PROPERTY
@given(mutated_text(NCCL), st.sampled_from([p for p in PROFILES if "bandwidthResult" in (p["spec"].get("patterns") or {})]
                                            or PROFILES))
def test_bandwidth_log_with_a_profile_is_total(text, profile):
    parse_bandwidth_log(text, load_log_profile(profile))


@PROPERTY
@given(st.sampled_from(PROFILES).flatmap(mutated_json))
def test_logprofile_loader_raises_only_manifest_errors(obj):
    try:
        load_log_profile(obj)
    except ManifestError:
        pass


@PROPERTY
@given(JSON_VALUES)
def test_logprofile_loader_on_anything(obj):
    try:
        load_log_profile(obj)
    except ManifestError:
        pass


@PROPERTY
@given(st.sampled_from(PROFILES).flatmap(mutated_json))
def test_logprofile_api_model_raises_only_manifest_errors(obj):
    from nvcre.api.load import parse_object

    try:
        parse_object(obj)
    except UserError:
        pass


@pytest.mark.parametrize("pattern", ["(?=x)", r"(a)\1", r"\Z", "(?<!a)b", "a{2000}"])
def test_python_only_regexes_are_refused_by_the_api_model_too(pattern):
    from nvcre.api.load import parse_object

    obj = copy.deepcopy(next(p for p in PROFILES if p["spec"].get("patterns")))
    key = next(iter(obj["spec"]["patterns"]))
    obj["spec"]["patterns"][key] = {"regex": pattern}
    with pytest.raises(ManifestError) as err:
        parse_object(obj)
    assert err.value.field.endswith(".regex")


@PROPERTY
@given(st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:?[0-9]{2})?\Z"))
def test_a_timestamp_is_a_utc_time_or_none(text):
    """Any stamp of the right shape, including out-of-range dates and zone offsets of a day
    or more, parses to a time that converts to UTC, or to None: never an exception."""
    stamp = parse_timestamp(text)
    if stamp is not None:
        assert format_timestamp(stamp).endswith("Z")


def test_one_garbled_zone_does_not_cost_the_goodput_of_its_log():
    """A training line whose zone offset is out of range is skipped like any garbled stamp;
    the other lines still measure (it used to raise and drop the whole measurement)."""
    profile = next(p for p in PROFILES if p["metadata"]["name"] == "nemo")
    sample = _read(FIXTURES / "training" / "nvcre-nemo2-goodput-worker0.txt")
    good = parse_training_log(sample, profile)
    assert good.steps, "the sample must measure something for the comparison to mean anything"
    spoiled = parse_training_log("2026-02-05T16:03:53+99:99 hello\n" + sample, profile)
    assert spoiled == good
