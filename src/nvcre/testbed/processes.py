"""Starting and stopping the control-plane processes so that nothing is left behind.

Each process runs in its own session (its own process group), so stopping it stops
anything it forked too. A record of (pid, process start time) lets another Python
process stop them later without ever signalling a recycled pid.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

_PR_SET_PDEATHSIG = 1
logger = logging.getLogger(__name__)


def _die_with_parent() -> None:
    """preexec hook: the kernel kills the child when the thread that started it dies.

    SIGKILL, not SIGTERM: the owner is gone, so there is no orderly tier-by-tier stop,
    and an API server told to drain while etcd vanishes can hang for good.
    """
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def process_start_time(pid: int) -> int | None:
    """Clock ticks since boot when ``pid`` started (field 22 of /proc/pid/stat), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces; fields after it follow the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19])


@dataclass(frozen=True)
class ProcessRecord:
    """Enough to find one started process again from another Python process."""

    name: str
    pid: int
    start_time: int
    log: str

    def alive(self) -> bool:
        """True while this very process (not a recycled pid) is running."""
        if process_start_time(self.pid) != self.start_time:
            return False
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    def to_json(self) -> dict:
        return asdict(self)


def spawn(name: str, argv: list[str], log_path: Path, *, detach: bool, env: dict | None = None) -> tuple[subprocess.Popen, ProcessRecord]:
    """Start ``argv`` in a new session, stdout and stderr to ``log_path``.

    Unless ``detach``, the child is tied to this process's life (PR_SET_PDEATHSIG) so
    a test run killed hard does not leave a control plane behind.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=None if detach else _die_with_parent,
            env=env,
        )
    started = process_start_time(proc.pid)
    record = ProcessRecord(name=name, pid=proc.pid, start_time=started or 0, log=str(log_path))
    return proc, record


def _signal_group(record: ProcessRecord, sig: int) -> None:
    if not record.alive():
        return
    try:
        os.killpg(record.pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(record.pid, sig)


def stop_all(
    records: list[ProcessRecord],
    popens: dict[int, subprocess.Popen] | None = None,
    *,
    grace_s: float = 10.0,
) -> None:
    """SIGTERM each process group (in the given order), then SIGKILL what is left.

    ``popens`` are the Popen objects when this process started them: waiting on them
    reaps the children so no zombie stays behind.
    """
    popens = popens or {}
    for record in records:
        _signal_group(record, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for record in records:
        _wait_gone(record, popens.get(record.pid), deadline)
    for record in records:
        if record.alive():
            logger.warning("%s (pid %d) ignored SIGTERM for %.0fs; killing it", record.name, record.pid, grace_s)
            _signal_group(record, signal.SIGKILL)
            _wait_gone(record, popens.get(record.pid), time.monotonic() + 5)


def _wait_gone(record: ProcessRecord, popen: subprocess.Popen | None, deadline: float) -> None:
    while time.monotonic() < deadline:
        if popen is not None:
            try:
                popen.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                continue
            return
        if not record.alive():
            return
        time.sleep(0.05)
