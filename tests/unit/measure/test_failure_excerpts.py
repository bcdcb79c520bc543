"""Failure-log tails and reasons from workload logs; training stall detection."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from nvcre.measure.failures import TAIL_BYTES, failure_excerpt, log_tail
from nvcre.measure.logprofile import default_log_profile
from nvcre.measure.training import parse_training_log, stall_reason


def test_log_tail_keeps_the_end_within_limits():
    text = "\n".join(f"line {i}" for i in range(2000))
    tail = log_tail(text)
    assert tail.splitlines()[0] == "line 1200" and tail.endswith("line 1999")
    assert log_tail("", max_lines=800) == "" and log_tail(None) == ""


def test_log_tail_is_exactly_the_last_max_bytes_cut_mid_line():
    """The reference's failureLog.tail: the last 800 lines, then exactly the last 32 KiB."""
    wide = "".join("x" * 100 + f"{i}\n" for i in range(800))  # ~82 KB, ends with a newline
    cut = log_tail(wide)
    assert cut.encode() == wide.encode()[-TAIL_BYTES:]  # byte for byte
    assert len(cut.encode()) == TAIL_BYTES
    assert cut.endswith("799\n")  # trailing newline kept
    assert not cut.startswith("x" * 100)  # cut mid-line where the cap fell
    assert log_tail("a\nb\n", max_bytes=3) == "\nb\n"
    assert log_tail("a\nb", max_bytes=3) == "a\nb"


def test_log_tail_line_cap_counts_lines_not_newlines():
    text = "".join(f"l{i}\n" for i in range(1000))
    tail = log_tail(text)
    assert tail == "".join(f"l{i}\n" for i in range(200, 1000))
    assert log_tail("one\ntwo", max_lines=1) == "two"
    assert log_tail("one\ntwo\n", max_lines=1) == "two\n"


def test_log_tail_drops_only_a_split_character():
    text = "é" * 40000  # two bytes each
    out = log_tail(text, max_bytes=1001)
    assert len(out.encode("utf-8")) == 1000 and set(out) == {"é"}


def test_failure_excerpt_sources(fixtures_dir):
    dcgm = (fixtures_dir / "dcgm" / "virtualclient-dcgmi-diag-fail-cuda-lib-malformed.json").read_text()
    assert failure_excerpt(dcgm).startswith("CUDA Main Library failed on node")
    nccl = "gpu-node-12:7:7 [3] NCCL WARN NET/IB : Got completion with error 12\nsomething else\n"
    assert "gpu-node-12" in failure_excerpt(nccl) and "Got completion with error" in failure_excerpt(nccl)
    python = "\n".join(["Traceback (most recent call last):", '  File "train.py", line 3', "torch.OutOfMemoryError: CUDA out of memory."])
    assert failure_excerpt(python) == "torch.OutOfMemoryError: CUDA out of memory."
    assert failure_excerpt("2026-01-01T00:00:00Z step 1\n2026-01-01T00:00:01Z Killed\n") == "Killed"
    assert failure_excerpt("all good\n") is None
    passing = (fixtures_dir / "nccl" / "nvcre-a100-allreduce-2node-k8s-debug.log").read_text()
    assert failure_excerpt(passing) is None


def test_stall_reason():
    profile = default_log_profile("nemo")
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    step = "Training epoch 0, iteration {0}/9 | global_step: {0} | reduced_train_loss: 1.0 | train_step_timing in s: 2.0"
    log = "\n".join(f"{(base + timedelta(seconds=2 * i)).strftime('%Y-%m-%dT%H:%M:%S')}Z {step.format(i)}" for i in range(1, 6))
    metrics = parse_training_log(log, profile)
    last = base + timedelta(seconds=10)
    assert stall_reason(metrics, last + timedelta(seconds=5)) is None
    reason = stall_reason(metrics, last + timedelta(seconds=7))
    assert reason.startswith("no training step for 7s after step 5") and "3 x 2.00s" in reason
    empty = parse_training_log("", profile)
    assert stall_reason(empty, base + timedelta(seconds=100), started_at=base, startup_stall_timeout_s=1200) is None
    assert "1200s" in stall_reason(empty, base + timedelta(seconds=1300), started_at=base, startup_stall_timeout_s=1200)
