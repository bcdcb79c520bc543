"""Measurements: reading the launcher log into BandwidthMeasurement / GoodputMeasurement.

Bandwidth logs (LogProfiles nccl-bandwidth, nccl-loopback) go through the nccl-tests
parser; training logs go through the LogProfile engine of ``nvcre.measure`` with the
profile object read from the cluster. The result is a status body for the measurement
object plus the values the thresholds judge, so the Job can write both from one read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from nvcre.controller import conditions as c
from nvcre.controller import labels as L
from nvcre.controller import naming
from nvcre.controller.workload_state import training_log_pods
from nvcre.kube.resources import NVCRE_API_VERSION
from nvcre.measure.logtext import bounded_log
from nvcre.objpath import dig

log = logging.getLogger(__name__)

BANDWIDTH_PROFILES = ("nccl-bandwidth", "nccl-loopback")


@dataclass
class Reading:
    """What one read of a log gave: the measurement status fields and threshold values."""

    status: dict = field(default_factory=dict)
    values: dict[str, float | None] = field(default_factory=dict)
    job_fields: dict = field(default_factory=dict)  # for Job.status.measurements
    ok: bool = False
    note: str = ""  # the reason: LogsUnavailable | NoDataCollected (empty when ok)
    message: str = ""  # what was wrong with the data, naming the offending line


MAX_SIZES = 64  # BandwidthMeasurement.status.results holds at most 64 message sizes


def read_bandwidth(text: str | None) -> Reading:
    """The nccl-tests log as a measurement. Total: any text gives a Reading, never an
    exception, so a garbled log ends the Job with a reason instead of wedging it."""
    if not text:
        return Reading(note="LogsUnavailable")
    try:
        return _read_bandwidth(bounded_log(text))
    except Exception as err:  # a parser bug must not wedge the Job: report it as the measurement error
        log.exception("nccl-tests log could not be read")
        return Reading(note="NoDataCollected", message=f"the nccl-tests log could not be read: {type(err).__name__}: {err}"[:512])


def _read_bandwidth(text: str) -> Reading:
    from nvcre.measure.nccl import bandwidth_results, bandwidth_summary, parse_nccl_log

    result = parse_nccl_log(text)
    sizes = sorted({r.size_bytes for r in result.rows})
    if len(sizes) > MAX_SIZES:
        keep = set(sizes[-MAX_SIZES:])
        result.rows = [r for r in result.rows if r.size_bytes in keep]
        result.warnings.append(f"{len(sizes)} message sizes in the log; kept the {MAX_SIZES} largest")
    results = bandwidth_results(result)
    summary = bandwidth_summary(result)
    if not results:
        return Reading(note="NoDataCollected", message=_problems(result.warnings, "no nccl-tests data rows found"))
    transport = ",".join(summary.get("transport") or []) or None
    table = [
        {"sizeBytes": r["sizeBytes"], "algBwGBps": r["algBwGBps"], "busBwGBps": r["busBwGBps"], "samples": r["samples"]}
        for r in summary["sizes"]
    ]
    status = {
        "results": results,
        "bandwidth": table,
        "peakBusBwGBps": summary["busBandwidthGBps"],
        "peakAlgBwGBps": summary["algBandwidthGBps"],
    }
    if transport:
        status["transport"] = transport[:64]
    values = {"busBandwidthGBps": summary["busBandwidthGBps"], "algBandwidthGBps": summary["algBandwidthGBps"]}
    job_fields = {"bandwidth": table, "busBandwidthGBps": values["busBandwidthGBps"], "algBandwidthGBps": values["algBandwidthGBps"]}
    if transport:
        job_fields["transport"] = transport[:64]
    if result.nccl_version:  # the library that actually loaded (an image can carry two)
        job_fields["ncclVersion"] = str(result.nccl_version)[:64]
    return Reading(status=status, values=values, job_fields=job_fields, ok=True,
                   message=_problems(result.warnings, "") if result.warnings else "")


def _problems(warnings: list[str], default: str, limit: int = 3) -> str:
    """The first parser warnings (each names its line) as one measurement message."""
    if not warnings:
        return default
    more = f" (and {len(warnings) - limit} more)" if len(warnings) > limit else ""
    return ("; ".join(w[:160] for w in warnings[:limit]) + more)[:1000]


def training_logs(kube, pods: list[dict], profile: dict | None) -> list[str] | None:
    """The logs a training LogProfile reads (lifecycle and step workers), or None."""
    texts = [kube.pod_log(p["metadata"]["name"], p["metadata"]["namespace"]) for p in training_log_pods(pods, profile)]
    texts = [t for t in texts if t]
    return texts or None


def read_goodput(text: str | list[str] | None, profile: dict | None, prior: list[str] | None = None) -> Reading:
    """Training metrics by LogProfile over every attempt (``prior``: interrupted attempts'
    logs, oldest first), so goodput counts the lost work and the restore of a restart."""
    if not text:
        return Reading(note="LogsUnavailable")
    from nvcre.measure.training import TrainingRun, goodput_display, measure_training_log, parse_training_log

    texts = [bounded_log(t) for t in text] if isinstance(text, list) else bounded_log(text)
    try:
        runs = [TrainingRun(parse_training_log(bounded_log(p), profile)) for p in prior or [] if p]
        fields = measure_training_log(texts, profile or {}, previous_runs=runs)
    except Exception as err:  # a garbled log is a measurement problem, not a controller crash
        detail = f"training log could not be parsed: {getattr(err, 'message', None) or err}"[:1000]
        return Reading(note="NoDataCollected", message=detail)
    fields = {k: v for k, v in (fields or {}).items() if v is not None}
    if not fields:
        return Reading(note="NoDataCollected")

    def num(key: str, positive: bool = False) -> float | None:
        try:
            value = float(fields.get(key))
        except (TypeError, ValueError):
            return None
        return None if positive and value <= 0 else value

    values = {
        "goodputRatio": num("result", positive=True),
        "avgTFLOPsPerGPU": num("avgTFLOPSPerGPU"),
        "avgStepTimeSec": num("avgStepTimeSec"),
    }
    status = {k: (str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v) for k, v in fields.items()}
    if shown := goodput_display(values["goodputRatio"], values["avgTFLOPsPerGPU"], values["avgStepTimeSec"]):
        status["display"] = shown
    job_fields = {
        "goodputRatio": values["goodputRatio"],
        "avgTFLOPsPerGPU": values["avgTFLOPsPerGPU"],
        "avgStepTimeSec": values["avgStepTimeSec"],
    }
    return Reading(status=status, values=values, job_fields={k: v for k, v in job_fields.items() if v is not None}, ok=True)


def measurement_objects(job: dict) -> list[dict]:
    """The BandwidthMeasurement / GoodputMeasurement a Job's spec asks for, owned by the Job."""
    meta, spec = job["metadata"], job.get("spec") or {}
    wf = dig(meta, "labels", L.WORKFLOW)
    out = []
    for kind, key, name in (
        ("BandwidthMeasurement", "bandwidthMeasurement", naming.bandwidth_name(meta["name"])),
        ("GoodputMeasurement", "goodputMeasurement", naming.goodput_name(meta["name"])),
    ):
        cfg = spec.get(key)
        if not cfg:
            continue
        body = {
            "jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": meta["name"]},
            "logProfileRef": cfg.get("logProfileRef"),
            "sampleInterval": cfg.get("sampleInterval") or "60s",
        }
        if kind == "BandwidthMeasurement" and cfg.get("testType"):
            body["testType"] = cfg["testType"]
        out.append(
            {
                "apiVersion": NVCRE_API_VERSION,
                "kind": kind,
                "metadata": {
                    "name": name,
                    "namespace": meta.get("namespace"),
                    "labels": L.managed_labels(job=meta["name"], workflow=wf),
                    "ownerReferences": [L.owner_reference(job)],
                },
                "spec": body,
            }
        )
    return out


