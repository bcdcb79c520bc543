"""LogProfile engine over the real training fixtures, goodput formula and multi-run accounting."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from nvcre.errors import ManifestError, UserError
from nvcre.measure.logprofile import default_log_profile, default_log_profiles, load_log_profile
from nvcre.measure.training import (
    TrainingRun,
    compute_goodput,
    goodput_from_runs,
    goodput_status,
    parse_training_log,
    training_threshold_metrics,
)

CASES = {
    "nvcre-megatron-async-checkpoint": "megatron-bridge",
    "nvcre-megatron-ckpt-nccl-noise-no-k8s-prefix": "megatron-bridge",
    "nvcre-megatron-core-full-iteration-line": "megatron-training",
    "nvcre-megatron-full-sequence-ckpt": "megatron-bridge",
    "nvcre-megatron-multi-worker-pending-save": "megatron-training",
}


def _same(expected, got, path="$"):
    """Structural equality with float tolerance; returns the first difference or None."""
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(expected) != set(got):
            return f"{path}: keys {sorted(expected)} != {sorted(got) if isinstance(got, dict) else got!r}"
        for key in expected:
            diff = _same(expected[key], got[key], f"{path}.{key}")
            if diff:
                return diff
        return None
    if isinstance(expected, list):
        if len(expected) != len(got):
            return f"{path}: length {len(expected)} != {len(got)}"
        for index, (a, b) in enumerate(zip(expected, got)):
            diff = _same(a, b, f"{path}[{index}]")
            if diff:
                return diff
        return None
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        return None if got == pytest.approx(expected, abs=1e-6) else f"{path}: {expected} != {got}"
    return None if expected == got else f"{path}: {expected!r} != {got!r}"


def _without_warmup_flag(data: dict) -> dict:
    for key in ("steps",):
        for step in data.get(key, []):
            step.pop("warmup", None)
    for key in ("firstStep", "lastStep"):
        if key in data:
            data[key].pop("warmup", None)
    return data


@pytest.mark.parametrize("case,profile", sorted(CASES.items()))
def test_training_fixtures_match_expected(fixtures_dir, case, profile):
    folder = fixtures_dir / "training" / case
    expected = json.loads((folder / "expected.json").read_text())
    if (folder / "input_logs.txt").exists():
        logs = (folder / "input_logs.txt").read_text()
    else:
        logs = [(folder / "input_logs_worker0.txt").read_text(), (folder / "input_logs_lastworker.txt").read_text()]
    metrics = parse_training_log(logs, default_log_profile(profile))
    assert _same(expected, _without_warmup_flag(metrics.to_dict())) is None


def test_every_training_fixture_parses(fixtures_dir):
    files = sorted(p for p in (fixtures_dir / "training").rglob("*.txt"))
    assert len(files) >= 9
    for path in files:
        profile = "nemo" if "nemo" in path.name else "megatron-bridge"
        metrics = parse_training_log(path.read_text(), default_log_profile(profile))
        assert metrics.steps or metrics.checkpoints or metrics.pending_save, path


def test_goodput_reference_test_vectors():
    # t_w=14400 s training, t_ch=900 s lost work, t_re=150 s rescheduling, t_rm=70 s resume,
    # t_save=45 s checkpoint saving: (14400-900-70-150-45) / (14400-150).
    assert compute_goodput(t_w=14400, t_ch=900, t_re=150, t_rm=70, t_save=45) == pytest.approx(0.928772, abs=1e-6)
    assert compute_goodput(3600, 0, 0, 0, 360) == pytest.approx(0.9)
    assert compute_goodput(3600, 0, 0, 0, 0) == 1.0
    assert compute_goodput(100, 0, 100, 0, 0) == 0.0  # all rescheduling
    assert compute_goodput(100, 90, 0, 20, 0) == 0.0  # negative numerator
    assert compute_goodput(0, 0, 0, 0, 0) == 0.0


def test_nemo_metrics_tflops_and_step_time_after_warmup(fixtures_dir):
    text = (fixtures_dir / "training" / "nvcre-nemo2-restore-then-warmup.txt").read_text()
    metrics = parse_training_log(text, default_log_profile("nemo"))
    assert [s.warmup for s in metrics.steps] == [True, False, False]
    assert metrics.restore.path == "/checkpoints/step_100/model_weights"
    assert metrics.avg_step_time_sec == pytest.approx((4.25 + 4.22) / 2)
    assert metrics.avg_tflops_per_gpu == pytest.approx((501.3 + 503.8) / 2)
    assert metrics.warmup_time_sec == pytest.approx(38.5)
    worker0 = parse_training_log((fixtures_dir / "training" / "nvcre-nemo2-goodput-worker0.txt").read_text(),
                                 default_log_profile("nemo"))
    assert worker0.steps[1].tflops == pytest.approx(1145.0)  # 1.145e+03
    (checkpoint,) = worker0.checkpoints
    assert checkpoint.step == 102 and checkpoint.save_duration == pytest.approx(2.4)
    saves = parse_training_log((fixtures_dir / "training" / "nvcre-nemo-checkpoint-save-lines.txt").read_text(),
                               default_log_profile("nemo"))
    (checkpoint,) = saves.checkpoints
    assert checkpoint.save_duration == pytest.approx(439.017) and checkpoint.path == "/path/to/checkpoint"


def test_megatron_log_interval_and_warmup(fixtures_dir):
    text = (fixtures_dir / "training" / "nvcre-megatron-core-full-iteration-line" / "input_logs.txt").read_text()
    metrics = parse_training_log(text, default_log_profile("megatron-training"))
    assert [s.global_step for s in metrics.steps] == [10, 20, 30]
    assert [s.warmup for s in metrics.steps] == [True, False, False]
    assert metrics.avg_step_time_sec == pytest.approx((1.2382 + 1.2523) / 2)
    assert metrics.avg_tflops_per_gpu == pytest.approx((602.6 + 595.8) / 2)
    # Steps off the log interval are dropped (startup/restart overhead).
    shifted = text.replace("iteration       20/", "iteration       21/")
    assert [s.global_step for s in parse_training_log(shifted, default_log_profile("megatron-training")).steps] == [10, 30]


def test_step_time_from_timestamps_when_no_timing():
    profile = {
        "metadata": {"name": "plain"},
        "spec": {"timestamp": {"layout": "2006-01-02T15:04:05Z07:00"},
                 "patterns": {"trainingStep": {"regex": r"step (?P<step>\d+) tflops (?P<tflops>[\d.]+)"}}},
    }
    log = "\n".join(f"2026-01-01T00:00:{2 * i:02d}Z step {i} tflops 100" for i in range(1, 6))
    metrics = parse_training_log(log, profile)
    assert metrics.avg_step_time_sec == pytest.approx(2.0)
    assert metrics.avg_tflops_per_gpu == 100.0


def test_truncated_and_garbled_training_logs(fixtures_dir):
    text = (fixtures_dir / "training" / "nvcre-megatron-full-sequence-ckpt" / "input_logs.txt").read_text()
    profile = default_log_profile("megatron-bridge")
    for cut in range(0, len(text), 37):
        parse_training_log(text[:cut], profile)  # never raises
    cut_before_done = text[: text.index("successfully saved")]
    metrics = parse_training_log(cut_before_done, profile)
    assert metrics.checkpoints == [] and metrics.pending_save.step == 100
    garbled = text.replace("elapsed time per iteration (ms): 5000.0", "elapsed time per iteration (ms): \x00\x00")
    metrics = parse_training_log(garbled + "\n\ufffd\ufffd[2026-13-45 99:99:99] iteration 3/9 |\n", profile)
    assert [s.global_step for s in metrics.steps] == [1]
    assert parse_training_log("", profile).steps == []
    assert parse_training_log([], profile).warnings == ["no logs"]


def _t(seconds: float) -> datetime:
    return datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=seconds)


def _log(lines):
    return "\n".join(f"{_t(s).strftime('%Y-%m-%dT%H:%M:%S')}Z {text}" for s, text in lines)


def test_goodput_over_a_restart_accounts_restore_and_lost_work():
    profile = default_log_profile("nemo")
    step = "Training epoch 0, iteration {0}/999 | global_step: {0} | reduced_train_loss: 1.0 | train_step_timing in s: 10.0"
    first = _log([(0, "[NeMo I x] start"), (70, step.format(1)), (1000, "[NeMo I x] Global Checkpoint Save : Rank: 0 : Iteration: 100 : Save duration: 45.0s"),
                  (1900, step.format(190))])
    second = _log([(2050, "[NeMo I x] start"), (2060, "[NeMo I x] Restoring model weights from /ckpt/100"),
                   (2120, step.format(101)), (14470, step.format(1300))])
    runs = [TrainingRun(parse_training_log(first, profile), interrupted_at=_t(1900)),
            TrainingRun(parse_training_log(second, profile))]
    breakdown = goodput_from_runs(runs)
    assert breakdown.training_time_sec == pytest.approx(14400)
    assert breakdown.lost_work_time_sec == pytest.approx(900)  # 1900 - last checkpoint at 1000
    assert breakdown.reschedule_time_sec == pytest.approx(150)  # 1900 -> next start 2050
    assert breakdown.resume_time_sec == pytest.approx(70 + 70)  # initial startup + restart to first step
    assert breakdown.checkpoint_save_time_sec == pytest.approx(45)
    assert breakdown.interruption_count == 1
    assert breakdown.result == pytest.approx(compute_goodput(14400, 900, 150, 140, 45))
    status = goodput_status(runs)
    assert status["interruptionCount"] == "1" and status["result"] == f"{breakdown.result:.6f}"
    assert status["lastCheckpointStep"] == "100"
    metrics = training_threshold_metrics(status)
    assert metrics["goodputRatio"] == pytest.approx(breakdown.result, abs=1e-6)
    assert training_threshold_metrics({"result": "0.000000"})["goodputRatio"] is None


def test_interruption_without_checkpoint_loses_all_work_so_far():
    profile = default_log_profile("nemo")
    step = "Training epoch 0, iteration {0}/9 | global_step: {0} | reduced_train_loss: 1.0 | train_step_timing in s: 1.0"
    first = parse_training_log(_log([(0, step.format(1)), (100, step.format(50))]), profile)
    second = parse_training_log(_log([(110, step.format(1)), (300, step.format(90))]), profile)
    breakdown = goodput_from_runs([first, second])
    assert breakdown.lost_work_time_sec == pytest.approx(100)
    assert breakdown.reschedule_time_sec == pytest.approx(10)


def test_default_profiles_are_log_profile_objects():
    profiles = default_log_profiles()
    names = [p["metadata"]["name"] for p in profiles]
    assert names == ["megatron-bridge", "megatron-training", "nccl-bandwidth", "nccl-loopback", "nemo"]
    for obj in profiles:
        assert obj["apiVersion"] == "nvcre.nvidia.com/v1alpha1" and obj["kind"] == "LogProfile"
        compiled = load_log_profile(obj)  # every example matches its regex
        assert compiled.timestamp_layout
    assert load_log_profile(profiles[2]).replicated_job_name == "launcher"
    assert load_log_profile(profiles[3]).replicated_job_name == "node"
    with pytest.raises(UserError):
        default_log_profile("nope")


@pytest.mark.parametrize(
    "spec,field",
    [
        ({"patterns": {}}, "spec.timestamp.layout"),
        ({"timestamp": {"layout": "x"}, "patterns": {"trainingStep": {"regex": "step ("}}}, "spec.patterns.trainingStep.regex"),
        ({"timestamp": {"layout": "x"}, "patterns": {"trainingStep": {"regex": "step"}}}, "spec.patterns.trainingStep.regex"),
        ({"timestamp": {"layout": "x"}, "patterns": {"bandwidthResult": {"regex": "(?P<size>\\d+)"}}}, "spec.patterns.bandwidthResult.regex"),
        ({"timestamp": {"layout": "x"}, "patterns": {"trainingStep": {"regex": "step (?P<step>\\d+)", "example": "nothing"}}},
         "spec.patterns.trainingStep.example"),
        ({"timestamp": {"layout": "x"}, "patterns": {"trainingStep": {"regex": "s (?P<step>\\d+)", "units": {"stepTiming": "h"}}}},
         "spec.patterns.trainingStep.units.stepTiming"),
        ({"timestamp": {"layout": "x"}, "patterns": {"bogus": {"regex": "x"}}}, "spec.patterns.bogus"),
        ({"timestamp": {"layout": "x"}, "workerStrategy": {"type": "Many"}}, "spec.workerStrategy.type"),
        ({"timestamp": {"layout": "x"}, "logInterval": 0}, "spec.logInterval"),
    ],
)
def test_profile_validation_names_the_field(spec, field):
    with pytest.raises(ManifestError) as err:
        load_log_profile({"metadata": {"name": "bad"}, "spec": spec})
    assert err.value.field == field
    assert "LogProfile/bad" in str(err.value)


def test_go_named_groups_and_units():
    profile = load_log_profile({"spec": {"timestamp": {"layout": "x"}, "patterns": {"trainingStep": {
        "regex": r"it (?<iteration>\d+) took (?P<stepTiming>[\d.]+)us", "units": {"stepTiming": "us"}}}}})
    metrics = parse_training_log("it 5 took 2500000us", profile)
    assert metrics.steps[0].global_step == 5 and metrics.steps[0].step_timing == pytest.approx(2.5)


def test_measure_training_log_for_the_reconciler(fixtures_dir):
    from nvcre.measure.logprofile import default_log_profiles
    from nvcre.measure.training import measure_training_log

    nemo = next(p for p in default_log_profiles() if p["metadata"]["name"] == "nemo")
    text = (fixtures_dir / "training" / "nvcre-nemo2-restore-then-warmup.txt").read_text()
    status = measure_training_log(text, nemo, end_time=datetime(2026, 1, 22, 18, 10, tzinfo=timezone.utc))
    assert status["avgStepTimeSec"] == f"{(4.25 + 4.22) / 2:.6f}"
    assert status["trainingTimeSec"] == "590.000000"  # 18:00:10 first step -> 18:10:00
    assert float(status["result"]) == pytest.approx(compute_goodput(590, 0, 0, 10, 0), abs=1e-6)
    with pytest.raises(UserError):
        measure_training_log(text, {})
