"""One pod on a simulated node, taken through the phases a real kubelet reports.

Pending (sandbox, init containers one by one) -> Running (containers started, ready)
-> Succeeded or Failed, with container states waiting/running/terminated, exit
codes and reasons, restarts per ``restartPolicy`` (with back-off), readiness, pod
IP and the pod conditions. Each container's output comes from its emulator and is
written at the emulator's (time-scaled) pace. A pod with a deletionTimestamp has
its containers stopped and is then finalized with a zero-grace DELETE.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from datetime import datetime, timezone
from typing import Any

from nvcre.sim.emulators import dispatch, nccl_tests, pairwise
from nvcre.sim.emulators.base import Line, Outcome
from nvcre.sim.emulators.shell import segments
from nvcre.sim.host import PodHost

log = logging.getLogger("nvcre.sim.pod")

BACKOFF_START_S = 10.0
BACKOFF_MAX_S = 300.0
API_RETRY_MAX_S = 5.0  # API-dependent steps (mounts, env) retry at most this far apart
EXIT_KILLED = 137


def now_str() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ContainerState:
    """What the kubelet reports for one container."""

    def __init__(self, spec: dict[str, Any], pod_uid: str):
        self.spec = spec
        self.name = spec["name"]
        self.image = spec.get("image", "")
        self.restart_count = 0
        self.state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
        self.last_state: dict[str, Any] = {}
        self.ready = False
        self.started = False
        self._uid = pod_uid
        self.stop = asyncio.Event()
        self.stop_code: int | None = None
        self.stop_line: str | None = None
        self.rendezvous: str | None = None  # torchrun group this run belongs to

    def container_id(self) -> str:
        digest = hashlib.sha256(f"{self._uid}/{self.name}/{self.restart_count}".encode()).hexdigest()
        return f"containerd://{digest}"

    def status(self) -> dict[str, Any]:
        image = self.image if ":" in self.image.rsplit("/", 1)[-1] else f"{self.image}:latest"
        out: dict[str, Any] = {
            "name": self.name,
            "image": image,
            "imageID": f"{image.split(':')[0]}@sha256:{hashlib.sha256(image.encode()).hexdigest()}",
            "ready": self.ready,
            "started": self.started,
            "restartCount": self.restart_count,
            "state": self.state,
            "lastState": self.last_state,
        }
        if "waiting" not in self.state or self.restart_count:
            out["containerID"] = self.container_id()
        return out


def _rendezvous(env: dict[str, str], segs) -> str | None:
    """The torchrun group key: master address and port (or rendezvous endpoint)."""
    for segment in segs:
        argv = segment.argv
        for flag in ("--rdzv-endpoint", "--rdzv_endpoint", "--master-addr", "--master_addr"):
            if flag in argv[:-1]:
                value = argv[argv.index(flag) + 1]
                if not value:
                    continue
                port = ""
                for pflag in ("--master-port", "--master_port"):
                    if pflag in argv[:-1]:
                        port = argv[argv.index(pflag) + 1]
                return f"{value}:{port}"
    addr = env.get("PET_MASTER_ADDR") or env.get("MASTER_ADDR")
    return f"{addr}:{env.get('PET_MASTER_PORT') or env.get('MASTER_PORT', '')}" if addr else None


class PodRunner:
    """Runs one pod bound to a fleet node."""

    def __init__(self, kubelet: PodHost, pod: dict[str, Any], serial: int):
        self.k = kubelet
        self.pod = pod
        meta, spec = pod["metadata"], pod["spec"]
        self.uid = meta["uid"]
        self.ns = meta["namespace"]
        self.name = meta["name"]
        self.node = kubelet.facts[spec["nodeName"]]
        self.host_network = bool(spec.get("hostNetwork"))
        self.ip = "127.0.0.1" if self.host_network else self.node.pod_ip(serial)
        self.restart_policy = spec.get("restartPolicy", "Always")
        self.init = [ContainerState(c, self.uid) for c in spec.get("initContainers") or []]
        self.main = [ContainerState(c, self.uid) for c in spec.get("containers") or []]
        for c in self.init:
            c.state = {"waiting": {"reason": "PodInitializing"}}
        if self.init:
            for c in self.main:
                c.state = {"waiting": {"reason": "PodInitializing"}}
        self.phase = "Pending"
        self.initialized = not self.init
        self.start_time = now_str()
        self._transitions: dict[str, tuple[str, str]] = {}
        self.deleting = False
        self.dirty = False  # the last status write failed: the kubelet's resync writes it again
        self.task: asyncio.Task | None = None
        self.files: dict[str, str] = {}
        self.running = False
        self.failure_reason: tuple[str, str] | None = None
        self._exit_codes: dict[str, int] = {}  # main containers that ended for good
        self._written: dict[str, Any] | None = None  # the last status the API server took
        self._deadline: asyncio.TimerHandle | None = None

    # --- status ----------------------------------------------------------------------
    def _condition(self, kind: str, ok: bool, reason: str | None = None) -> dict[str, Any]:
        status = "True" if ok else "False"
        previous = self._transitions.get(kind)
        if previous is None or previous[0] != status:
            self._transitions[kind] = (status, now_str())
        cond: dict[str, Any] = {"type": kind, "status": status, "lastProbeTime": None,
                                "lastTransitionTime": self._transitions[kind][1]}
        if reason and not ok:
            cond["reason"] = reason
        return cond

    def _conditions(self) -> list[dict[str, Any]]:
        terminal = self.phase in ("Succeeded", "Failed")
        ready = bool(self.main) and all(c.ready for c in self.main) and not terminal
        not_ready = "PodCompleted" if terminal else "ContainersNotReady"
        scheduled = next((c for c in self.pod.get("status", {}).get("conditions") or []
                          if c.get("type") == "PodScheduled"), None)
        out = [
            self._condition("PodReadyToStartContainers", not terminal or self.phase == "Succeeded"),
            self._condition("Initialized", self.initialized, "ContainersNotInitialized"),
            self._condition("Ready", ready, not_ready),
            self._condition("ContainersReady", ready, not_ready),
        ]
        out.append(scheduled or self._condition("PodScheduled", True))
        return out

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "phase": self.phase,
            **({"reason": self.failure_reason[0], "message": self.failure_reason[1]} if self.failure_reason else {}),
            "conditions": self._conditions(),
            "hostIP": "127.0.0.1",
            "hostIPs": [{"ip": "127.0.0.1"}],
            "podIP": self.ip,
            "podIPs": [{"ip": self.ip}],
            "startTime": self.start_time,
            "containerStatuses": [c.status() for c in self.main],
        }
        if self.init:
            body["initContainerStatuses"] = [c.status() for c in self.init]
        return body

    async def push(self, *, unless_written: bool = False) -> None:
        """Write the pod status (merge patch of the whole status we own); ``unless_written``
        skips a status the API server already has, as the kubelet's status manager does.
        The answer (the whole pod) is not decoded: nothing here reads it."""
        path = f"/api/v1/namespaces/{self.ns}/pods/{self.name}/status"
        status = self.status()
        if unless_written and status == self._written:
            return
        try:
            await self.k.api.merge_patch(path, {"metadata": {"uid": self.uid}, "status": status}, decode=False)
            self._written = status
            self.dirty = False
        except Exception as exc:  # the pod may be gone (the watch will tell us) or the API server down
            self.dirty = not self.deleting
            log.debug("status of %s/%s not written: %s", self.ns, self.name, exc)

    async def until_ok(self, call, on_error) -> Any:
        """``await call()`` again and again (0.5 s doubling to 5 s) until it works, like a kubelet
        retrying volume mounts and container config while the API server is away; ``on_error``
        records the waiting state. None once the pod is being deleted."""
        delay = 0.5
        while True:
            try:
                return await call()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.deleting:
                    return None
                on_error(exc)
                await self.push()
                await asyncio.sleep(delay)
                delay = min(API_RETRY_MAX_S, delay * 2)
                if self.deleting:
                    return None

    def _waiting(self, containers, reason: str, message: str) -> None:
        for c in containers:
            c.state = {"waiting": {"reason": reason, "message": message[:300]}}

    # --- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        self.task = asyncio.create_task(self._guarded())
        deadline = self.pod["spec"].get("activeDeadlineSeconds")
        if deadline:
            self._deadline = asyncio.get_running_loop().call_later(float(deadline), self._deadline_exceeded)

    def _deadline_exceeded(self) -> None:
        """spec.activeDeadlineSeconds (wall clock, like the kubelet): the pod fails."""
        if self.phase in ("Succeeded", "Failed") or self.deleting:
            return
        self.failure_reason = ("DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
        for c in self.init + self.main:
            c.stop.set()

    async def _guarded(self) -> None:
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("pod %s/%s crashed in the simulator", self.ns, self.name)

    async def _run(self) -> None:
        await self.push()
        files = await self.until_ok(lambda: self.k.fetch_files(self.pod), lambda exc: self._waiting(
            self.init or self.main, "ContainerCreating", f"MountVolume failed: {exc}"))
        if files is None:
            return
        self.files = files
        await asyncio.sleep(0.05)
        sidecars: list[asyncio.Task] = []
        for c in self.init:
            if c.spec.get("restartPolicy") == "Always":
                sidecars.append(asyncio.create_task(self._loop(c, sidecar=True)))
                continue
            while True:
                code = await self._run_container(c)
                if self.deleting:
                    return
                if self.failure_reason:
                    self.phase = "Failed"
                    await self.push()
                    return
                if code == 0:
                    break
                if self.restart_policy == "Never":
                    self.phase = "Failed"
                    await self.push()
                    return
                await self._backoff(c)
        self.initialized = True
        self.phase = "Running"
        codes = await asyncio.gather(*(self._loop(c) for c in self.main))
        for task in sidecars:
            for c in self.init:
                c.stop.set()
            await task
        if self.deleting:
            return
        self.phase = self._terminal_phase(codes)
        await self.push(unless_written=True)  # usually the last container's end already carried it

    def _terminal_phase(self, codes) -> str:
        return "Succeeded" if all(code == 0 for code in codes) and not self.failure_reason else "Failed"

    def _restarts(self, c: ContainerState, code: int, sidecar: bool = False) -> bool:
        """Whether a container that just exited with ``code`` is started again."""
        if self.deleting or self.failure_reason or (sidecar and c.stop.is_set()):
            return False
        return self.restart_policy == "Always" or (self.restart_policy == "OnFailure" and code != 0) or sidecar

    def _ended_for_good(self, c: ContainerState, code: int) -> None:
        """A main container will not run again: when it is the last one, the pod's phase is
        final now, and goes out in the same status write as the container's end (a real
        kubelet derives the phase from the container states it reports). Pods with sidecars
        keep their phase until the sidecars have stopped."""
        self._exit_codes[c.name] = code
        sidecars = any(i.spec.get("restartPolicy") == "Always" for i in self.init)
        if len(self._exit_codes) == len(self.main) and not sidecars and not self.deleting:
            self.phase = self._terminal_phase(self._exit_codes.values())

    async def _loop(self, c: ContainerState, sidecar: bool = False) -> int:
        while True:
            code = await self._run_container(c)
            if not self._restarts(c, code, sidecar):
                return code
            await self._backoff(c)
            if self.deleting:
                return code

    async def _backoff(self, c: ContainerState) -> None:
        delay = min(BACKOFF_MAX_S, BACKOFF_START_S * 2 ** max(0, c.restart_count)) / self.k.time_scale
        c.last_state = c.state
        c.restart_count += 1
        c.ready = False
        c.started = False
        c.state = {"waiting": {"reason": "CrashLoopBackOff", "message": (
            f"back-off {int(delay * self.k.time_scale)}s restarting failed container={c.name} pod={self.name}_{self.ns}({self.uid})")}}
        self.event(c, "BackOff", f"Back-off restarting failed container {c.name} in pod {self.name}_{self.ns}({self.uid})",
                   warning=True)
        await self.push()
        await self._sleep(c, max(0.05, delay))

    async def _sleep(self, c: ContainerState, seconds: float) -> bool:
        """Sleep unless the container is told to stop; True if it was."""
        if seconds <= 0:
            return c.stop.is_set()
        try:
            await asyncio.wait_for(c.stop.wait(), timeout=seconds)
            return True
        except asyncio.TimeoutError:
            return False

    async def _run_container(self, c: ContainerState) -> int:
        run_log = self.k.logs.new_run(self.ns, self.name, c.name)
        # the environment reads ConfigMaps/Secrets: retried, the container waiting meanwhile
        ctx = await self.until_ok(lambda: self.k.make_context(self, c), lambda exc: self._waiting(
            [c], "CreateContainerConfigError", str(exc)))
        if ctx is None:
            run_log.finish()
            return 1
        segs = segments(ctx.argv, ctx.env, ctx.read_file)
        hosts = pairwise.host_names(segs, ctx.read_file) or (
            nccl_tests.mpi_host_names(segs, ctx.read_file) if nccl_tests.find(segs) else [])
        self.event(c, "Pulled", f'Container image "{c.image}" already present on machine')
        self.event(c, "Created", f"Created container: {c.name}")
        self.event(c, "Started", f"Started container {c.name}")
        started = now_str()
        c.state = {"running": {"startedAt": started}}
        c.started = True
        c.ready = True
        await self.push()
        if hosts:
            await self.k.wait_for_hosts(self, hosts, ctx)
        ctx.start = datetime.now(timezone.utc)
        c.rendezvous = _rendezvous(ctx.env, segs) if dispatch.classify(ctx) == "megatron" else None
        if c.rendezvous:
            ctx.start = self.k.join_rendezvous(c.rendezvous, self, ctx.start)
        try:
            outcome: Outcome = dispatch.emulate(ctx)
        except Exception as exc:  # a bug in an emulator must not hang the pod
            log.exception("emulator failed for %s/%s %s", self.ns, self.name, c.name)
            outcome = Outcome("error", [Line(0.0, f"nvcre-sim: the emulator failed: {exc!r}")], exit_code=1,
                              duration=0.1, reason="Error")
        if outcome.kind == "generic" and outcome.exit_code == 0 and self.restart_policy == "Always":
            outcome.duration = None  # a service (Deployment, DaemonSet): it keeps running until deleted
        loop = asyncio.get_running_loop()
        begin = loop.time()
        scale = self.k.time_scale
        stopped = False
        for line in outcome.lines:
            if await self._sleep(c, begin + line.at / scale - loop.time()):
                stopped = True
                break
            if not line.silent:
                run_log.append(line.text)
            if line.effect is not None:
                await self.k.apply_effect(line.effect, self)
        if not stopped:
            if outcome.duration is None:
                await c.stop.wait()
                stopped = True
            else:
                stopped = await self._sleep(c, begin + outcome.duration / scale - loop.time())
        if stopped:
            code = c.stop_code if c.stop_code is not None else EXIT_KILLED
            if c.stop_line:
                for text in c.stop_line.splitlines():
                    run_log.append(text)
            reason = "Completed" if code == 0 else "Error"
        else:
            code = outcome.exit_code
            reason = outcome.reason or ("Completed" if code == 0 else "Error")
        run_log.finish()
        terminated: dict[str, Any] = {"exitCode": code, "reason": reason, "startedAt": started,
                                      "finishedAt": now_str(), "containerID": c.container_id()}
        if code != 0 and c.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
            terminated["message"] = run_log.tail()
        c.state = {"terminated": terminated}
        c.ready = False
        c.started = False
        c.stop_code = None
        c.stop_line = None
        if not stopped or not self.deleting:
            c.stop = asyncio.Event()
        if c in self.main and not self._restarts(c, code):
            self._ended_for_good(c, code)
        await self.push()
        if outcome.hosts or hosts:
            self.k.release_group(self, code)
        if c.rendezvous and code != 0 and not stopped:
            self.k.abort_rendezvous(c.rendezvous, self)
        if c.rendezvous:
            self.k.leave_rendezvous(c.rendezvous, self)
        c.rendezvous = None
        return code

    def stop_sshd(self, launcher_code: int) -> None:
        """The launcher is done: workers running sshd exit 0, like the adapter's worker script."""
        for c in self.main:
            if c.started:
                c.stop_code = 0
                c.stop_line = f"launcher finished with exit code {launcher_code}; stopping sshd"
                c.stop.set()

    def abort_training(self, rank_hint: int) -> None:
        """A peer of this torchrun group died: NCCL's watchdog fails this one too."""
        for c in self.main:
            if c.started and c.rendezvous:
                c.stop_code = 1
                c.stop_line = (
                    f"[rank{rank_hint}]:[E ProcessGroupNCCL.cpp:632] [Rank {rank_hint}] Watchdog caught collective "
                    "operation timeout: WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600031 milliseconds "
                    "before timing out.\n"
                    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: pretrain_gpt.py FAILED"
                )
                c.stop.set()

    def event(self, c: ContainerState, reason: str, message: str, *, warning: bool = False) -> None:
        """A kubelet Event about one container (fire and forget)."""
        self.k.emit_event(
            {"kind": "Pod", "apiVersion": "v1", "namespace": self.ns, "name": self.name, "uid": self.uid,
             "fieldPath": f"spec.containers{{{c.name}}}"},
            reason, message, node=self.node.name, warning=warning,
        )

    async def terminate(self) -> None:
        """Graceful deletion: stop every container, report it, then finalize."""
        if self.deleting:
            return
        self.deleting = True
        for c in self.main:
            if c.started:
                self.event(c, "Killing", f"Stopping container {c.name}")
        for c in self.init + self.main:
            c.stop.set()
        if self.task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self.task), timeout=5)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self.task.cancel()
        path = f"/api/v1/namespaces/{self.ns}/pods/{self.name}"
        try:
            await self.k.api.delete(path, {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                                           "preconditions": {"uid": self.uid}})
        except Exception as exc:
            log.debug("final delete of %s/%s: %s", self.ns, self.name, exc)
