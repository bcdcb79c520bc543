"""Training logs -> steps, checkpoints, restarts; goodput, TFLOP/s per GPU, step time.

A LogProfile (see ``logprofile.py``) says which lines are training steps,
checkpoint saves, restores and the application start. ``parse_training_log``
applies it to one log (or to several workers' logs, merged by the profile's worker
strategy) and returns ``TrainingMetrics``: plain data the GoodputMeasurement
status, the thresholds and the report are computed from.

Goodput follows the reference formula exactly (``compute_goodput``); how its five
times come out of one or more runs of a job is ``goodput_from_runs``.
"""

from __future__ import annotations

import math

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from nvcre.measure.logprofile import FLOAT_CAPTURES, INT_CAPTURES, EventPattern, LogProfile, load_log_profile
from nvcre.measure.logtext import MAX_LINE_CHARS, format_timestamp, parse_timestamp, split_k8s_prefix


@dataclass
class TrainingStep:
    """One logged training step."""

    global_step: int
    iteration: int | None = None
    epoch: int = 0
    timestamp: datetime | None = None
    step_timing: float | None = None  # seconds
    elapsed_time: float | None = None  # seconds
    loss: float | None = None
    tflops: float | None = None  # TFLOP/s per GPU
    warmup: bool = False

    def to_dict(self) -> dict:
        data = {
            "globalStep": self.global_step,
            "iteration": self.iteration if self.iteration is not None else self.global_step,
            "epoch": self.epoch,
            "timestamp": format_timestamp(self.timestamp),
            "stepTiming": self.step_timing,
            "elapsedTime": self.elapsed_time,
            "loss": self.loss,
            "tflops": self.tflops,
        }
        if self.warmup:
            data["warmup"] = True
        return {k: v for k, v in data.items() if v is not None}


@dataclass
class Checkpoint:
    """A completed checkpoint save; ``timestamp`` is when it completed."""

    step: int | None
    path: str | None
    timestamp: datetime | None
    save_duration: float | None  # seconds

    def to_dict(self) -> dict:
        data = {
            "step": self.step,
            "path": self.path,
            "timestamp": format_timestamp(self.timestamp),
            "saveDuration": round(self.save_duration, 6) if self.save_duration is not None else None,
        }
        return {k: v for k, v in data.items() if v is not None}


@dataclass
class PendingSave:
    """A save that started but has not (yet) been seen to finish."""

    step: int | None
    path: str | None
    timestamp: datetime | None

    def to_dict(self) -> dict:
        data = {"step": self.step, "path": self.path, "timestamp": format_timestamp(self.timestamp)}
        return {k: v for k, v in data.items() if v is not None}


@dataclass
class Restore:
    """The run resumed from a checkpoint."""

    path: str | None
    timestamp: datetime | None
    step: int | None = None

    def to_dict(self) -> dict:
        data = {"path": self.path, "timestamp": format_timestamp(self.timestamp), "step": self.step}
        return {k: v for k, v in data.items() if v is not None}


