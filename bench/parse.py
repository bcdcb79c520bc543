"""Benchmark: parse time for a large nccl-tests log and a long training log.

The nccl log is built from the real 2-node A100 fixture (NCCL INFO noise, kubelet
timestamps) repeated until it is about 20 MB, as a long -N run with NCCL_DEBUG=INFO
produces; the training log is 100,000 Megatron iteration lines with checkpoints.
Prints seconds and MB/s (the controller reads the whole launcher log once per Job).
"""

from __future__ import annotations

import time
from pathlib import Path

from nvcre.measure.logprofile import default_log_profile
from nvcre.measure.nccl import bandwidth_summary, parse_nccl_log
from nvcre.measure.training import goodput_status, parse_training_log

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "data" / "fixtures"
TARGET_BYTES = 20 * 1024 * 1024


def nccl_log() -> str:
    base = (FIXTURES / "nccl" / "nvcre-a100-allreduce-2node-k8s-debug.log").read_text()
    parts, size = [], 0
    while size < TARGET_BYTES:
        parts.append(base)
        size += len(base)
    return "".join(parts)


def training_log(steps: int = 100_000) -> str:
    lines = []
    for i in range(1, steps + 1):
        second = i * 2
        stamp = f"2026-02-05 {10 + second // 3600 % 14:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000000"
        lines.append(
            f"2026-02-05T10:00:00.000000000Z [{stamp}] iteration {i:>8}/  999999 | consumed samples: {i * 768} | "
            f"elapsed time per iteration (ms): 2000.0 | throughput per GPU (TFLOP/s/GPU): 600.0 | "
            f"learning rate: 6.0E-04 | lm loss: 2.5E+00 | loss scale: 1.0 |"
        )
        if i % 5000 == 0:
            lines.append(f"[{stamp}] saving checkpoint at iteration {i:>8} to /ckpt in torch_dist format")
            lines.append(f"[{stamp}] scheduled an async checkpoint save at iteration {i:>8} to /ckpt")
    return "\n".join(lines)


def measure(label: str, func, text: str) -> None:
    start = time.perf_counter()
    detail = func(text)
    seconds = time.perf_counter() - start
    mb = len(text) / 1e6
    print(f"  {label:<28} {mb:7.1f} MB  {seconds:6.2f} s  {mb / seconds:6.1f} MB/s  {detail}")


def main() -> None:
    print("log parsing")
    text = nccl_log()

    def nccl(t: str) -> str:
        result = parse_nccl_log(t)
        summary = bandwidth_summary(result)
        return f"{len(result.rows)} rows, {len(summary['sizes'])} sizes, transport {summary['transport']}"

    measure("nccl-tests (k8s, INFO noise)", nccl, text)
    profile = default_log_profile("megatron-training")
    train = training_log()

    def training(t: str) -> str:
        metrics = parse_training_log(t, profile)
        status = goodput_status([metrics])
        return f"{len(metrics.steps)} steps, {len(metrics.checkpoints)} checkpoints, step {status['avgStepTimeSec']} s"

    measure("megatron training log", training, train)


if __name__ == "__main__":
    main()
