"""torchrun + Megatron-LM pretraining emulator: real Megatron log lines.

Rank 0's pod prints the lifecycle (world size, start datetime, checkpoint load and
saves); the last rank's pod prints ``iteration N/ M | ... elapsed time per iteration
(ms) | throughput per GPU (TFLOP/s/GPU) | lm loss ...`` lines every log interval
(``tests/data/fixtures/training``). Step time follows from the model size, the global
batch and the GPUs' achieved TFLOP/s, slowed by faults. With checkpointing on, a
restarted pod resumes from the last checkpoint the kubelet recorded.

Bracketed timestamps are wall-clock times at which the kubelet writes the line
(time-scaled), so they agree with the kubelet's own log timestamps.
"""

from __future__ import annotations

import math
import os
import random
import re
from dataclasses import dataclass

from nvcre.sim.emulators.base import Effect, Line, Outcome, RunContext, expand
from nvcre.sim.emulators.shell import Segment
from nvcre.sim.hardware import NCCL_VERSION

_SCRIPT = re.compile(r"(pretrain_gpt|pretrain_mamba|pretrain_t5|megatron)", re.IGNORECASE)
STARTUP_S = 60.0
COMM_SHARE = 0.15  # share of step time spent in exposed communication


@dataclass
class TrainArgs:
    train_iters: int = 50
    log_interval: int = 10
    save: str | None = None
    load: str | None = None
    save_interval: int | None = None
    exit_minutes: float | None = None
    num_layers: int = 32
    hidden: int = 4096
    ffn_hidden: int | None = None
    seq_length: int = 8192
    global_batch: int | None = None
    micro_batch: int = 1
    tp: int = 1
    pp: int = 1
    cp: int = 1
    async_save: bool = False
    nnodes: int = 1
    nproc_per_node: int = 1
    node_rank: int = 0

    @property
    def world(self) -> int:
        return max(1, self.nnodes * self.nproc_per_node)

    @property
    def params(self) -> float:
        ffn = self.ffn_hidden or 4 * self.hidden
        per_layer = 4 * self.hidden * self.hidden + 2 * self.hidden * ffn
        return self.num_layers * per_layer + 131072 * self.hidden


def find(segments: list[Segment]) -> tuple[Segment, int] | None:
    """The torchrun (or python -m torch.distributed.run) segment running Megatron."""
    for segment in segments:
        argv = segment.argv
        if not argv:
            continue
        program = os.path.basename(argv[0])
        start = None
        if program == "torchrun":
            start = 0
        elif program.startswith("python") and "-m" in argv:
            m = argv.index("-m")
            if m + 1 < len(argv) and argv[m + 1] in ("torch.distributed.run", "torch.distributed.launch"):
                start = m + 1
        elif program.startswith("python") and any(_SCRIPT.search(t) for t in argv[1:2]):
            start = 0
        if start is not None and any(_SCRIPT.search(t) for t in argv[start:]):
            return segment, start
    return None


def _int(value: str | None, default: int) -> int:
    try:
        return int(float(value)) if value not in (None, "") else default
    except ValueError:
        return default


def parse_args(argv: list[str], env: dict[str, str]) -> TrainArgs:
    args = TrainArgs()
    args.nnodes = _int(env.get("PET_NNODES"), 1)
    args.nproc_per_node = _int(env.get("PET_NPROC_PER_NODE"), 1)
    args.node_rank = _int(env.get("PET_NODE_RANK") or env.get("NODE_RANK") or env.get("JOB_COMPLETION_INDEX"), 0)
    args.train_iters = _int(env.get("TRAIN_ITERS"), args.train_iters)
    if env.get("SAVE_INTERVAL"):
        args.save_interval = _int(env.get("SAVE_INTERVAL"), 0) or None
    tokens = [expand(t, env) for t in argv]
    i = 0
    while i < len(tokens):
        name, eq, inline = tokens[i].partition("=")
        value = inline if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
        step = 1 if eq else 2
        key = name.replace("_", "-")
        if key == "--nnodes":
            args.nnodes = _int(value.split(":")[-1], args.nnodes)
        elif key == "--nproc-per-node":
            args.nproc_per_node = _int(value, args.nproc_per_node)
        elif key == "--node-rank":
            args.node_rank = _int(value, args.node_rank)
        elif key == "--train-iters":
            args.train_iters = _int(value, args.train_iters)
        elif key == "--log-interval":
            args.log_interval = max(1, _int(value, args.log_interval))
        elif key == "--save":
            args.save = value
        elif key == "--load":
            args.load = value
        elif key == "--save-interval":
            args.save_interval = _int(value, 0) or None
        elif key == "--exit-duration-in-mins":
            args.exit_minutes = float(value) if value.replace(".", "", 1).isdigit() else None
        elif key == "--num-layers":
            args.num_layers = _int(value, args.num_layers)
        elif key == "--hidden-size":
            args.hidden = _int(value, args.hidden)
        elif key == "--ffn-hidden-size":
            args.ffn_hidden = _int(value, 0) or None
        elif key == "--seq-length":
            args.seq_length = _int(value, args.seq_length)
        elif key == "--global-batch-size":
            args.global_batch = _int(value, 0) or None
        elif key == "--micro-batch-size":
            args.micro_batch = _int(value, 1)
        elif key == "--tensor-model-parallel-size":
            args.tp = max(1, _int(value, 1))
        elif key == "--pipeline-model-parallel-size":
            args.pp = max(1, _int(value, 1))
        elif key == "--context-parallel-size":
            args.cp = max(1, _int(value, 1))
        elif key == "--async-save":
            args.async_save = True
            step = 1
        else:
            step = 1
        i += step
    if env.get("ENABLE_CHECKPOINT", "").lower() in ("true", "1", "yes") and not args.save:
        args.save = "/mnt/workspace/checkpoints"
    if args.save and not args.load:
        args.load = args.save
    if args.save and args.save_interval is None:
        args.save_interval = 250
    return args