@dataclass
class TrainingMetrics:
    """What one run's log says (all steps are kept: the averages use the whole log)."""

    steps: list[TrainingStep] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)
    pending_save: PendingSave | None = None
    restore: Restore | None = None
    application_start_time: datetime | None = None
    last_log_timestamp: datetime | None = None
    warmup_base_step: int | None = None
    log_interval: int | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def first_step(self) -> TrainingStep | None:
        return self.steps[0] if self.steps else None

    @property
    def last_step(self) -> TrainingStep | None:
        return self.steps[-1] if self.steps else None

    @property
    def last_checkpoint(self) -> Checkpoint | None:
        return self.checkpoints[-1] if self.checkpoints else None

    @property
    def highest_step(self) -> int | None:
        return max((s.global_step for s in self.steps), default=None)

    @property
    def training_start(self) -> datetime | None:
        """When training began: the first step's time (the start of ``t_w``)."""
        first = self.first_step
        return first.timestamp if first else None

    @property
    def end_time(self) -> datetime | None:
        """The last time this log shows life (last log line, else last step)."""
        if self.last_log_timestamp is not None:
            return self.last_log_timestamp
        last = self.last_step
        return last.timestamp if last else None

    @property
    def checkpoint_save_time_sec(self) -> float:
        return sum(c.save_duration or 0.0 for c in self.checkpoints)

    @property
    def avg_step_time_sec(self) -> float | None:
        """Mean step time after warmup; from timestamps when the log prints no timing."""
        steady = [s for s in self.steps if not s.warmup]
        timings = [s.step_timing for s in steady if s.step_timing is not None]
        if timings:
            return sum(timings) / len(timings)
        rates = []
        for before, after in zip(steady, steady[1:]):
            if before.timestamp and after.timestamp and after.global_step > before.global_step:
                gap = (after.timestamp - before.timestamp).total_seconds()
                rates.append(gap / (after.global_step - before.global_step))
        return sum(rates) / len(rates) if rates else None

    @property
    def avg_tflops_per_gpu(self) -> float | None:
        """Mean TFLOP/s per GPU over steps after warmup (all steps if only warmup has it)."""
        steady = [s.tflops for s in self.steps if not s.warmup and s.tflops]
        values = steady or [s.tflops for s in self.steps if s.tflops]
        return sum(values) / len(values) if values else None

    def _timed(self, warmup: bool) -> float:
        total = 0.0
        previous: int | None = None
        for step in self.steps:
            delta = step.global_step - previous if previous is not None else (self.log_interval or 1)
            previous = step.global_step
            if step.warmup == warmup and step.step_timing is not None:
                total += step.step_timing * max(delta, 1)
        return total

    @property
    def warmup_time_sec(self) -> float:
        return self._timed(True)

    @property
    def non_warmup_time_sec(self) -> float:
        return self._timed(False)

    def to_dict(self) -> dict:
        """The reference parser's result shape (camelCase, RFC3339 UTC times)."""
        data: dict = {
            "applicationStartTime": format_timestamp(self.application_start_time),
            "lastLogTimestamp": format_timestamp(self.last_log_timestamp),
        }
        if self.steps:
            data["steps"] = [s.to_dict() for s in self.steps]
            data["firstStep"] = self.first_step.to_dict()
            data["lastStep"] = self.last_step.to_dict()
        if self.checkpoints:
            data["checkpoints"] = [c.to_dict() for c in self.checkpoints]
            data["lastCheckpoint"] = self.last_checkpoint.to_dict()
        if self.pending_save is not None:
            data["pendingSave"] = self.pending_save.to_dict()
        if self.restore is not None:
            data["checkpointRestore"] = self.restore.to_dict()
        return {k: v for k, v in data.items() if v is not None}


# --- parsing ------------------------------------------------------------------------------


def _as_profile(profile: LogProfile | Mapping) -> LogProfile:
    return profile if isinstance(profile, LogProfile) else load_log_profile(profile)


def _captures(match) -> dict:
    """Typed named captures of one match (ints, floats, strings)."""
    out: dict = {}
    for name, value in match.groupdict().items():
        if value is None:
            continue
        value = value.strip()
        if name in INT_CAPTURES:
            if len(value) > 18:  # not a step number; int() of a huge digit run also costs time
                continue
            try:
                out[name] = int(value)
            except ValueError:
                continue
        elif name in FLOAT_CAPTURES:
            try:
                number = float(value[:64])
            except ValueError:
                continue
            if math.isfinite(number):
                out[name] = number
        else:
            out[name] = value
    return out