def complete_status(status: dict, reason: str, message: str, now: str, reading: Reading | None) -> bool:
    """Mark a measurement Complete (first write wins: a complete status is frozen)."""
    conds = status.setdefault("conditions", [])
    if c.is_true(conds, "Complete"):
        return False
    if reading is not None and reading.ok:
        status.update(reading.status)
    c.set_condition(conds, "Measuring", False, "Finished", "")
    c.set_condition(conds, "Complete", True, reason, message)
    status["phase"] = "Complete"
    status["completionTime"] = now
    status.setdefault("startTime", now)
    return True


def with_pairs(reading: Reading, text: str | None, pods: list[dict]) -> Reading:
    """A per-pair check's log: every pair's figure, named by node, joins the Job's fields
    (``status.measurements.pairs``; a failed pair's figure is 0). A pair whose host no pod
    of the Job answers to is left out: it cannot be named."""
    from nvcre.measure.pairwise import parse_pair_lines

    found = parse_pair_lines(text) if text and "nvcre-pair " in text else []
    if not found:
        return reading
    node_of = _host_nodes(pods)
    nodes: list[str] = []
    index: dict[str, int] = {}
    a_list, b_list, figures = [], [], []
    for pair in found:
        a, b = node_of.get(pair.a.split(".")[0]), node_of.get(pair.b.split(".")[0])
        if not a or not b or a == b:
            continue
        for name in (a, b):
            if name not in index:
                index[name] = len(nodes)
                nodes.append(name)
        a_list.append(index[a])
        b_list.append(index[b])
        figures.append(round(pair.busbw, 3) if pair.busbw is not None else 0.0)
    if a_list:
        reading.job_fields = {**reading.job_fields, "pairs": {"nodes": nodes, "a": a_list, "b": b_list,
                                                               "busBandwidthGBps": figures}}
    return reading


def _host_nodes(pods: list[dict]) -> dict[str, str]:
    """A pod's host name (spec.hostname, which an Indexed Job sets, else its name) -> its node."""
    out: dict[str, str] = {}
    for pod in pods:
        node = dig(pod, "spec", "nodeName")
        if node:
            out[dig(pod, "spec", "hostname") or pod["metadata"]["name"]] = node
    return out


def pair_figures(job: dict | None) -> dict[tuple[str, str], float | None] | None:
    """A finished per-pair check's figures from its Job status: (node, node) -> GB/s, None
    where the pair's run failed; None when the Job carries none."""
    pairs = dig(job, "status", "measurements", "pairs") if job else None
    if not isinstance(pairs, dict):
        return None
    nodes = pairs.get("nodes") or []
    out: dict[tuple[str, str], float | None] = {}
    for i, j, v in zip(pairs.get("a") or [], pairs.get("b") or [], pairs.get("busBandwidthGBps") or []):
        if 0 <= i < len(nodes) and 0 <= j < len(nodes):
            out[(nodes[i], nodes[j])] = float(v) if isinstance(v, (int, float)) and v > 0 else None
    return out or None
