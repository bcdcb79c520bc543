"""nccl-tests output -> rows, header facts, transport, errors; and the bandwidth summary.

The parser reads every format nccl-tests has printed over the years (with or
without the ``redop`` and ``root`` columns, ``#wrong`` or ``error``, one or both
column groups), the JSON report of ``-J``, and what Kubernetes adds around it
(kubelet timestamp prefixes, interleaved ``NCCL INFO`` lines, shell traces). It
never raises on log content: a truncated or garbled log gives what could be read
plus warnings, so the controller can still judge and explain.

Judging rules follow the reference: the threshold metric is the highest per-size
average bus bandwidth; the report row is the largest message size.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field

from nvcre.measure.logtext import MAX_LINE_CHARS, split_k8s_prefix


@dataclass
class NcclSample:
    """One column group of a row (out-of-place or in-place)."""

    time_us: float | None
    alg_bw: float | None  # GB/s
    bus_bw: float | None  # GB/s
    wrong: int | None  # None when the tool printed N/A (validation off)


@dataclass
class NcclRow:
    """One data row: a message size measured once."""

    size_bytes: int
    count: int | None
    dtype: str | None
    redop: str | None
    root: int | None
    out_of_place: NcclSample
    in_place: NcclSample | None
    line: int  # 1-based line number in the log (0 for JSON)
    timestamp: str | None = None  # kubelet prefix, when present


@dataclass
class NcclDevice:
    """One ``# Rank N ... on HOST device D [BUS] NAME`` header line."""

    rank: int
    group: int | None
    pid: int | None
    host: str
    device: int | None
    bus_id: str | None
    name: str | None


@dataclass
class NcclError:
    """A line that says the run went wrong, with the host that printed it when known."""

    line: int
    host: str | None
    message: str


@dataclass
class SizeStats:
    """Per-size averages over every row of that size (out-of-place columns)."""

    size_bytes: int
    alg_bw: float
    bus_bw: float
    samples: int
    in_place_alg_bw: float | None = None
    in_place_bus_bw: float | None = None
    wrong: int = 0


@dataclass
class NcclResult:
    """Everything read from one nccl-tests log."""

    rows: list[NcclRow] = field(default_factory=list)
    test_name: str | None = None  # e.g. all_reduce_perf_mpi
    tests: list[str] = field(default_factory=list)  # every "Collective test starting" name
    tests_version: str | None = None  # nccl-tests version
    nccl_version: str | None = None  # NCCL library version (from NCCL INFO or JSON)
    params: dict[str, int | float] = field(default_factory=dict)  # nThread, nGpus, minBytes, ...
    devices: list[NcclDevice] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)  # header column names, when printed
    avg_bus_bandwidth: float | None = None
    out_of_bounds: int | None = None
    out_of_bounds_ok: bool | None = None
    transports: list[str] = field(default_factory=list)
    concluded: bool = False  # the "Collective test concluded" line or the summary was seen
    errors: list[NcclError] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    format: str = "text"  # text | json

    @property
    def collective(self) -> str | None:
        """The collective name as the ``nccl_test`` label uses it (``all_reduce``)."""
        if not self.test_name:
            return None
        return re.sub(r"_perf(_mpi)?$", "", self.test_name)

    @property
    def ranks(self) -> int:
        return len(self.devices)

    @property
    def hosts(self) -> list[str]:
        """Distinct hosts of the ranks, in rank order."""
        seen: dict[str, None] = {}
        for device in self.devices:
            seen.setdefault(device.host, None)
        return list(seen)

    @property
    def wrong_total(self) -> int:
        total = 0
        for row in self.rows:
            for sample in (row.out_of_place, row.in_place):
                if sample is not None and sample.wrong:
                    total += sample.wrong
        return total

    def size_stats(self) -> list[SizeStats]:
        return size_stats(self)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["collective"] = self.collective
        return data