class _Parser:
    def __init__(self, profile: LogProfile) -> None:
        self.profile = profile
        self.metrics = TrainingMetrics(log_interval=profile.log_interval)
        self.pending_save: PendingSave | None = None
        self.pending_start: datetime | None = None
        self.reset_warmup_base = True
        self.p = {name: profile.pattern(name) for name in (
            "applicationStart", "trainingStep", "warmupStep", "checkpointDone", "checkpointSave",
            "checkpointRestore", "checkpointLoaded")}

    def _time(self, captures: dict, stamp: datetime | None) -> datetime | None:
        text = captures.get("timestamp")
        if text:
            parsed = parse_timestamp(text)
            if parsed is not None:
                return parsed
        return stamp

    def _search(self, name: str, line: str) -> tuple[EventPattern | None, re.Match | None]:
        """(the profile's pattern for ``name``, its match in ``line``); no match when the
        profile has no such pattern."""
        pattern = self.p[name]
        return pattern, (pattern.regex.search(line) if pattern is not None else None)

    def feed(self, line: str) -> None:
        stamp_text, _content = split_k8s_prefix(line)
        stamp = parse_timestamp(stamp_text) if stamp_text else None
        metrics = self.metrics
        if stamp is not None:
            metrics.last_log_timestamp = stamp
        if metrics.application_start_time is None:
            _, match = self._search("applicationStart", line)
            if match:
                metrics.application_start_time = self._time(_captures(match), stamp)
                self.reset_warmup_base = True
                # no return: a broad start pattern may also match a checkpoint line
        pattern, match = self._search("trainingStep", line)
        if match:
            self._step(pattern, match, line, stamp)
            return
        pattern, match = self._search("checkpointDone", line)
        if match:
            self._done(pattern, match, stamp)
            return
        pattern, match = self._search("checkpointSave", line)
        if match:
            self._save(pattern, match, stamp)
            return
        _, match = self._search("checkpointRestore", line)
        if match:
            if metrics.restore is None:
                captures = _captures(match)
                metrics.restore = Restore(captures.get("path"), self._time(captures, stamp), captures.get("step"))
                self.reset_warmup_base = True
            return
        _, match = self._search("checkpointLoaded", line)
        if match:
            captures = _captures(match)
            if metrics.restore is None:
                metrics.restore = Restore(captures.get("path"), self._time(captures, stamp), captures.get("step"))
            else:
                metrics.restore.step = captures.get("step", metrics.restore.step)
                metrics.restore.path = captures.get("path") or metrics.restore.path

    def _step(self, pattern, match, line: str, stamp: datetime | None) -> None:
        captures = _captures(match)
        global_step = captures.get("globalStep", captures.get("iteration", captures.get("step")))
        if global_step is None:
            return
        interval = self.profile.log_interval
        if interval and interval > 1 and global_step % interval != 0:
            return
        timing = captures.get("stepTiming")
        timing = timing * pattern.scale("stepTiming") if timing is not None else None
        elapsed = captures.get("elapsedTime")
        elapsed = elapsed * pattern.scale("elapsedTime") if elapsed is not None else None
        if timing is None:
            timing = elapsed
        if self.reset_warmup_base or self.metrics.warmup_base_step is None:
            self.metrics.warmup_base_step = global_step
            self.reset_warmup_base = False
        warmup_pattern = self.p["warmupStep"]
        warmup = bool(warmup_pattern and warmup_pattern.regex.search(line))
        if not warmup and self.profile.warmup_steps > 0:
            warmup = global_step - self.metrics.warmup_base_step < self.profile.warmup_steps
        self.metrics.steps.append(
            TrainingStep(
                global_step=global_step,
                iteration=captures.get("iteration", global_step),
                epoch=captures.get("epoch", 0),
                timestamp=self._time(captures, stamp),
                step_timing=timing,
                elapsed_time=elapsed,
                loss=captures.get("loss"),
                tflops=captures.get("tflops"),
                warmup=warmup,
            )
        )

    def _save(self, pattern, match, stamp: datetime | None) -> None:
        captures = _captures(match)
        when = self._time(captures, stamp)
        duration = captures.get("saveDuration")
        if duration is not None:
            # One-line style: the save line carries its own duration.
            self._record(Checkpoint(captures.get("step"), captures.get("path"), when,
                                    duration * pattern.scale("saveDuration")))
            return
        self.pending_save = PendingSave(captures.get("step"), captures.get("path"), when)

    def _done(self, pattern, match, stamp: datetime | None) -> None:
        captures = _captures(match)
        when = self._time(captures, stamp)
        step = captures.get("step")
        pending = self.pending_save
        last = self.metrics.last_checkpoint
        duration = captures.get("saveDuration")
        if duration is not None:
            duration *= pattern.scale("saveDuration")
        if pending is None:
            if last is not None and (step is None or last.step == step):
                # The save already completed (one-line style, or async scheduled first).
                if not last.path and captures.get("path"):
                    last.path = captures["path"]
                return
            if duration is None:
                self.metrics.warnings.append(f"checkpoint done at step {step} without a save start; not counted")
                return
            self._record(Checkpoint(step, captures.get("path"), when, duration))
            return
        if duration is None and pending.timestamp is not None and when is not None:
            duration = max((when - pending.timestamp).total_seconds(), 0.0)
        self._record(Checkpoint(step if step is not None else pending.step,
                                captures.get("path") or pending.path, when, duration))
        self.pending_save = None

    def _record(self, checkpoint: Checkpoint) -> None:
        self.metrics.checkpoints.append(checkpoint)

    def finish(self) -> TrainingMetrics:
        self.metrics.pending_save = self.pending_save
        return self.metrics


