"""A real Kubernetes control plane on 127.0.0.1, from the pinned binaries.

etcd, kube-apiserver, kube-scheduler and kube-controller-manager run as separate
processes with generated certificates, RBAC authorization and every default
controller (job, garbage collector, namespace, service account, node lifecycle...).
There is no kubelet: nodes are simulated by ``nvcre.sim``, whose fake kubelet serves
the kubelet API with the certificate this module hands out (see :class:`ControlPlane`).
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from nvcre.errors import UserError
from nvcre.testbed import certs
from nvcre.testbed.binaries import cache_root, ensure_binaries
from nvcre.testbed.components import (
    PORT_NAMES,
    Layout,
    apiserver_argv,
    controller_manager_argv,
    etcd_argv,
    scheduler_argv,
    scheduler_config,
)
from nvcre.testbed.kubeconfig import kubeconfig_server, write_kubeconfig
from nvcre.testbed.processes import ProcessRecord, spawn, stop_all

STATE_FILE = "state.json"
COMPONENTS = ("etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager")
PORT_RACE_ATTEMPTS = 3


def default_workdir() -> Path:
    """Where ``nvcrectl sim up`` keeps its control plane (state.json, pki, logs)."""
    return cache_root() / "testbed"


class ControlPlaneError(UserError):
    """The control plane could not be started (the message carries the log tail)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: str | Path, lines: int = 25) -> str:
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(text[-lines:])