# --- line classification -------------------------------------------------------------

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Unambiguous (one way to match each digit), so a long digit run costs linear time.
_NUMBER = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_MAX_NUMBER_CHARS = 40  # longer tokens are not numbers nccl-tests prints
_MAX_INT_DIGITS = 18  # sizes and counts fit an int64 (the status schema's integer)
_PARAM_PATTERNS = {
    "nThread": re.compile(r"nThread\s+(\d+)"),
    "nGpus": re.compile(r"nGpus\s+(\d+)"),
    "minBytes": re.compile(r"minBytes\s+(\d+)"),
    "maxBytes": re.compile(r"maxBytes\s+(\d+)"),
    "step": re.compile(r"step:\s*(\d+(?:\.\d+)?)"),
    "warmupIters": re.compile(r"warmup iters:\s*(\d+)"),
    "iters": re.compile(r"(?<!warmup )(?<!agg )iters:\s*(\d+)"),
    "aggIters": re.compile(r"agg iters:\s*(\d+)"),
    "validation": re.compile(r"validation:\s*(\d+)"),
    "graph": re.compile(r"graph:\s*(\d+)"),
}
_DEVICE = re.compile(
    r"Rank\s+(\d+)(?:\s+Group\s+(\d+))?\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$"
)
_TESTS_VERSION = re.compile(r"nccl-tests version\s+(\S+)")
_TEST_START = re.compile(r"Collective test starting:\s*(\S+)")
_TEST_NAME_IN_COMMAND = re.compile(r"\b([a-z_]+_perf(?:_mpi)?)\b")
_AVG_BUSBW = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)")
_OOB = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(\w+)?")
_USING_NETWORK = re.compile(r"NCCL INFO Using network (\S.*)$")  # greedy: a lazy group before \s*$ is quadratic
# NUL, C0 controls other than tab, CR and ESC (colour codes), DEL, and U+FFFD (bytes that were
# not UTF-8): a line holding them is binary garbage, named by line rather than silently dropped.
_BINARY = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f\ufffd]")
_VIA_NET = re.compile(r"via NET/([A-Za-z][A-Za-z0-9_]*)")
_NCCL_VERSION = re.compile(r"NCCL INFO NCCL version (\S+)")
_HOST_PREFIX = re.compile(r"^\s*([^\s:]+):\d+:\d+\s+\[[^\]]*\]\s+NCCL\s+(?:WARN|INFO)")
# Lines that mean the run (not the parser) went wrong.
_FAILURE = re.compile(
    r"NCCL WARN|unhandled (?:system|cuda|internal) error|Test (?:NCCL )?failure|NCCL failure|"
    r"Cuda failure|CUDA failure|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|"
    r"ncclRemoteError|remote process exited|Segmentation fault|Bus error|"
    r"mpirun noticed that process|MPI_ABORT was invoked|exited on signal|"
    r"Out of bounds values\s*:\s*[1-9]\d*\s*FAILED"
)


def _to_number(token: str) -> float | None:
    """A float, or None for N/A-style placeholders; raises ValueError for other text."""
    if token in ("N/A", "n/a", "-"):
        return None
    if len(token) > _MAX_NUMBER_CHARS or not _NUMBER.match(token):
        raise ValueError(token)
    value = float(token)
    if not math.isfinite(value):
        raise ValueError(token)  # 1e999 overflows: garbled, not a measurement
    return value


def _small_int(text: str | None, default):
    """Digits that fit an int64, else ``default`` (a 5000-digit run must not raise)."""
    return int(text) if text is not None and _is_int_token(text) else default


def _is_int_token(token: str) -> bool:
    """A non-negative integer that fits an int64 (nccl-tests never prints a sign)."""
    return 0 < len(token) <= _MAX_INT_DIGITS and token.isascii() and token.isdigit()


def _sample(values: list[float | None]) -> NcclSample:
    padded = list(values) + [None] * (4 - len(values))
    wrong = padded[3]
    if wrong is not None and wrong > 2**62:
        wrong = float(2**62)
    return NcclSample(
        time_us=padded[0],
        alg_bw=padded[1],
        bus_bw=padded[2],
        wrong=int(wrong) if wrong is not None and not math.isnan(wrong) else None,
    )


