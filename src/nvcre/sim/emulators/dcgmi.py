"""``dcgmi diag -r N`` emulator: the text table or ``--json`` report of DCGM diagnostics.

Levels add tests the way DCGM does (1 deployment checks, 2 + PCIe and memory,
3 + diagnostic and stress, 4 + pulse/memtest/NVBandwidth). A GPU that falls off the
bus fails the hardware and stress tests on that GPU; a slow GPU fails the targeted
stress and power tests at level 3 and above. Network faults are invisible to DCGM,
as they are in reality. A failed diagnostic exits 226 (DCGM_ST_NVVS_ERROR).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from nvcre.sim.emulators.base import Effect, Line, Outcome, RunContext
from nvcre.sim.emulators.shell import Segment
from nvcre.sim.hardware import DCGM_VERSION, DRIVER_VERSION

EXIT_FAILED = 226

DEPLOYMENT = (
    "Denylist",
    "NVML Library",
    "CUDA Main Library",
    "Permissions and OS Blocks",
    "Persistence Mode",
    "Environment Variables",
    "Page Retirement/Row Remap",
    "Graphics Processes",
    "Inforom",
)
_BASE_DURATION = {1: 20.0, 2: 120.0, 3: 600.0, 4: 1800.0}
_LEVEL_NAMES = {"short": 1, "medium": 2, "long": 3, "xlong": 4}


@dataclass
class DiagArgs:
    level: int = 1
    json: bool = False
    gpu_ids: list[int] | None = None
    params: dict[str, str] = field(default_factory=dict)
    host: str | None = None


def parse_args(argv: list[str]) -> DiagArgs:
    """Parse ``dcgmi diag`` flags; an unknown level raises ValueError."""
    args = DiagArgs()
    i = 0
    while i < len(argv):
        token = argv[i]
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")

        def value() -> str:
            return inline if eq else (argv[i + 1] if i + 1 < len(argv) else "")

        step = 1 if eq else 2
        if name in ("-r", "--run"):
            text = value().strip().lower()
            if text.isdigit() and 1 <= int(text) <= 4:
                args.level = int(text)
            elif text in _LEVEL_NAMES:
                args.level = _LEVEL_NAMES[text]
            else:
                raise ValueError(f"Invalid value '{value()}' for argument -r/--run")
            i += step
        elif name in ("-p", "--parameters"):
            for item in value().split(";"):
                key, _, val = item.partition("=")
                if key:
                    args.params[key.strip()] = val.strip()
            i += step
        elif name in ("-i", "--gpuList"):
            args.gpu_ids = [int(x) for x in re.split(r"[,\s]+", value()) if x.isdigit()]
            i += step
        elif name == "--host":
            args.host = value()
            i += step
        elif name in ("-j", "--json"):
            args.json = True
            i += 1
        elif name in ("-g", "--group", "-c", "--configfile", "--statspath", "--debugLogFile", "--debugLevel",
                      "--iterations", "--throttle-mask", "--fail-early", "--check-interval", "--timeout"):
            i += step
        else:
            i += 1
    return args


def find(segments: list[Segment]) -> tuple[Segment, int] | None:
    for segment in segments:
        argv = segment.argv
        for index, token in enumerate(argv[:-1]):
            if token.rsplit("/", 1)[-1] == "dcgmi" and argv[index + 1] == "diag":
                return segment, index
    return None


@dataclass
class _Result:
    status: str  # Pass, Fail, Skip
    gpu: int | None = None
    info: str = ""
    warning: str = ""


def _plan(level: int, params: dict[str, str]) -> list[tuple[str, list[str]]]:
    categories: list[tuple[str, list[str]]] = [("Deployment", list(DEPLOYMENT))]
    if level >= 2:
        integration = ["PCIe"]
        if level >= 4 and params.get("nvbandwidth.is_allowed", "").lower() == "true":
            integration.append("NVBandwidth")
        categories.append(("Integration", integration))
        hardware = ["GPU Memory"]
        if level >= 3:
            hardware.append("Diagnostic")
        if level >= 4:
            hardware += ["Pulse Test", "Memtest"]
        categories.append(("Hardware", hardware))
    if level >= 3:
        categories.append(("Stress", ["Targeted Stress", "Targeted Power", "Memory Bandwidth", "EUD Test"]))
    return categories


def _duration(args: DiagArgs) -> float:
    extra = 0.0
    for key, value in args.params.items():
        if key.endswith("test_duration"):
            match = re.match(r"([0-9.]+)", value)
            if match:
                extra += float(match.group(1))
    return _BASE_DURATION[args.level] + extra


def emulate(ctx: RunContext, segment: Segment, index: int) -> Outcome:
    """Run ``dcgmi diag`` as ``segment`` asks and return its report."""
    argv = segment.argv[index + 2:]
    try:
        args = parse_args(argv)
    except ValueError as exc:
        return Outcome("dcgmi", [Line(0.1, f"Error: {exc}")], exit_code=255, duration=0.2)
    node = ctx.node
    if args.host:
        gpus = list(range(node.gpus))  # the node's hostengine sees every GPU
    else:
        gpus = list(range(ctx.pod.gpus_requested or node.allocatable_gpus))
    if args.gpu_ids is not None:
        gpus = [g for g in args.gpu_ids if g < node.gpus]
    duration = _duration(args)

    lost: int | None = None
    effect_line: Line | None = None
    off_bus = ctx.faults.gpu_off_bus(node.name)
    if off_bus is not None and off_bus.gpu in gpus:
        lost = off_bus.gpu
        if node.name not in ctx.off_bus:
            effect_line = Line(off_bus.at_fraction * duration, "", Effect("gpu-off-bus", node=node.name, gpu=lost),
                               silent=True)
    slow = {g: f for g, f in ctx.faults.slow_gpus(node.name).items() if g in gpus and f < 0.9}

    results: list[tuple[str, list[tuple[str, list[_Result]]]]] = []
    for category, tests in _plan(args.level, args.params):
        rows: list[tuple[str, list[_Result]]] = []
        for test in tests:
            rows.append((test, _results(test, category, gpus, lost, slow, node.arch.nvlink_busbw)))
        results.append((category, rows))
    failed = any(r.status == "Fail" for _, rows in results for _, rs in rows for r in rs)

    text = _json(results) if args.json else _table(results, node.arch.pci_device_id, len(gpus))
    lines: list[Line] = []
    if effect_line is not None:
        lines.append(effect_line)
    if not args.json:
        lines.append(Line(duration, "Successfully ran diagnostic for group."))
    for row in text.splitlines():
        lines.append(Line(duration, row))
    return Outcome("dcgmi", lines, exit_code=EXIT_FAILED if failed else 0, duration=duration + 0.5,
                   reason="Error" if failed else "")


def _results(test: str, category: str, gpus: list[int], lost: int | None, slow: dict[int, float],
             nvlink: float) -> list[_Result]:
    if category == "Deployment":
        if test == "NVML Library" and lost is not None:
            return [_Result("Fail", warning=f"GPU {lost} is lost: NVML returned GPU_IS_LOST (XID 79, GPU has fallen off the bus).")]
        return [_Result("Pass")]
    if test == "EUD Test":
        return [_Result("Skip", g) for g in gpus]
    out = []
    for g in gpus:
        if lost == g:
            out.append(_Result("Fail", g, warning=(
                f"GPU {g} Error using CUDA API cuInit Check DCGM and system logs for errors. Reset GPU. "
                f"Restart DCGM. Rerun diagnostics. GPU {g} has fallen off the bus (XID 79).")))
            continue
        factor = slow.get(g)
        if factor is not None and test in ("Targeted Stress", "Targeted Power"):
            if test == "Targeted Stress":
                warn = (f"GPU {g} Max stress level of {int(3200 * factor)} did not reach desired stress level "
                        f"of 3200 for test targeted_stress. Check logs for clock throttling.")
            else:
                warn = (f"GPU {g} Max power of {int(700 * factor)}.0 did not reach desired power minimum "
                        f"targeted_power.target_power_min_ratio of 630.0 for test targeted_power.")
            out.append(_Result("Fail", g, warning=warn))
            continue
        info = {
            "PCIe": f"GPU {g} GPU to Host bandwidth:\t\t55.21 GB/s, GPU {g} Host to GPU bandwidth:\t\t54.87 GB/s",
            "GPU Memory": f"GPU {g} Allocated 81016487936 bytes (97.5%)",
            "Targeted Stress": f"GPU {g} relative stress level\t3184",
            "Targeted Power": f"GPU {g} power average:\t698 W",
            "NVBandwidth": f"GPU {g} device to device bandwidth:\t{nvlink * 0.8:.2f} GB/s",
        }.get(test, "")
        out.append(_Result("Pass", g, info=info))
    return out


# --- text table --------------------------------------------------------------------
_LEFT = 25
_RIGHT = 46


def _row(name: str, value: str) -> str:
    if len(value) > _RIGHT:
        value = value[: _RIGHT - 3] + "..."
    return f"| {name:<{_LEFT}} | {value:<{_RIGHT}} |"


def _section(title: str, edge: str) -> str:
    left = f"-----  {title}  ".ljust(_LEFT + 2, "-")
    return f"{edge}{left}+{'-' * (_RIGHT + 2)}{edge}"


def _wrap(text: str) -> list[str]:
    return [text[i:i + _RIGHT] for i in range(0, len(text), _RIGHT)] or [""]


def _table(results, device_id: str, gpu_count: int) -> str:
    out = [
        "+" + "-" * (_LEFT + 2) + "+" + "-" * (_RIGHT + 2) + "+",
        _row("Diagnostic", "Result"),
        "+" + "=" * (_LEFT + 2) + "+" + "=" * (_RIGHT + 2) + "+",
        _section("Metadata", "|"),
        _row("DCGM Version", DCGM_VERSION),
        _row("Driver Version Detected", ".".join(map(str, DRIVER_VERSION))),
        _row("GPU Device IDs Detected", ",".join([device_id] * max(1, gpu_count))),
    ]
    for category, rows in results:
        out.append(_section(category, "|" if category == "Deployment" else "+"))
        for test, rs in rows:
            if category == "Deployment":
                status = rs[0].status
                out.append(_row(test, status))
                for r in rs:
                    if r.warning:
                        for i, chunk in enumerate(_wrap(r.warning)):
                            out.append(_row("Warning" if i == 0 else "", chunk))
                continue
            passed = [r.gpu for r in rs if r.status == "Pass"]
            failed = [r for r in rs if r.status == "Fail"]
            skipped = [r.gpu for r in rs if r.status == "Skip"]
            first = True

            def emit(value: str) -> None:
                nonlocal first
                out.append(_row(test if first else "", value))
                first = False

            if skipped and not passed and not failed:
                emit("Skip - All")
            elif not failed:
                emit("Pass - All")
            else:
                if passed:
                    emit("Pass - GPUs: " + ", ".join(str(g) for g in passed))
                for r in failed:
                    emit(f"Fail - GPU: {r.gpu}")
                for r in failed:
                    for i, chunk in enumerate(_wrap(r.warning)):
                        out.append(_row("Warning" if i == 0 else "", chunk))
    out.append("+" + "-" * (_LEFT + 2) + "+" + "-" * (_RIGHT + 2) + "+")
    return "\n".join(out)


# --- JSON (jsoncpp StyledWriter layout, as dcgmi prints it) --------------------------
def _json(results) -> str:
    categories = []
    for category, rows in results:
        tests = []
        for test, rs in rows:
            entries = []
            for r in rs:
                entry: dict[str, str] = {}
                if r.gpu is not None:
                    entry["gpu_ids"] = str(r.gpu)
                if r.info:
                    entry["info"] = r.info
                entry["status"] = r.status
                if r.warning:
                    entry["warnings"] = r.warning
                entries.append(entry)
            tests.append({"name": test, "results": entries})
        categories.append({"category": category, "tests": tests})
    return _styled({"DCGM GPU Diagnostic": {"test_categories": categories}})


def _styled(value, depth: int = 0) -> str:
    pad = "\t" * depth
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                parts.append(f"{pad}\t{json.dumps(key)} : \n{_styled(item, depth + 1)}")
            else:
                parts.append(f"{pad}\t{json.dumps(key)} : {json.dumps(item)}")
        return f"{pad}{{\n" + ",\n".join(parts) + f"\n{pad}}}"
    if isinstance(value, list):
        parts = [_styled(item, depth + 1) for item in value]
        return f"{pad}[\n" + ",\n".join(parts) + f"\n{pad}]"
    return pad + json.dumps(value)