def parse_training_text(text: str, profile: LogProfile | Mapping) -> TrainingMetrics:
    """Apply a LogProfile to one log. Never raises on log content."""
    parser = _Parser(_as_profile(profile))
    for line in text.splitlines():
        parser.feed(line[:MAX_LINE_CHARS])
    return parser.finish()


def parse_training_log(logs: str | Sequence[str], profile: LogProfile | Mapping) -> TrainingMetrics:
    """One log, or the workers' logs in worker order (merged by the profile's strategy).

    Multi-worker: lifecycle events (start, restore, checkpoints, pending save) come from
    the lifecycle pod, steps and the last log time from the step pod; when one of them
    gave nothing, the other stands in.
    """
    compiled = _as_profile(profile)
    if isinstance(logs, str):
        return parse_training_text(logs, compiled)
    texts = [t for t in logs if isinstance(t, str)]
    if not texts:
        return TrainingMetrics(log_interval=compiled.log_interval, warnings=["no logs"])
    if len(texts) == 1:
        return parse_training_text(texts[0], compiled)
    lifecycle_text = texts[0] if compiled.lifecycle_pod == "first" else texts[-1]
    step_text = texts[0] if compiled.training_step_pod == "first" else texts[-1]
    lifecycle = parse_training_text(lifecycle_text, compiled)
    if step_text is lifecycle_text:
        return lifecycle
    stepper = parse_training_text(step_text, compiled)
    return merge_worker_metrics(lifecycle, stepper)


def merge_worker_metrics(lifecycle: TrainingMetrics, stepper: TrainingMetrics) -> TrainingMetrics:
    """Lifecycle facts from one worker, steps from another."""
    steps = stepper.steps or lifecycle.steps
    return TrainingMetrics(
        steps=steps,
        checkpoints=lifecycle.checkpoints or stepper.checkpoints,
        pending_save=lifecycle.pending_save or stepper.pending_save,
        restore=lifecycle.restore or stepper.restore,
        application_start_time=lifecycle.application_start_time or stepper.application_start_time,
        last_log_timestamp=stepper.last_log_timestamp or lifecycle.last_log_timestamp,
        warmup_base_step=(stepper if stepper.steps else lifecycle).warmup_base_step,
        log_interval=stepper.log_interval or lifecycle.log_interval,
        warnings=lifecycle.warnings + stepper.warnings,
    )


# --- goodput ------------------------------------------------------------------------------


def compute_goodput(t_w: float, t_ch: float, t_re: float, t_rm: float, t_save: float) -> float:
    """Goodput = (t_w - t_ch - t_rm - t_re - t_save) / (t_w - t_re), clamped at 0.

    t_w training wall time since the first step; t_ch work lost to interruptions (since
    the last checkpoint); t_re rescheduling time; t_rm resume (and initial startup) time;
    t_save checkpoint save time. 0 when t_w - t_re <= 0 or the numerator is negative.
    """
    denominator = t_w - t_re
    if denominator <= 0:
        return 0.0
    numerator = t_w - t_ch - t_rm - t_re - t_save
    if numerator < 0:
        return 0.0
    return numerator / denominator


@dataclass
class GoodputBreakdown:
    """The five times of the goodput formula and its result, over one or more runs."""

    training_time_sec: float
    lost_work_time_sec: float
    reschedule_time_sec: float
    resume_time_sec: float
    checkpoint_save_time_sec: float
    interruption_count: int
    checkpoint_count: int
    result: float


@dataclass
class TrainingRun:
    """One attempt of a training job: its parsed log, and when it was interrupted (None
    for the last, running or finished, attempt)."""

    metrics: TrainingMetrics
    interrupted_at: datetime | None = None


def _seconds(later: datetime | None, earlier: datetime | None) -> float:
    if later is None or earlier is None:
        return 0.0
    return max((later - earlier).total_seconds(), 0.0)