class _TextParser:
    """Line-by-line state for the text format (kept in one place so it reads top-down)."""

    def __init__(self) -> None:
        self.result = NcclResult()
        self.header_has_root: bool | None = None
        self.header_has_redop: bool | None = None
        self.transports: set[str] = set()
        self.via_transports: set[str] = set()
        self.command_test_name: str | None = None

    def feed(self, number: int, raw: str) -> None:
        if len(raw) > MAX_LINE_CHARS:
            self.result.warnings.append(f"line {number}: longer than {MAX_LINE_CHARS} characters; read only its start")
            raw = raw[:MAX_LINE_CHARS]
        stamp, line = split_k8s_prefix(raw.rstrip("\r\n"))
        # mpirun --tag-output prefixes: "[1,0]<stdout>:" then the content.
        if line.startswith("[") and "]<std" in line[:24]:
            line = line.split(">:", 1)[-1]
        text = line.strip()
        if not text:
            return
        if _BINARY.search(text):
            self.result.warnings.append(f"line {number}: binary data (control characters), not text; line skipped")
            return
        first = text[0]
        if first == "#":
            self._header(text)
            return
        if first.isdigit():
            row = self._row(text, number, stamp)
            if row is not None:
                self.result.rows.append(row)
                return
        self._other(text, number)

    # -- header and summary lines
    def _header(self, text: str) -> None:
        body = text.lstrip("#").strip()
        result = self.result
        if not body:
            return
        if body.startswith("nccl-tests version"):
            match = _TESTS_VERSION.search(body)
            if match:
                result.tests_version = match.group(1)
            return
        match = _TEST_START.search(body)
        if match:
            name = match.group(1)
            result.tests.append(name)
            result.test_name = result.test_name or name
            return
        if body.startswith("Collective test concluded"):
            result.concluded = True
            return
        if "nThread" in body and "nGpus" in body:
            for key, pattern in _PARAM_PATTERNS.items():
                found = pattern.search(body)
                if found and len(found.group(1)) <= _MAX_NUMBER_CHARS:
                    value = float(found.group(1))
                    result.params[key] = int(value) if value.is_integer() else value
            return
        match = _DEVICE.search(body)
        if match:
            rank, group, pid, host, device, bus, name = match.groups()
            result.devices.append(
                NcclDevice(
                    rank=_small_int(rank, len(result.devices)),
                    group=_small_int(group, None),
                    pid=_small_int(pid, None),
                    host=host[:253],
                    device=_small_int(device, None),
                    bus_id=bus or None,
                    name=name.strip() or None,
                )
            )
            return
        tokens = body.split()
        if tokens and tokens[0] == "size" and "count" in tokens:
            result.columns = tokens
            self.header_has_root = "root" in tokens
            self.header_has_redop = "redop" in tokens
            return
        match = _OOB.search(body)
        if match:
            result.out_of_bounds = _small_int(match.group(1), 2**62)
            status = (match.group(2) or "").upper()
            result.out_of_bounds_ok = status == "OK" if status else result.out_of_bounds == 0
            if result.out_of_bounds:
                result.errors.append(NcclError(0, None, f"# {body}"))
            return
        match = _AVG_BUSBW.search(body)
        if match:
            try:
                result.avg_bus_bandwidth = _to_number(match.group(1))
            except ValueError:
                result.warnings.append(f"unreadable average bus bandwidth {match.group(1)[:40]!r}")
            result.concluded = True

    # -- data rows
    def _row(self, text: str, number: int, stamp: str | None) -> NcclRow | None:
        tokens = text.split()
        if len(tokens) < 2 or not _is_int_token(tokens[0]) or not _is_int_token(tokens[1]):
            return None
        if len(tokens) < 5 or not _IDENT.match(tokens[2]):
            # Starts like a data row (size, count) but stops short: a cut or garbled row.
            if len(tokens) < 3 or _IDENT.match(tokens[2]):
                self.result.warnings.append(f"line {number}: incomplete nccl-tests row skipped: {text[:120]!r}")
            return None
        index = 3
        redop = None
        if index < len(tokens) and _IDENT.match(tokens[index]) and tokens[index] not in ("N/A",):
            redop = tokens[index]
            index += 1
        rest = tokens[index:]
        values: list[float | None] = []
        garbled = False
        for token in rest:
            try:
                values.append(_to_number(token))
            except ValueError:
                garbled = True
                break
        root: int | None = None
        count = len(values)
        if count in (5, 9) and not garbled:
            has_root = True
        elif count in (4, 8) and not garbled:
            has_root = False
        elif self.header_has_root is not None:
            has_root = self.header_has_root
        else:
            has_root = bool(rest) and _is_int_token(rest[0].lstrip("-")) and count % 4 != 0
        if has_root:
            if not values or values[0] is None:
                self.result.warnings.append(f"line {number}: row without a readable root column skipped")
                return None
            root = int(values[0])
            values = values[1:]
        if len(values) < 3 or values[1] is None or values[2] is None:
            self.result.warnings.append(f"line {number}: incomplete nccl-tests row skipped: {text[:120]!r}")
            return None
        if any(v is not None and v < 0 for v in values):
            self.result.warnings.append(f"line {number}: negative time or bandwidth, row skipped: {text[:120]!r}")
            return None
        out_of_place = _sample(values[:4])
        in_place = _sample(values[4:8]) if len(values) >= 7 else None
        if garbled or len(values) not in (4, 8):
            self.result.warnings.append(f"line {number}: partial nccl-tests row read as far as it goes: {text[:120]!r}")
        return NcclRow(
            size_bytes=int(tokens[0]),
            count=int(tokens[1]),
            dtype=tokens[2],
            redop=redop,
            root=root,
            out_of_place=out_of_place,
            in_place=in_place,
            line=number,
            timestamp=stamp,
        )

    # -- NCCL INFO/WARN, command lines, failures
    def _other(self, text: str, number: int) -> None:
        result = self.result
        if "NCCL INFO" in text:
            match = _USING_NETWORK.search(text)
            if match:
                self.transports.add(_normalize_transport(match.group(1).rstrip()[:64]))
                return
            if "via NET/" in text:
                match = _VIA_NET.search(text)
                if match:
                    self.via_transports.add(_normalize_transport(match.group(1)))
                return
            if result.nccl_version is None and "NCCL version" in text:
                match = _NCCL_VERSION.search(text)
                if match:
                    result.nccl_version = match.group(1)
                return
        if _FAILURE.search(text):
            host_match = _HOST_PREFIX.match(text)
            result.errors.append(NcclError(number, host_match.group(1) if host_match else None, text[:500]))
            return
        if self.command_test_name is None and "_perf" in text:
            match = _TEST_NAME_IN_COMMAND.search(text)
            if match:
                self.command_test_name = match.group(1)

    def finish(self) -> NcclResult:
        result = self.result
        names = self.transports or self.via_transports
        result.transports = sorted(names)
        if result.test_name is None:
            result.test_name = self.command_test_name
        if not result.rows:
            result.warnings.append("no nccl-tests data rows found")
        elif not result.concluded:
            result.warnings.append("the log ends before the nccl-tests summary (truncated or still running)")
        return result


