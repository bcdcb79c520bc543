"""End-to-end fixtures: the real control plane, a simulated fleet, the controller process.

Everything runs as it would for a user: the CRDs from the chart are applied to the
API server, the fake kubelet registers the fleet, and the controller is started as
``nvcrectl controller run --kubeconfig ...`` in a subprocess (so it can be SIGKILLed
and restarted). Tests read results through the API server and ``kubectl``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import kubernetes
import pytest
import yaml
from kubernetes import watch

from nvcre.kube.client import KubeClient
from nvcre.kube.resources import NVCRE_API_VERSION

_HERE = Path(__file__).parent
REPO = _HERE.parents[1]
SCENARIOS = REPO / "src" / "nvcre" / "sim" / "scenarios"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(scope="session")
def crds(kubectl) -> None:
    """The chart's CRDs, applied to the real API server and established."""
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(REPO / "charts" / "nvcre" / "crds"))
    for plural in ("certifications", "workflows", "jobs", "workloadruns", "bandwidthmeasurements", "goodputmeasurements", "logprofiles",
                   "reportexportpolicies", "reportexports", "nodereadinesses"):
        kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{plural}.nvcre.nvidia.com")


@pytest.fixture
def kube(kubeconfig, crds) -> KubeClient:
    return KubeClient.from_kubeconfig(str(kubeconfig))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Fleet:
    """A fake kubelet for one test; nodes are deleted when it stops."""

    def __init__(self, control_plane, tmp_path: Path) -> None:
        self.control_plane = control_plane
        self.tmp_path = tmp_path
        self.handle = None

    def start(self, scenario: str | dict | None = None, *, nodes: int | None = None, time_scale: float = 120.0, **fleet) -> Fleet:
        from nvcre.sim.kubelet import KubeletConfig
        from nvcre.sim.process import start_fleet

        if isinstance(scenario, str):
            scenario = yaml.safe_load((SCENARIOS / scenario).read_text())
        scenario = dict(scenario or {})
        shape = {**(scenario.get("fleet") or {}), **fleet}
        if nodes is not None:
            shape["nodes"] = nodes
        cp = self.control_plane
        config = KubeletConfig(
            kubeconfig=str(cp.kubeconfig),
            state_dir=str(self.tmp_path / "fleet"),
            nodes=int(shape.get("nodes", 16)),
            platform=shape.get("platform", "aws"),
            gpu=shape.get("gpu", "h100"),
            racks=int(shape.get("racks") or len(shape.get("rackSizes") or []) or 2),
            rack_sizes=[int(x) for x in shape.get("rackSizes") or []],
            time_scale=time_scale,
            scenario=scenario,
            tls_cert=str(cp.kubelet_serving_cert) if cp.kubelet_serving_cert else None,
            tls_key=str(cp.kubelet_serving_key) if cp.kubelet_serving_key else None,
            client_ca=str(cp.ca_cert) if cp.ca_cert else None,
        )
        self.handle = start_fleet(config, timeout_s=120)
        return self

    @property
    def nodes(self) -> list[str]:
        return list(self.handle.nodes) if self.handle else []

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.stop(delete=True)
            self.handle = None


@pytest.fixture
def sim_fleet(control_plane, crds, tmp_path) -> Iterator[Fleet]:
    fleet = Fleet(control_plane, tmp_path)
    yield fleet
    fleet.stop()