def goodput_from_runs(runs: Sequence[TrainingRun | TrainingMetrics], *, end_time: datetime | None = None) -> GoodputBreakdown:
    """Goodput over the attempts of one job (the first, then each restart).

    - t_w: from the first step of the first attempt to ``end_time`` (the Job's terminal
      time; default the last attempt's last log line).
    - t_rm: each attempt's startup, application start to first step (the first
      attempt's included, as the reference counts it).
    - t_re: from an interruption to the next attempt's application start (its first
      step when no start line is seen).
    - t_ch: from the last checkpoint completed before an interruption to the
      interruption; with no checkpoint yet, all work since training began is lost.
    - t_save: save durations of distinct checkpoints (by step) over all attempts.
    An attempt that is not the last and has no ``interrupted_at`` is taken to have been
    interrupted at its last log line.
    """
    attempts = [r if isinstance(r, TrainingRun) else TrainingRun(r) for r in runs]
    attempts = [a for a in attempts if a.metrics is not None]
    start = next((a.metrics.training_start for a in attempts if a.metrics.training_start), None)
    if start is None:
        return GoodputBreakdown(0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0.0)
    if end_time is None:
        end_time = attempts[-1].metrics.end_time or start
    t_w = _seconds(end_time, start)
    t_rm = t_re = t_ch = 0.0
    interruptions = 0
    seen_steps: set = set()
    t_save = 0.0
    completed: list[Checkpoint] = []
    for index, attempt in enumerate(attempts):
        metrics = attempt.metrics
        scheduled = metrics.application_start_time or metrics.training_start
        if metrics.training_start is not None and scheduled is not None:
            t_rm += _seconds(metrics.training_start, scheduled)
        for checkpoint in metrics.checkpoints:
            key = checkpoint.step if checkpoint.step is not None else ("t", checkpoint.timestamp)
            if key in seen_steps:
                continue
            seen_steps.add(key)
            t_save += checkpoint.save_duration or 0.0
            completed.append(checkpoint)
        is_last = index == len(attempts) - 1
        interrupted_at = attempt.interrupted_at or (None if is_last else metrics.end_time)
        if interrupted_at is None:
            continue
        interruptions += 1
        before = [c.timestamp for c in completed if c.timestamp is not None and c.timestamp <= interrupted_at]
        t_ch += _seconds(interrupted_at, max(before) if before else start)
        if not is_last:
            following = attempts[index + 1].metrics
            t_re += _seconds(following.application_start_time or following.training_start, interrupted_at)
    return GoodputBreakdown(
        training_time_sec=t_w,
        lost_work_time_sec=t_ch,
        reschedule_time_sec=t_re,
        resume_time_sec=t_rm,
        checkpoint_save_time_sec=t_save,
        interruption_count=interruptions,
        checkpoint_count=len(completed),
        result=compute_goodput(t_w, t_ch, t_re, t_rm, t_save),
    )


def _fmt(value: float | None) -> str | None:
    return f"{value:.6f}" if value is not None else None


def goodput_display(ratio: float | None, tflops: float | None = None, step_time: float | None = None) -> dict[str, str]:
    """The figures as people read them (``kubectl get`` columns, reports): goodput as a
    percentage with one decimal ("40.0%"), TFLOP/s per GPU with one ("812.5"), step time
    in seconds with two ("1.84s"); the 6-decimal strings stay beside them for tools."""
    shown = {
        "goodput": f"{ratio * 100:.1f}%" if ratio is not None else None,
        "tflopsPerGPU": f"{tflops:.1f}" if tflops is not None else None,
        "stepTime": f"{step_time:.2f}s" if step_time is not None else None,
    }
    return {k: v for k, v in shown.items() if v is not None}


