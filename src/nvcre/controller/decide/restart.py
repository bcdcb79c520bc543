"""Whether a dead training workload restarts from its checkpoint."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RestartDecision:
    restart: bool
    attempt: int = 0  # the restart this would be (1-based)
    why: str = ""


def decide_restart(budget: tuple[int, int] | None, sick: list[str], saved_checkpoint: bool | None) -> RestartDecision:
    """``budget``: (restarts so far, maxRestarts), None without checkpointing; ``sick``: nodes a
    health detector named (restarting there is futile); ``saved_checkpoint``: whether the dead
    attempt's log shows a saved checkpoint (None: not read yet, because nothing else allows it)."""
    if budget is None:
        return RestartDecision(False, why="checkpointing is off")
    used, limit = budget
    if used >= limit:
        return RestartDecision(False, why=f"no restarts left ({used}/{limit})")
    if sick:
        return RestartDecision(False, why=f"unhealthy nodes: {', '.join(sorted(sick)[:8])}")
    if saved_checkpoint is None:
        return RestartDecision(True, used + 1, "read the log")  # the caller reads it and asks again
    if not saved_checkpoint:
        return RestartDecision(False, why="the dead attempt saved no checkpoint")
    return RestartDecision(True, used + 1, f"restart {used + 1}/{limit}")
