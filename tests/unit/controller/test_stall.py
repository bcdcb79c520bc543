from datetime import datetime, timedelta, timezone

from nvcre.controller.reconcilers.job import stall_verdict
from nvcre.measure.logprofile import default_log_profiles

PROFILE = {p["metadata"]["name"]: p for p in default_log_profiles()}["megatron-training"]
T0 = datetime(2026, 11, 30, 8, 0, 0, tzinfo=timezone.utc)


def _log(steps: int) -> str:
    lines = [f"[{(T0 - timedelta(seconds=5)).strftime('%Y-%m-%d %H:%M:%S.%f')}] [before the start of training step] datetime: x"]
    for i in range(1, steps + 1):
        stamp = (T0 + timedelta(seconds=i)).strftime("%Y-%m-%d %H:%M:%S.%f")
        lines.append(
            f"[{stamp}] iteration {i:8d}/     300 | consumed samples: {8 * i:12d} | elapsed time per iteration (ms): 1000.0 | "
            "throughput per GPU (TFLOP/s/GPU): 540.0 | learning rate: 6.000000E-04 | global batch size:     8 | "
            "lm loss: 7.5E+00 | loss scale: 1.0 | grad norm: 0.8 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        )
    return "\n".join(lines) + "\n"


def test_stall_after_steps_stop():
    text = _log(20)
    last = (T0 + timedelta(seconds=20)).timestamp()
    assert stall_verdict(text, PROFILE, now=last + 1, multiplier=3, started_at=None, resumed_at=None, startup_timeout=1200) is None
    reason = stall_verdict(text, PROFILE, now=last + 60, multiplier=3, started_at=None, resumed_at=None, startup_timeout=1200)
    assert reason and "no training step" in reason


def test_startup_stall_without_any_step():
    started = T0.timestamp()
    assert stall_verdict("nothing yet\n", PROFILE, now=started + 100, multiplier=3, started_at=started, resumed_at=None, startup_timeout=1200) is None
    assert stall_verdict("nothing yet\n", PROFILE, now=started + 1300, multiplier=3, started_at=started, resumed_at=None, startup_timeout=1200)
