"""Start and stop the fake kubelet as a background process, and find it again.

``nvcrectl sim up`` and the ``fleet`` pytest fixture both go through here. The state
directory holds ``kubelet-config.json`` (what was asked), ``kubelet.pid``,
``kubelet.log``, and, once every node is registered, ``kubelet.json`` (port, nodes,
registration time) and ``ground-truth.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nvcre.errors import UserError
from nvcre.sim.fabric import FabricModel, Member
from nvcre.sim.fleet import Fleet, build_fleet
from nvcre.sim.kubelet import KubeletConfig, delete_fleet

CONFIG_FILE = "kubelet-config.json"
PID_FILE = "kubelet.pid"
LOG_FILE = "kubelet.log"
READY_FILE = "kubelet.json"
TRUTH_FILE = "ground-truth.json"


class FleetError(UserError):
    """The simulated fleet could not be started or reached."""


@dataclass
class FleetHandle:
    """A running fleet: its kubelet process and what it registered."""

    state_dir: Path
    config: KubeletConfig
    pid: int
    port: int
    nodes: list[str]
    registered_seconds: float

    @property
    def log_file(self) -> Path:
        return self.state_dir / LOG_FILE

    def ground_truth(self) -> dict[str, Any]:
        return json.loads((self.state_dir / TRUTH_FILE).read_text())

    def alive(self) -> bool:
        return _is_kubelet(self.pid)

    def stop(self, *, delete: bool = True) -> None:
        stop_fleet(self.state_dir, delete=delete)

    def model(self) -> Fleet:
        """The fleet's nodes and facts, rebuilt from the same spec and faults (pure)."""
        return build_fleet(self.config.fleet_spec(self.port), self.config.fault_model())

    def fabric(self) -> FabricModel:
        """The fabric model the kubelet uses, to compute expected bandwidths in tests."""
        return FabricModel(self.config.fault_model())

    def expected_busbw(self, nodes: list[str], *, op: str = "all_reduce", size: int = 16 << 30,
                       ranks_per_node: int | None = None, transport: str = "IB", mnnvl: bool = True,
                       loopback: bool = False) -> float:
        """Noise-free bus bandwidth (GB/s) the model gives a group at one message size.

        ``loopback``: P2P and SHM disabled (nccl-loopback), ranks of a node go through its NICs.
        """
        facts = self.model().facts
        members = [Member(facts[n], ranks_per_node or facts[n].gpus) for n in nodes]
        path = self.fabric().path(members, transport=transport, mnnvl=mnnvl, loopback=loopback)
        return FabricModel.expected(op, size, sum(m.ranks for m in members), path)[2]


def _is_kubelet(pid: int) -> bool:
    """True when ``pid`` is alive and is a fake kubelet (never signal a stranger)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if not any(part.endswith(b"nvcre.sim.kubelet") for part in cmdline):
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def start_fleet(config: KubeletConfig, *, timeout_s: float = 90.0, detach: bool = False) -> FleetHandle:
    """Start the kubelet process and wait until it has registered every node.

    ``detach`` puts it in its own session so it outlives the caller (``sim up``).
    """
    state_dir = Path(config.state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    running = read_pid(state_dir)
    if running is not None and _is_kubelet(running):
        raise FleetError(f"a simulated fleet is already running (pid {running}, state in {state_dir}); "
                         "run `nvcrectl sim down` first")
    for stale in (READY_FILE, TRUTH_FILE):
        (state_dir / stale).unlink(missing_ok=True)
    config_path = state_dir / CONFIG_FILE
    config.write(config_path)
    log = open(state_dir / LOG_FILE, "ab")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "nvcre.sim.kubelet", str(config_path)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
        start_new_session=detach, close_fds=True,
        preexec_fn=None if detach else _die_with_parent,
    )
    log.close()
    (state_dir / PID_FILE).write_text(f"{process.pid}\n")
    deadline = time.monotonic() + timeout_s
    ready = state_dir / READY_FILE
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = _tail(state_dir / LOG_FILE)
            raise FleetError(f"the fake kubelet exited with code {process.returncode}; last lines of "
                             f"{state_dir / LOG_FILE}:\n{tail}")
        if ready.is_file():
            try:
                info = json.loads(ready.read_text())
            except json.JSONDecodeError:
                info = None
            if info and info.get("pid") == process.pid:
                return FleetHandle(state_dir, config, process.pid, info["port"], info["nodes"],
                                   info["registeredSeconds"])
        time.sleep(0.05)
    process.terminate()
    raise FleetError(f"the fake kubelet did not register its nodes within {timeout_s:.0f}s; "
                     f"see {state_dir / LOG_FILE}:\n{_tail(state_dir / LOG_FILE)}")


def _die_with_parent() -> None:
    """Linux: SIGTERM the kubelet when the process that started it dies (tests, fixtures)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def read_pid(state_dir: Path) -> int | None:
    try:
        return int((state_dir / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None


def load_fleet(state_dir: Path) -> FleetHandle | None:
    """The fleet started from ``state_dir`` if its kubelet is still running."""
    pid = read_pid(state_dir)
    if pid is None or not _is_kubelet(pid):
        return None
    try:
        config = KubeletConfig.read(state_dir / CONFIG_FILE)
        info = json.loads((state_dir / READY_FILE).read_text())
    except (OSError, json.JSONDecodeError, TypeError):
        return None
    return FleetHandle(state_dir, config, pid, info["port"], info["nodes"], info["registeredSeconds"])


def stop_fleet(state_dir: Path, *, delete: bool = True, timeout_s: float = 15.0) -> bool:
    """Stop the kubelet of ``state_dir`` and (``delete``) remove its nodes from the cluster.

    Returns True when there was something to stop or delete.
    """
    state_dir = Path(state_dir)
    did = False
    pid = read_pid(state_dir)
    if pid is not None and _is_kubelet(pid):
        did = True
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _is_kubelet(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _is_kubelet(pid):
            os.kill(pid, signal.SIGKILL)
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    (state_dir / PID_FILE).unlink(missing_ok=True)
    config_path = state_dir / CONFIG_FILE
    if delete and config_path.is_file():
        config = KubeletConfig.read(config_path)
        try:
            counts = asyncio.run(delete_fleet(config.kubeconfig, config.fleet_name))
            did = did or counts["nodes"] > 0
        except Exception as exc:  # the control plane may already be gone
            print(f"warning: could not delete the fleet's nodes: {exc}", file=sys.stderr)
        config_path.unlink(missing_ok=True)
    (state_dir / READY_FILE).unlink(missing_ok=True)
    return did


def self_signed_kubelet_cert(state_dir: Path) -> tuple[str, str]:
    """A serving certificate for 127.0.0.1 from a throw-away CA (clusters we did not start)."""
    from nvcre.testbed import certs

    directory = Path(state_dir) / "pki"
    ca = certs.CertificateAuthority.create(directory, common_name="nvcre-sim-kubelet-ca")
    pair = ca.issue(directory, "kubelet-serving", common_name="nvcre-fake-kubelet", server=True,
                    hosts=("127.0.0.1", "::1", "localhost"))
    return str(pair.cert), str(pair.key)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