class ControlPlane:
    """One local control plane. Use as a context manager, or start()/stop().

    Attributes (valid after :meth:`start`, or after :meth:`attach` from another process):

    ``workdir``
        Directory holding everything: ``state.json`` (``state_file``), ``pki/``
        (``pki_dir``), ``logs/<component>.log`` (``log_dir``), ``etcd/`` data, and the
        kubeconfigs. Without a workdir argument a temporary one is made and removed
        by ``stop()``.
    ``kubeconfig``
        Admin kubeconfig (user ``kubernetes-admin`` in ``system:masters``).
    ``server``
        ``https://127.0.0.1:<port>`` of the API server.
    ``bin_dir``, ``kubectl_path``, ``helm_path``
        The pinned binaries.
    ``ports``
        ``{"etcd", "etcd_peer", "apiserver", "scheduler", "controller_manager"}``.
    ``ca_cert``, ``ca_key``
        The cluster CA (PEM). Everything is signed by it; a fake kubelet may issue
        itself more certificates with :meth:`issue_serving_cert`.
    ``kubelet_serving_cert``, ``kubelet_serving_key``
        A ready serving certificate for ``127.0.0.1``/``localhost`` signed by the CA.
        The API server verifies kubelets against ``ca_cert``
        (``--kubelet-certificate-authority``) and picks their address by
        ``InternalIP`` (``--kubelet-preferred-address-types=InternalIP``): a fake kubelet
        reports InternalIP ``127.0.0.1`` and its port in
        ``status.daemonEndpoints.kubeletEndpoint.Port`` and serves HTTPS with this pair.
    ``kubelet_client_ca``
        CA that signed the client certificate the API server shows kubelets
        (``kube-apiserver-kubelet-client``); a kubelet that wants to authenticate
        its callers verifies client certificates against it (= ``ca_cert``).
    ``admin_cert``, ``admin_key``
        The admin client certificate, for clients that do not read kubeconfigs.
    ``start_seconds``
        How long :meth:`start` took (wall clock).

    ``detach=True`` leaves the processes running when this Python process exits
    (for ``nvcrectl sim up``); another process finds them through
    :func:`load_running` / :func:`stop_running` and ``workdir/state.json``.
    Otherwise the processes die with this process, and ``stop()`` (or leaving the
    ``with`` block, also on an exception or KeyboardInterrupt) stops them. They are
    tied to the *thread* that started them (PR_SET_PDEATHSIG), so start a
    non-detached control plane from a thread that outlives it, e.g. the main thread.
    """

    def __init__(
        self,
        workdir: str | Path | None = None,
        *,
        bin_dir: str | Path | None = None,
        detach: bool = False,
        node_monitor_grace_s: int | None = None,
    ) -> None:
        """``node_monitor_grace_s``: how long a node's Lease may go unrenewed before it is
        NotReady (the controller manager's default when None); raised only for simulated
        fleets that renew their Leases less often than every 10 s (``KubeletConfig``)."""
        self.node_monitor_grace_s = node_monitor_grace_s
        self._owns_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="nvcre-cp-"))
        self._bin_dir_arg = Path(bin_dir) if bin_dir else None
        self.detach = detach
        self.records: list[ProcessRecord] = []
        self._popens: dict[int, subprocess.Popen] = {}
        self.ports: dict[str, int] = {}
        self.start_seconds: float | None = None
        self.bin_dir: Path | None = self._bin_dir_arg
        self._atexit_registered = False
        self._external_server: str | None = None
        self._set_paths()

    @classmethod
    def external(cls, kubeconfig: str | Path, *, bin_dir: str | Path | None = None) -> ControlPlane:
        """Describe a cluster someone else runs (start/stop do nothing to it).

        Only ``kubeconfig``, ``server`` and the binary paths are meaningful; the
        certificate attributes are None.
        """
        kubeconfig = Path(kubeconfig)
        plane = cls(kubeconfig.parent, bin_dir=bin_dir or ensure_binaries(), detach=True)
        plane.kubeconfig = kubeconfig
        plane._external_server = kubeconfig_server(kubeconfig)
        for attr in (
            "ca_cert", "ca_key", "admin_cert", "admin_key",
            "kubelet_serving_cert", "kubelet_serving_key", "kubelet_client_ca",
        ):
            setattr(plane, attr, None)
        return plane

    @property
    def is_external(self) -> bool:
        return self._external_server is not None

    # -- paths ---------------------------------------------------------------------

    def _set_paths(self) -> None:
        pki = self.workdir / "pki"
        self.pki_dir = pki
        self.log_dir = self.workdir / "logs"
        self.kubeconfig = self.workdir / "admin.kubeconfig"
        self.ca_cert = pki / "ca.crt"
        self.ca_key = pki / "ca.key"
        self.admin_cert = pki / "admin.crt"
        self.admin_key = pki / "admin.key"
        self.kubelet_serving_cert = pki / "kubelet-serving.crt"
        self.kubelet_serving_key = pki / "kubelet-serving.key"
        self.kubelet_client_ca = self.ca_cert
        self.state_file = self.workdir / STATE_FILE

    @property
    def server(self) -> str:
        if self._external_server is not None:
            return self._external_server
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    @property
    def kubectl_path(self) -> Path:
        assert self.bin_dir is not None, "control plane not started"
        return self.bin_dir / "kubectl"

    @property
    def helm_path(self) -> Path:
        assert self.bin_dir is not None, "control plane not started"
        return self.bin_dir / "helm"

    def issue_serving_cert(self, directory: Path, basename: str, hosts: tuple[str, ...]) -> certs.CertPair:
        """Issue another serving certificate signed by the cluster CA."""
        ca = certs.CertificateAuthority.load(certs.CertPair(self.ca_cert, self.ca_key))
        return ca.issue(directory, basename, common_name=basename, server=True, hosts=hosts)

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout_s: float = 120.0) -> ControlPlane:
        """Start every component and wait until the cluster serves and controllers run."""
        if self.is_external:
            return self
        begin = time.monotonic()
        existing = load_running(self.workdir)
        if existing is not None:
            raise ControlPlaneError(
                f"a control plane from {self.workdir} is already running at {existing.server}; "
                f"stop it first (nvcrectl sim down, or nvcre.testbed.stop_running)"
            )
        try:
            self.bin_dir = self._bin_dir_arg or ensure_binaries()
        except BaseException:
            if self._owns_workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        if not self.detach and not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        deadline = begin + timeout_s
        for attempt in range(1, PORT_RACE_ATTEMPTS + 1):
            self._prepare_workdir()
            try:
                self._start_once(deadline)
                break
            except ControlPlaneError:
                self._stop_processes()
                # Another process may take a port between free_port() and the bind.
                if attempt < PORT_RACE_ATTEMPTS and self._lost_a_port_race():
                    continue
                self._forget_atexit()  # keep the workdir: the logs say what went wrong
                raise
            except BaseException:
                self.stop()
                raise
        self.start_seconds = time.monotonic() - begin
        self._write_state()
        return self

    def _lost_a_port_race(self) -> bool:
        for log in self.log_dir.glob("*.log"):
            if "address already in use" in log.read_text(errors="replace"):
                return True
        return False

    def _start_once(self, deadline: float) -> None:
        pki = certs.create_pki(self.pki_dir)
        self.ports = {name: free_port() for name in PORT_NAMES}
        assert self.bin_dir is not None
        at = Layout(self.bin_dir, self.workdir, self.ports)
        self._spawn("etcd", etcd_argv(at))
        self._wait_http("etcd", f"http://127.0.0.1:{self.ports['etcd']}/health", deadline)
        self._spawn("kube-apiserver", apiserver_argv(at, pki))
        self._wait_https("kube-apiserver", f"{self.server}/readyz", deadline, client_cert=True)
        self._write_kubeconfig(self.kubeconfig, "kubernetes-admin", pki.admin)
        sched_kc = self.workdir / "scheduler.kubeconfig"
        cm_kc = self.workdir / "controller-manager.kubeconfig"
        self._write_kubeconfig(sched_kc, "system:kube-scheduler", pki.scheduler)
        self._write_kubeconfig(cm_kc, "system:kube-controller-manager", pki.controller_manager)
        sched_config = self.workdir / "scheduler-config.yaml"
        sched_config.write_text(yaml.safe_dump(scheduler_config(sched_kc)))
        self._spawn("kube-scheduler", scheduler_argv(at, sched_config, sched_kc))
        self._spawn("kube-controller-manager", controller_manager_argv(at, cm_kc, pki, node_monitor_grace_s=self.node_monitor_grace_s))
        self._wait_https(
            "kube-scheduler", f"https://127.0.0.1:{self.ports['scheduler']}/healthz", deadline
        )
        self._wait_https(
            "kube-controller-manager",
            f"https://127.0.0.1:{self.ports['controller_manager']}/healthz",
            deadline,
        )
        # The service-account controller making default/default proves the
        # controller-manager reaches the API server with working RBAC.
        self._wait_https(
            "kube-controller-manager",
            f"{self.server}/api/v1/namespaces/default/serviceaccounts/default",
            deadline,
            client_cert=True,
        )

    def stop(self) -> None:
        """Stop every component (controllers first, etcd last); safe to call twice.

        A temporary workdir (none was given) is removed unless NVCRE_KEEP_TESTBED is set.
        """
        if self.is_external:
            return
        self._stop_processes()
        self._forget_atexit()
        if self._owns_workdir and not os.environ.get("NVCRE_KEEP_TESTBED"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _stop_processes(self) -> None:
        # Clients before the API server before etcd: an API server losing etcd while
        # it drains can hang in shutdown until it is killed.
        for tier in (("kube-scheduler", "kube-controller-manager"), ("kube-apiserver",), ("etcd",)):
            stop_all([r for r in self.records if r.name in tier], self._popens)
        stop_all([r for r in self.records if r.name not in COMPONENTS], self._popens)
        self.records = []
        self._popens = {}
        if self.state_file.exists():
            self.state_file.unlink()

    def _forget_atexit(self) -> None:
        if self._atexit_registered:
            atexit.unregister(self.stop)
            self._atexit_registered = False

    def running(self) -> bool:
        """True when every component process is alive."""
        return bool(self.records) and all(r.alive() for r in self.records)

    def process_status(self) -> dict[str, bool]:
        """Component name -> alive."""
        return {r.name: r.alive() for r in self.records}

    # -- attach from another process -------------------------------------------------

    @classmethod
    def attach(cls, workdir: str | Path) -> ControlPlane:
        """The control plane described by ``workdir/state.json`` (it may have died since)."""
        workdir = Path(workdir)
        state_file = workdir / STATE_FILE
        try:
            state = json.loads(state_file.read_text())
        except FileNotFoundError:
            raise ControlPlaneError(f"no control plane state in {state_file}") from None
        except json.JSONDecodeError as exc:
            raise ControlPlaneError(f"{state_file} is not valid JSON: {exc}") from None
        plane = cls(workdir, bin_dir=state["bin_dir"], detach=True)
        plane.ports = {k: int(v) for k, v in state["ports"].items()}
        plane.records = [ProcessRecord(**r) for r in state["processes"]]
        plane.start_seconds = state.get("start_seconds")
        return plane

    def _write_state(self) -> None:
        state = {
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "bin_dir": str(self.bin_dir),
            "ports": self.ports,
            "processes": [r.to_json() for r in self.records],
            "ca_cert": str(self.ca_cert),
            "ca_key": str(self.ca_key),
            "kubelet_serving_cert": str(self.kubelet_serving_cert),
            "kubelet_serving_key": str(self.kubelet_serving_key),
            "kubelet_client_ca": str(self.kubelet_client_ca),
            "start_seconds": self.start_seconds,
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(self.state_file)

    # -- components ------------------------------------------------------------------

    def _prepare_workdir(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for stale in ("etcd", "pki", "logs", "scheduler", "controller-manager", "apiserver"):
            shutil.rmtree(self.workdir / stale, ignore_errors=True)
        self.log_dir.mkdir()

    def _spawn(self, name: str, argv: list[str]) -> None:
        proc, record = spawn(name, argv, self.log_dir / f"{name}.log", detach=self.detach)
        self.records.append(record)
        self._popens[proc.pid] = proc
        self._argv = {**getattr(self, "_argv", {}), name: list(argv)}

    def restart_apiserver(self, *, downtime_s: float = 0.0, timeout_s: float = 90.0) -> None:
        """Kill kube-apiserver (SIGKILL, as a crash) and start it again with the same
        arguments after ``downtime_s``; returns once it is ready. Fault tests use it."""
        if self.is_external:
            raise RuntimeError("cannot restart the API server of an external control plane")
        name = "kube-apiserver"
        record = next(r for r in self.records if r.name == name)
        os.killpg(record.pid, signal.SIGKILL)  # its own session (processes.spawn)
        popen = self._popens.pop(record.pid, None)
        if popen is not None:
            popen.wait(timeout=30)
        self.records.remove(record)
        time.sleep(downtime_s)
        # the old process's log is kept beside the new one
        log = self.log_dir / f"{name}.log"
        if log.exists():
            log.rename(self.log_dir / f"{name}.{int(time.time())}.log")
        self._spawn(name, self._argv[name])
        self._wait_https(name, f"{self.server}/readyz", time.monotonic() + timeout_s, client_cert=True)
        self._write_state()

    def compact_etcd(self) -> int:
        """Compact etcd to its current revision and defragment it (what the API server's
        periodic compaction does, all at once); returns the revision. Every resourceVersion
        older than it is gone: a watch or a paginated list resumed from one gets 410 Gone."""
        if self.is_external:
            raise RuntimeError("cannot compact the etcd of an external control plane")
        base = f"http://127.0.0.1:{self.ports['etcd']}/v3"
        head = _etcd_call(f"{base}/kv/range", {"key": base64.b64encode(b"/registry/").decode(), "limit": 1, "keys_only": True})
        revision = int(head["header"]["revision"])
        _etcd_call(f"{base}/kv/compaction", {"revision": str(revision), "physical": True})
        _etcd_call(f"{base}/maintenance/defragment", {})
        return revision

    def _write_kubeconfig(self, path: Path, user: str, pair: certs.CertPair) -> None:
        write_kubeconfig(path, server=self.server, ca_cert=self.ca_cert, user=user, cert=pair.cert, key=pair.key)

    # -- readiness -------------------------------------------------------------------

    def _check_alive(self, component: str) -> None:
        for record in self.records:
            proc = self._popens.get(record.pid)
            if proc is not None and proc.poll() is not None:
                raise ControlPlaneError(
                    f"{record.name} exited with code {proc.returncode} while waiting for "
                    f"{component}; last lines of {record.log}:\n{_tail(record.log)}"
                )

    def _wait_http(self, component: str, url: str, deadline: float) -> None:
        self._wait(component, url, deadline, context=None)

    def _wait_https(self, component: str, url: str, deadline: float, *, client_cert: bool = False) -> None:
        if client_cert:
            context = ssl.create_default_context(cafile=str(self.ca_cert))
            context.load_cert_chain(str(self.admin_cert), str(self.admin_key))
        else:
            # Scheduler and controller-manager serve health with a self-signed cert.
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        self._wait(component, url, deadline, context=context)

    def _wait(self, component: str, url: str, deadline: float, *, context: ssl.SSLContext | None) -> None:
        last_error = "no answer yet"
        while True:
            self._check_alive(component)
            try:
                with urllib.request.urlopen(url, timeout=2, context=context) as response:
                    if response.status == 200:
                        return
                    last_error = f"HTTP {response.status}"
            except urllib.error.HTTPError as exc:
                last_error = f"HTTP {exc.code}"
            except (urllib.error.URLError, OSError) as exc:
                last_error = str(exc)
            if time.monotonic() > deadline:
                log = self.log_dir / f"{component}.log"
                raise ControlPlaneError(
                    f"{component} not ready at {url} in time ({last_error}); "
                    f"last lines of {log}:\n{_tail(log)}"
                )
            time.sleep(0.1)


def _etcd_call(url: str, body: dict) -> dict:
    """One call to etcd's JSON gateway (the test bed's etcd listens on loopback, plain HTTP)."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"{}")


def load_running(workdir: str | Path | None = None) -> ControlPlane | None:
    """The control plane started from ``workdir`` (default: :func:`default_workdir`) if
    all its processes are still running, else None."""
    workdir = Path(workdir) if workdir else default_workdir()
    if not (workdir / STATE_FILE).is_file():
        return None
    try:
        plane = ControlPlane.attach(workdir)
    except (ControlPlaneError, KeyError, TypeError):
        return None
    return plane if plane.running() else None


def stop_running(workdir: str | Path | None = None) -> bool:
    """Stop whatever is left of the control plane started from ``workdir``.

    Returns True if a state file was found (and its live processes stopped), False if
    there was nothing to stop.
    """
    workdir = Path(workdir) if workdir else default_workdir()
    if not (workdir / STATE_FILE).is_file():
        return False
    try:
        plane = ControlPlane.attach(workdir)
    except (ControlPlaneError, KeyError, TypeError):
        (workdir / STATE_FILE).unlink(missing_ok=True)
        return False
    plane.stop()
    return True