def goodput_status(runs: Sequence[TrainingRun | TrainingMetrics], *, end_time: datetime | None = None) -> dict:
    """GoodputMeasurement ``status`` fields (numbers as 6-decimal strings, like the reference)."""
    attempts = [r if isinstance(r, TrainingRun) else TrainingRun(r) for r in runs]
    breakdown = goodput_from_runs(attempts, end_time=end_time)
    last = attempts[-1].metrics if attempts else TrainingMetrics()
    all_steps = [s for a in attempts for s in a.metrics.steps]
    merged = TrainingMetrics(steps=all_steps, log_interval=last.log_interval)
    last_steady = next((s for s in reversed(last.steps) if not s.warmup), None)
    checkpoints = [c for a in attempts for c in a.metrics.checkpoints]
    first_start = next((a.metrics.training_start for a in attempts if a.metrics.training_start), None)
    status = {
        "result": _fmt(breakdown.result),
        "currentStep": str(last.last_step.global_step) if last.last_step else None,
        "highestStep": str(merged.highest_step) if merged.highest_step is not None else None,
        "trainingTimeSec": _fmt(breakdown.training_time_sec),
        "lostWorkTimeSec": _fmt(breakdown.lost_work_time_sec),
        "rescheduleTimeSec": _fmt(breakdown.reschedule_time_sec),
        "resumeTimeSec": _fmt(breakdown.resume_time_sec),
        "checkpointSaveTimeSec": _fmt(breakdown.checkpoint_save_time_sec),
        "interruptionCount": str(breakdown.interruption_count),
        "avgStepTimeSec": _fmt(merged.avg_step_time_sec),
        "avgTFLOPSPerGPU": _fmt(merged.avg_tflops_per_gpu),
        "warmupTimeSec": _fmt(merged.warmup_time_sec),
        "nonWarmupTimeSec": _fmt(merged.non_warmup_time_sec),
        "lastStepTimestamp": format_timestamp(last_steady.timestamp) if last_steady else None,
        "applicationStartTime": format_timestamp(attempts[0].metrics.application_start_time) if attempts else None,
        "lastCheckpointTime": format_timestamp(checkpoints[-1].timestamp) if checkpoints else None,
        "lastCheckpointStep": str(checkpoints[-1].step) if checkpoints and checkpoints[-1].step is not None else None,
        "startTime": format_timestamp(first_start),
        "logInterval": str(last.log_interval) if last.log_interval else None,
    }
    return {k: v for k, v in status.items() if v is not None}


def training_threshold_metrics(status: Mapping) -> dict[str, float | None]:
    """Threshold inputs from a GoodputMeasurement status: values of 0 mean no data."""

    def value(key: str) -> float | None:
        try:
            number = float(status.get(key))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        return number if number > 0 else None

    return {
        "goodputRatio": value("result"),
        "avgTFLOPsPerGPU": value("avgTFLOPSPerGPU"),
        "avgStepTimeSec": value("avgStepTimeSec"),
    }


def stall_reason(
    metrics: TrainingMetrics,
    now: datetime,
    *,
    stall_multiplier: float = 3.0,
    started_at: datetime | None = None,
    startup_stall_timeout_s: float | None = None,
) -> str | None:
    """Why a running training workload counts as stalled, or None.

    After steps have appeared: no new step for longer than ``stall_multiplier`` times
    the mean step time, scaled by the log interval (steps are only printed every
    ``logInterval`` steps). Before the first step: longer than
    ``startup_stall_timeout_s`` since ``started_at``.
    """
    steady = [s for s in metrics.steps if not s.warmup and s.timestamp is not None]
    last = steady[-1] if steady else (metrics.steps[-1] if metrics.steps else None)
    if last is None or last.timestamp is None:
        if started_at is not None and startup_stall_timeout_s is not None:
            waited = (now - started_at).total_seconds()
            if waited > startup_stall_timeout_s:
                return (f"no training step within {startup_stall_timeout_s:.0f}s of start "
                        f"(waited {waited:.0f}s)")
        return None
    step_time = metrics.avg_step_time_sec
    if not step_time or step_time <= 0:
        return None
    allowed = stall_multiplier * step_time * (metrics.log_interval or 1)
    silent = (now - last.timestamp).total_seconds()
    if silent > allowed:
        return (f"no training step for {silent:.0f}s after step {last.global_step} "
                f"(allowed {allowed:.0f}s = {stall_multiplier:g} x {step_time:.2f}s step time"
                f"{f' x log interval {metrics.log_interval}' if (metrics.log_interval or 1) > 1 else ''})")
    return None


def measure_training_log(
    logs: str | Sequence[str],
    profile: LogProfile | Mapping,
    *,
    end_time: datetime | None = None,
    previous_runs: Sequence[TrainingRun] = (),
) -> dict:
    """One call for the GoodputMeasurement reconciler: parse the log(s) of the current
    attempt with the LogProfile object and return the status fields (6-decimal strings).

    ``previous_runs`` are earlier, interrupted attempts of the same job (checkpoint
    restart); ``end_time`` is the Job's terminal time (default: the last log line).
    """
    if not profile:
        from nvcre.errors import UserError

        raise UserError("no LogProfile given for the training log (logProfileRef not resolved)")
    metrics = parse_training_log(logs, profile)
    return goodput_status([*previous_runs, TrainingRun(metrics)], end_time=end_time)