class ControllerProcess:
    """``nvcrectl controller run`` as a subprocess that tests can kill and restart."""

    def __init__(self, kubeconfig: str, log_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.log_dir = log_dir
        self.metrics_port = _free_port()
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.args: list[str] = []

    def start(self, *extra: str, env: dict[str, str] | None = None) -> ControllerProcess:
        """Start (again) with ``extra`` flags (kept for later starts); ``env`` only for this start."""
        self.args = list(extra) or self.args
        log = open(self.log_dir / f"controller-{self.starts}.log", "wb")
        self.starts += 1
        argv = [
            sys.executable, "-m", "nvcre.cli.main", "controller", "run",
            "--kubeconfig", self.kubeconfig,
            "--metrics-port", str(self.metrics_port),
            "--resync-seconds", "3",
            "--waiting-for-nodes-seconds", "20",
            *self.args,
        ]
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        log.close()
        self._wait_metrics()
        return self

    def _wait_metrics(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"controller exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=1).read()
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"controller metrics did not come up:\n{self.log_tail()}")

    def metrics(self) -> str:
        return urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).read().decode()

    def kill(self) -> None:
        """SIGKILL: no chance to clean up, as after a node crash."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def crash_at_random(self, rng: random.Random, within: float, downtime: float) -> None:
        """One or two SIGKILLs at random points of the next ``within`` seconds, each
        followed (after up to ``downtime`` seconds) by a restart."""
        for _ in range(rng.choice((1, 2))):
            time.sleep(rng.uniform(0.2, within))
            self.kill()
            time.sleep(rng.uniform(0.0, downtime))
            self.start()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log_tail(self, lines: int = 60) -> str:
        logs = sorted(self.log_dir.glob("controller-*.log"))
        if not logs:
            return ""
        return "\n".join(logs[-1].read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture
def controller(kubeconfig, crds, tmp_path) -> Iterator[ControllerProcess]:
    proc = ControllerProcess(str(kubeconfig), tmp_path)
    yield proc
    proc.stop()


# ---------------------------------------------------------------- helpers for tests
class Creations:
    """Every ADDED watch event per (kind, name), with the UIDs seen: an object created
    twice (deleted and made again under its name) shows two UIDs.

    ``kinds`` maps a label to (group, version, plural); one REST path serves core,
    batch and custom kinds alike.
    """

    def __init__(self, kubeconfig: str, namespace: str, kinds: dict[str, tuple[str, str, str]]) -> None:
        self.uids: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.stop = threading.Event()
        self.api = kubernetes.config.new_client_from_config(config_file=kubeconfig)
        custom = kubernetes.client.CustomObjectsApi(self.api)
        self.threads = []
        for kind, (group, version, plural) in kinds.items():
            def lister(group=group, version=version, plural=plural, **kw):
                return custom.list_namespaced_custom_object(group, version, namespace, plural, **kw)
            self.threads.append(threading.Thread(target=self._watch, args=(kind, lister), daemon=True))
        for t in self.threads:
            t.start()

    def _watch(self, kind, lister) -> None:
        while not self.stop.is_set():
            try:
                for event in watch.Watch().stream(lister, timeout_seconds=5):
                    if event["type"] == "ADDED":
                        meta = event["object"]["metadata"]
                        self.uids[(kind, meta["name"])].add(meta["uid"])
                    if self.stop.is_set():
                        return
            except Exception:
                time.sleep(0.2)

    def names(self, kind: str) -> set[str]:
        return {name for k, name in self.uids if k == kind}

    def duplicates(self) -> dict:
        return {k: v for k, v in self.uids.items() if len(v) > 1}

    def close(self) -> None:
        self.stop.set()
        self.api.close()


class E2E:
    Creations = Creations

    """Helpers the tests share (a fixture, since two conftest modules cannot be imported by name)."""

    @staticmethod
    def wait_for(predicate: Callable[[], object], timeout: float, what: str, on_timeout: Callable[[], str] = lambda: "") -> object:
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = predicate()
            if last:
                return last
            time.sleep(0.5)
        raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{on_timeout()}")

    @staticmethod
    def terminal(obj: dict | None) -> bool:
        for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
            if cond.get("type") in ("Succeeded", "Failed") and cond.get("status") == "True":
                return True
        return False

    @staticmethod
    def true_condition(obj: dict, ctype: str) -> dict | None:
        for cond in (obj.get("status") or {}).get("conditions") or []:
            if cond.get("type") == ctype and cond.get("status") == "True":
                return cond
        return None

    @staticmethod
    def wait_in_progress(kube: KubeClient, kind: str, namespace: str, reason: str, timeout: float, controller=None) -> dict:
        """The first nvcre object of ``kind`` whose InProgress condition is True with ``reason``."""
        def found():
            for obj in kube.list(NVCRE_API_VERSION, kind, namespace):
                cond = E2E.true_condition(obj, "InProgress")
                if cond and cond["reason"] == reason:
                    return obj
            return None

        return E2E.wait_for(found, timeout, reason, controller.log_tail if controller else lambda: "")

    @staticmethod
    def hold_gpus(kube: KubeClient, namespace: str, node: str) -> None:
        """A pod ``gpu-hog`` holding every GPU of ``node`` for a long (simulated) time, running."""
        kube.create({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-hog", "namespace": namespace},
            "spec": {
                "nodeName": node, "restartPolicy": "Never", "tolerations": [{"operator": "Exists"}],
                "containers": [{
                    "name": "hog", "image": "busybox", "command": ["sleep", "1000000"],
                    "resources": {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}},
                }],
            },
        })
        E2E.wait_for(lambda: (kube.get("v1", "Pod", "gpu-hog", namespace) or {}).get("status", {}).get("phase") == "Running",
                     60, "the GPU hog to run")

    @staticmethod
    def release_gpus(kube: KubeClient, namespace: str) -> None:
        kube.delete("v1", "Pod", "gpu-hog", namespace)

    @staticmethod
    def apply(kube: KubeClient, body: dict) -> dict:
        created, _ = kube.create(body)
        return created

    @staticmethod
    def wait_terminal(kube: KubeClient, kind: str, name: str, namespace: str, timeout: float, controller=None) -> dict:
        def done():
            obj = kube.get(NVCRE_API_VERSION, kind, name, namespace)
            return obj if E2E.terminal(obj) else None

        def explain() -> str:
            obj = kube.get(NVCRE_API_VERSION, kind, name, namespace)
            text = json.dumps((obj or {}).get("status"), indent=1)[:3000]
            return text + ("\n--- controller log ---\n" + controller.log_tail() if controller else "")

        return E2E.wait_for(done, timeout, f"{kind} {namespace}/{name} to finish", explain)  # type: ignore[return-value]

    @staticmethod
    def certification(name: str, namespace: str, categories: list[dict], **spec) -> dict:
        return {
            "apiVersion": NVCRE_API_VERSION,
            "kind": "Certification",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}}, "categories": categories, **spec},
        }


@pytest.fixture
def e2e() -> type[E2E]:
    return E2E