def _stamp(ctx: RunContext, at: float) -> str:
    return ctx.wall(at).strftime("%Y-%m-%d %H:%M:%S.%f")


def emulate(ctx: RunContext, segment: Segment, start: int) -> Outcome:
    """Run Megatron pretraining as the torchrun command asks."""
    args = parse_args(segment.argv[start + 1:], segment.env)
    world = args.world
    dp = max(1, world // (args.tp * args.pp * args.cp))
    gbs = args.global_batch or dp * args.micro_batch
    node = ctx.node
    first_rank = args.node_rank == 0
    last_rank = args.node_rank == args.nnodes - 1
    rng = random.Random(ctx.run_seed("megatron"))

    slowdown = ctx.faults.gpu_factor(node.name)
    nic = ctx.faults.nic_factor(node.name)
    comm = 1.0 + COMM_SHARE * (1.0 / nic - 1.0)
    achieved = node.arch.tflops * slowdown / comm
    flops_per_iter = 6.0 * args.params * gbs * args.seq_length * (1.0 + args.seq_length / (6.0 * args.hidden))
    step_s = flops_per_iter / (world * achieved * 1e12)

    key = f"{ctx.pod.namespace}:{args.save}" if args.save else ""
    resume = ctx.checkpoints.get(key, 0) if args.load and key else 0
    lines: list[Line] = []
    t = 5.0
    if first_rank:
        lines.append(Line(t, (
            f"using world size: {world}, data-parallel size: {dp}, context-parallel size: {args.cp}, "
            f"hierarchical context-parallel sizes: None, tensor-model-parallel size: {args.tp}, "
            f"pipeline-model-parallel size: {args.pp}")))
    t = STARTUP_S
    if first_rank and resume:
        lines.append(Line(t - 20.0, f"Loading checkpoint from {args.load} at iteration {resume}"))
        lines.append(Line(t - 5.0, (
            f" successfully loaded checkpoint from {args.load} [ t {1}/{args.tp}, p {1}/{args.pp} ] "
            f"at iteration {resume}")))
    if first_rank:
        lines.append(Line(t, f"[before the start of training step] datetime: {_stamp(ctx, t)}"))

    # faults that end the run early
    stop_iter: int | None = None
    crash: list[str] = []
    crash_code = 1
    effect: Effect | None = None
    remaining = max(0, args.train_iters - resume)
    off_bus = ctx.faults.gpu_off_bus(node.name)
    if off_bus is not None and node.name in ctx.off_bus and off_bus.gpu < args.nproc_per_node:
        rank = args.node_rank * args.nproc_per_node + off_bus.gpu
        lines.append(Line(t, f"[rank{rank}]: RuntimeError: CUDA error: unknown error"))
        lines.append(Line(t + 0.01, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: pretrain_gpt.py FAILED"))
        return Outcome("megatron", sorted(lines, key=lambda x: x.at), exit_code=1, duration=t + 1.0, reason="Error")
    if remaining and off_bus is not None and node.name not in ctx.off_bus:
        stop_iter = resume + max(1, int(remaining * off_bus.at_fraction))
        effect = Effect("gpu-off-bus", node=node.name, gpu=off_bus.gpu)
        crash = [
            f"[rank{args.node_rank * args.nproc_per_node + off_bus.gpu}]: RuntimeError: CUDA error: unspecified launch failure",
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
            (f"torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, "
             f"unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version {NCCL_VERSION.split('+')[0]}"),
            "ncclUnhandledCudaError: Call to CUDA function failed.",
            "Last error:",
            "Cuda failure 'unspecified launch failure'",
        ]
    probability = ctx.faults.flaky_probability(node.name)
    if remaining and probability > 0 and rng.random() < probability:
        candidate = resume + max(1, int(remaining * rng.uniform(0.1, 0.9)))
        if stop_iter is None or candidate < stop_iter:
            stop_iter, effect = candidate, None
            crash = [
                (f"[rank{args.node_rank * args.nproc_per_node}]:[E{_stamp(ctx, 0)[5:7]}{_stamp(ctx, 0)[8:10]} "
                 f"ProcessGroupNCCL.cpp:632] [Rank {args.node_rank * args.nproc_per_node}] Watchdog caught collective "
                 f"operation timeout: WorkNCCL(SeqNum={candidate * 40}, OpType=ALLREDUCE, NumelIn=131072, "
                 f"NumelOut=131072, Timeout(ms)=600000) ran for 600021 milliseconds before timing out."),
                "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) local_rank: 0",
                "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: pretrain_gpt.py FAILED",
            ]

    exit_s = args.exit_minutes * 60.0 if args.exit_minutes else math.inf
    pending_saves: list[tuple[float, str, Effect]] = []
    interval_time = 0.0
    iteration = resume
    first_of_run = True
    consumed = resume * gbs
    loss = 10.4 * math.exp(-resume / 400.0) + 1.8
    exited_early = False
    while iteration < args.train_iters:
        iteration += 1
        cost = step_s * (15.0 if first_of_run and resume == 0 else 8.0 if first_of_run else 1.0)
        cost *= 1.0 + rng.gauss(0.0, ctx.faults.noise or 0.0)
        first_of_run = False
        t += cost
        interval_time += cost
        consumed += gbs
        loss = 10.4 * math.exp(-iteration / 400.0) + 1.8 + rng.gauss(0.0, 0.02)
        if stop_iter is not None and iteration >= stop_iter:
            lines.append(Line(t, crash[0], effect))
            lines.extend(Line(t + 0.01 * (i + 1), text) for i, text in enumerate(crash[1:]))
            for at, text, eff in pending_saves:
                if at < t:
                    lines.append(Line(at, text, eff))
            return Outcome("megatron", sorted(lines, key=lambda x: x.at), exit_code=crash_code,
                           duration=t + 1.0, reason="Error")
        if last_rank and (iteration % args.log_interval == 0 or iteration == args.train_iters):
            span = iteration % args.log_interval or args.log_interval
            elapsed_ms = interval_time / span * 1e3
            tflops = flops_per_iter / (elapsed_ms / 1e3) / world / 1e12
            lines.append(Line(t, (
                f"[{_stamp(ctx, t)}] iteration {iteration:8d}/{args.train_iters:8d} | consumed samples: {consumed:12d} | "
                f"elapsed time per iteration (ms): {elapsed_ms:.1f} | throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | "
                f"learning rate: {6e-4:.6E} | global batch size: {gbs:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | "
                f"grad norm: {0.5 + rng.random():.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |")))
            interval_time = 0.0
        if args.save and args.save_interval and iteration % args.save_interval == 0 and iteration < args.train_iters:
            t = _save(ctx, args, iteration, t, lines if first_rank else None, pending_saves, key)
        if t >= exit_s:
            if first_rank:
                lines.append(Line(t, f" exiting program after {t / 60.0:.2f} minutes"))
            exited_early = True
            break
    if args.save and not exited_early and iteration > resume:
        t = _save(ctx, args, iteration, t, lines if first_rank else None, pending_saves, key)
    for at, text, eff in pending_saves:
        lines.append(Line(at, text, eff))
        t = max(t, at)
    if first_rank:
        lines.append(Line(t + 1.0, f"[after training is done] datetime: {_stamp(ctx, t + 1.0)}"))
    return Outcome("megatron", sorted(lines, key=lambda x: x.at), exit_code=0, duration=t + 2.0)


def _save(ctx: RunContext, args: TrainArgs, iteration: int, t: float, lines: list[Line] | None,
          pending: list[tuple[float, str, Effect]], key: str) -> float:
    """Write a checkpoint: the synchronous part blocks training, async I/O finishes later."""
    sync_s = 4.0 + args.params / 1e9 * 1.5
    effect = Effect("checkpoint", key=key, value=iteration)
    done = f"[{{}}] successfully saved checkpoint from iteration {iteration:7d} to {args.save} [ t 1/{args.tp}, p 1/{args.pp} ]"
    if lines is None:
        # other ranks still pay the pause; rank 0 records the checkpoint
        return t + sync_s
    lines.append(Line(t, f"[{_stamp(ctx, t)}] saving checkpoint at iteration {iteration:7d} to {args.save} in torch_dist format"))
    if args.async_save:
        lines.append(Line(t + 0.5, "Storing distributed optimizer sharded state of type dp_reshardable"))
        end = t + sync_s
        lines.append(Line(end, f"  [{_stamp(ctx, end)}] scheduled an async checkpoint save at iteration {iteration:7d} to {args.save}"))
        finish = end + 6.0 * sync_s
        pending.append((finish, done.format(_stamp(ctx, finish)), effect))
        return end
    end = t + sync_s
    lines.append(Line(end, done.format(_stamp(ctx, end)), effect))
    return end