def _normalize_transport(name: str) -> str:
    """``IBext_v11`` is the IB plugin; other names are kept as NCCL printed them."""
    name = name.strip()
    if re.match(r"^IBext(_v\d+)?$", name):
        return "IB"
    return name


def parse_nccl_log(text: str) -> NcclResult:
    """Parse nccl-tests output (text or ``-J`` JSON), never raising on its content."""
    if not isinstance(text, str):
        text = text.decode("utf-8", errors="replace") if isinstance(text, (bytes, bytearray)) else str(text)
    stripped = text.lstrip()
    if stripped.startswith("{"):
        parsed = _parse_json_report(stripped)
        if parsed is not None:
            return parsed
    parser = _TextParser()
    for number, raw in enumerate(text.splitlines(), start=1):
        parser.feed(number, raw)
    result = parser.finish()
    if not result.rows and '"results"' in text:
        # A JSON report inside a pod log (kubelet prefixes, shell lines around it).
        body = "\n".join(split_k8s_prefix(line)[1] for line in text.splitlines())
        start, end = body.find("{"), body.rfind("}")
        if 0 <= start < end:
            parsed = _parse_json_report(body[start : end + 1])
            if parsed is not None:
                return parsed
    return result


def _parse_json_report(text: str) -> NcclResult | None:
    """The ``-J`` report: version, config (params, devices), results, summary."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return None
    result = NcclResult(format="json")
    args = data.get("args") or []
    if args and isinstance(args[0], str):
        result.test_name = args[0].rsplit("/", 1)[-1]
        result.tests = [result.test_name]
    version = data.get("nccl_version")
    if version is not None:
        result.nccl_version = _nccl_version_text(version)
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    keys = {
        "nthreads": "nThread",
        "ngpus": "nGpus",
        "minimum_bytes": "minBytes",
        "maximum_bytes": "maxBytes",
        "step_factor": "step",
        "warmup_iters": "warmupIters",
        "iterations": "iters",
        "aggregated_iterations": "aggIters",
        "validation": "validation",
        "graph": "graph",
    }
    for source, target in keys.items():
        value = config.get(source)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 2**63:
            result.params[target] = value
    for device in _list(config.get("devices")):
        if not isinstance(device, dict):
            continue
        result.devices.append(
            NcclDevice(
                rank=_int_or(device.get("rank"), len(result.devices)),
                group=_int_or(device.get("group"), None),
                pid=_int_or(device.get("pid"), None),
                host=device.get("hostname")[:253] if isinstance(device.get("hostname"), str) else "",
                device=_int_or(device.get("device"), None),
                bus_id=_text_or_none(device.get("device_hex")),
                name=_text_or_none(device.get("device_info")),
            )
        )
    for index, entry in enumerate(data["results"]):
        row = _json_row(entry)
        if row is None:
            result.warnings.append(f"results[{index}]: unreadable entry skipped")
        else:
            result.rows.append(row)
    oob = data.get("out_of_bounds") or {}
    if isinstance(oob, dict) and "count" in oob:
        result.out_of_bounds = _int_or(oob.get("count"), None)
        result.out_of_bounds_ok = str(oob.get("okay", "")).lower() in ("true", "1", "ok") or result.out_of_bounds == 0
    avg = data.get("average_bus_bandwidth") or {}
    if isinstance(avg, dict) and isinstance(avg.get("bandwidth"), (int, float)) and not isinstance(avg["bandwidth"], bool):
        try:
            number = float(avg["bandwidth"])
        except OverflowError:
            number = math.nan
        if math.isfinite(number):
            result.avg_bus_bandwidth = number
        else:
            result.warnings.append("unreadable average bus bandwidth in the JSON report")
    result.concluded = "end_time" in data or result.avg_bus_bandwidth is not None
    for message in _list(data.get("errors")):
        if isinstance(message, str) and message.strip():
            result.errors.append(NcclError(0, None, message.strip()[:500]))
    if not result.rows:
        result.warnings.append("no nccl-tests data rows found")
    return result


def _nccl_version_text(code: object) -> str:
    """22304 -> 2.23.4 (NCCL's MAJOR*10000 + MINOR*100 + PATCH encoding)."""
    if isinstance(code, int) and code >= 10000:
        return f"{code // 10000}.{(code % 10000) // 100}.{code % 100}"[:64]
    return str(code)[:64] if isinstance(code, (str, int, float)) else "unknown"


def _int_or(value: object, default):
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value if abs(value) < 2**63 else default
    try:
        number = float(str(value).strip()[:_MAX_NUMBER_CHARS])
    except (TypeError, ValueError):
        return default
    return int(number) if math.isfinite(number) and abs(number) < 2**63 else default


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _text_or_none(value: object) -> str | None:
    return value[:64] if isinstance(value, str) and value else None


def _json_row(entry: object) -> NcclRow | None:
    if not isinstance(entry, dict):
        return None
    size = _int_or(entry.get("size"), None)
    oop = entry.get("out_of_place")
    if size is None or size < 0 or not isinstance(oop, dict):
        return None

    def sample(group: dict) -> NcclSample:
        def num(key: str) -> float | None:
            value = group.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            try:
                number = float(value)
            except OverflowError:
                return None
            return number if math.isfinite(number) and number >= 0 else None

        wrong = num("nwrong")
        return NcclSample(num("time"), num("alg_bw"), num("bus_bw"), int(wrong) if wrong is not None else None)

    out_of_place = sample(oop)
    if out_of_place.alg_bw is None or out_of_place.bus_bw is None:
        return None
    inp = entry.get("in_place")
    return NcclRow(
        size_bytes=size,
        count=_int_or(entry.get("count"), None),
        dtype=_text_or_none(entry.get("type")),
        redop=_text_or_none(entry.get("redop")),
        root=_int_or(entry.get("root"), None),
        out_of_place=out_of_place,
        in_place=sample(inp) if isinstance(inp, dict) else None,
        line=0,
    )


# --- summaries ---------------------------------------------------------------------------


def size_stats(result: NcclResult) -> list[SizeStats]:
    """Average the rows of each message size; sizes in first-seen order (as the log ran)."""
    groups: dict[int, list[NcclRow]] = {}
    for row in result.rows:
        groups.setdefault(row.size_bytes, []).append(row)
    stats = []
    for size, rows in groups.items():
        alg = [r.out_of_place.alg_bw for r in rows if r.out_of_place.alg_bw is not None]
        bus = [r.out_of_place.bus_bw for r in rows if r.out_of_place.bus_bw is not None]
        ip_alg = [r.in_place.alg_bw for r in rows if r.in_place is not None and r.in_place.alg_bw is not None]
        ip_bus = [r.in_place.bus_bw for r in rows if r.in_place is not None and r.in_place.bus_bw is not None]
        wrong = sum(
            (s.wrong or 0) for r in rows for s in (r.out_of_place, r.in_place) if s is not None
        )
        stats.append(
            SizeStats(
                size_bytes=size,
                alg_bw=sum(alg) / len(alg) if alg else 0.0,
                bus_bw=sum(bus) / len(bus) if bus else 0.0,
                samples=len(rows),
                in_place_alg_bw=sum(ip_alg) / len(ip_alg) if ip_alg else None,
                in_place_bus_bw=sum(ip_bus) / len(ip_bus) if ip_bus else None,
                wrong=wrong,
            )
        )
    return stats


def bandwidth_results(result: NcclResult) -> list[dict]:
    """``BandwidthMeasurement.status.results``: ``{sizeBytes, algBW, busBW, samples}``, 2-decimal strings."""
    return [
        {"sizeBytes": s.size_bytes, "algBW": f"{s.alg_bw:.2f}", "busBW": f"{s.bus_bw:.2f}", "samples": s.samples}
        for s in size_stats(result)
    ]


def bandwidth_summary(result: NcclResult) -> dict:
    """What the status, the thresholds and the report need from one log.

    ``busBandwidthGBps``/``algBandwidthGBps`` are the highest per-size averages (the
    threshold rule); ``peak`` is the largest message size (the report rule). Values
    are the 2-decimal averages the status stores, so every consumer agrees.
    """
    stats = size_stats(result)
    sizes = sorted(stats, key=lambda s: s.size_bytes)
    rows = [
        {
            "sizeBytes": s.size_bytes,
            "size": format_size(s.size_bytes),
            "algBwGBps": round(s.alg_bw, 2),
            "busBwGBps": round(s.bus_bw, 2),
            "samples": s.samples,
        }
        for s in sizes
    ]
    summary: dict = {
        "busBandwidthGBps": max((r["busBwGBps"] for r in rows), default=None),
        "algBandwidthGBps": max((r["algBwGBps"] for r in rows), default=None),
        "peak": rows[-1] if rows else None,
        "sizes": rows,
        "transport": list(result.transports),
        "test": result.collective,
        "ranks": result.ranks or None,
        "rowCount": len(result.rows),
        "avgBusBandwidthGBps": result.avg_bus_bandwidth,
        "wrong": result.wrong_total,
        "complete": result.concluded,
        "warnings": list(result.warnings),
    }
    return summary


def nccl_failure_reason(result: NcclResult, *, max_lines: int = 5, max_chars: int = 1000) -> str | None:
    """A short excerpt saying why the run failed, or None when the log shows no failure.

    Failure lines (NCCL WARN, unhandled errors, test failures, MPI aborts) come first;
    data corruption (``#wrong`` > 0) is named too.
    """
    parts = []
    for error in result.errors[:max_lines]:
        where = f"{error.host}: " if error.host and error.host not in error.message[:80] else ""
        parts.append(f"{where}{error.message}".strip())
    if len(result.errors) > max_lines:
        parts.append(f"... and {len(result.errors) - max_lines} more error lines")
    if result.wrong_total:
        parts.append(f"{result.wrong_total} wrong values reported by nccl-tests validation (#wrong)")
    if not parts:
        return None
    text = "\n".join(parts)
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."


def failing_hosts(result: NcclResult) -> list[str]:
    """Hosts that printed a failure line (NCCL WARN etc.), sorted, for attributing a failure."""
    return sorted({e.host for e in result.errors if e.host})


_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")


def format_size(size_bytes: int) -> str:
    """Binary sizes the way reports print them: 8 -> '8 B', 1048576 -> '1 MB', 17179869184 -> '16 GB'."""
    value = float(size_bytes)
    unit = 0
    while value >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    text = f"{value:.0f}" if value.is_integer() else f"{value:.1f}".rstrip("0").rstrip(".")
    return f"{text} {_UNITS[unit]}"


def merge_bandwidth_results(previous: list[dict] | None, result: NcclResult) -> list[dict]:
    """Fold a new window of rows into provisional ``status.results`` (running averages).

    While a Job runs the controller reads the log in windows; each size keeps
    ``newAvg = (oldAvg*oldN + sum(new)) / (oldN + newN)``. New sizes are appended in
    first-seen order. The final read replaces all of this with ``bandwidth_results``.
    """
    merged: dict[int, dict] = {}
    for entry in previous or []:
        try:
            merged[int(entry["sizeBytes"])] = {
                "alg": float(entry["algBW"]), "bus": float(entry["busBW"]), "n": int(entry.get("samples") or 1)}
        except (KeyError, TypeError, ValueError):
            continue
    for stats in size_stats(result):
        old = merged.get(stats.size_bytes)
        if old is None:
            merged[stats.size_bytes] = {"alg": stats.alg_bw, "bus": stats.bus_bw, "n": stats.samples}
            continue
        total = old["n"] + stats.samples
        old["alg"] = (old["alg"] * old["n"] + stats.alg_bw * stats.samples) / total
        old["bus"] = (old["bus"] * old["n"] + stats.bus_bw * stats.samples) / total
        old["n"] = total
    return [
        {"sizeBytes": size, "algBW": f"{v['alg']:.2f}", "busBW": f"{v['bus']:.2f}", "samples": v["n"]}
        for size, v in merged.items()
    ]


def bandwidth_metrics_from_results(results: list[dict] | None) -> dict[str, float | None]:
    """Threshold inputs from ``BandwidthMeasurement.status.results`` (highest per-size average).

    Use only on a final measurement (Complete, reason JobSucceeded); anything else must
    leave the keys missing so the Job waits and then fails with MeasurementTimeout.
    """
    bus: list[float] = []
    alg: list[float] = []
    for entry in results or []:
        try:
            bus.append(float(entry["busBW"]))
            alg.append(float(entry["algBW"]))
        except (KeyError, TypeError, ValueError):
            continue
    return {"busBandwidthGBps": max(bus) if bus else None, "algBandwidthGBps": max(alg) if alg else None}


def parse_bandwidth_log(text: str, profile=None) -> NcclResult:
    """nccl-tests output read by the format-aware parser; for other tools, a profile's own
    ``bandwidthResult`` regex (named groups size, algBW, busBW) and ``networkTransport``.

    ``profile`` is a compiled ``LogProfile`` (see ``logprofile.load_log_profile``) or None.
    """
    result = parse_nccl_log(text)
    if profile is None:
        return result
    rows_pattern = profile.pattern("bandwidthResult")
    transport_pattern = profile.pattern("networkTransport")
    if result.rows and transport_pattern is None:
        return result
    found_transports = set(result.transports)
    custom_rows: list[NcclRow] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        stamp, line = split_k8s_prefix(raw)
        if not result.rows and rows_pattern is not None:
            match = rows_pattern.regex.search(line)
            if match:
                try:
                    size = int(match.group("size"))
                    alg_bw, bus_bw = float(match.group("algBW")), float(match.group("busBW"))
                except (TypeError, ValueError):
                    continue
                custom_rows.append(NcclRow(size, None, None, None, None, NcclSample(None, alg_bw, bus_bw, None),
                                           None, number, stamp))
                continue
        if transport_pattern is not None:
            match = transport_pattern.regex.search(line)
            if match and match.groupdict().get("transport"):
                found_transports.add(_normalize_transport(match.group("transport")))
    if custom_rows:
        result.rows = custom_rows
        result.warnings = [w for w in result.warnings if w != "no nccl-tests data rows found"]
    result.transports = sorted(found_transports)
    return result
