"""Kubeflow Trainer v2 and JobSet on the local control plane (the trainjob adapter's tests).

``hack/trainer/build.sh`` builds both controller managers from pinned Go modules and
copies both projects' CRDs next to them, into a cache directory outside the checkout
(``trainer-<v>-jobset-<v>`` under the same cache root as the Kubernetes binaries);
``NVCRE_TRAINER_DIR`` points at such a set instead.

:class:`KubeflowTrainer` installs the CRDs, starts both managers as child processes
(leader election off, metrics and health on free loopback ports, webhooks served on
127.0.0.1 with a certificate the test bed's CA issues) and registers their admission
webhooks with URL client configs, so the API server calls them exactly as in a real
cluster: JobSet defaulting and validation, Trainer's TrainJob defaulting and
TrainJob/TrainingRuntime checks.
:meth:`KubeflowTrainer.stop` removes the webhook configurations first (a webhook whose
server is gone would fail every JobSet pod's admission), then the CRDs if it installed
them, then stops the processes; nothing is left running.
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from nvcre.testbed.binaries import BinariesMissing, cache_root
from nvcre.testbed.controlplane import ControlPlane, ControlPlaneError, free_port
from nvcre.testbed.processes import ProcessRecord, spawn, stop_all

ENV_VAR = "NVCRE_TRAINER_DIR"
STAMP_NAME = ".complete"
HACK_TRAINER = Path(__file__).resolve().parents[3] / "hack" / "trainer"
MANAGERS = ("jobset-controller-manager", "trainer-controller-manager")
CRD_NAMES = (
    "jobsets.jobset.x-k8s.io",
    "trainjobs.trainer.kubeflow.org",
    "trainingruntimes.trainer.kubeflow.org",
    "clustertrainingruntimes.trainer.kubeflow.org",
)
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
WEBHOOK_NAMES = {
    "MutatingWebhookConfiguration": ("nvcre-testbed-jobset-mutating", "nvcre-testbed-trainer-mutating"),
    "ValidatingWebhookConfiguration": ("nvcre-testbed-jobset-validating", "nvcre-testbed-trainer-validating"),
}


class TrainerMissing(BinariesMissing):
    """The Trainer/JobSet set is not built (or NVCRE_TRAINER_DIR is incomplete)."""


# ------------------------------------------------------------------ finding the set
def pinned_versions(hack_dir: Path = HACK_TRAINER) -> tuple[str, str]:
    """(Trainer, JobSet) versions from hack/trainer/versions.env."""
    env_file = hack_dir / "versions.env"
    if not env_file.is_file():
        raise TrainerMissing(
            f"{env_file} not found: not a source checkout; set {ENV_VAR} to a directory "
            "holding bin/ and crds/ as hack/trainer/build.sh lays them out"
        )
    values = {}
    for line in env_file.read_text().splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and not key.startswith("#"):
            values[key.strip()] = value.strip()
    try:
        return values["TRAINER_VERSION"], values["JOBSET_VERSION"]
    except KeyError as missing:
        raise TrainerMissing(f"{env_file}: {missing.args[0]} is not set") from None


def cached_set_dir() -> Path:
    trainer, jobset = pinned_versions()
    return cache_root() / f"trainer-{trainer}-jobset-{jobset}"


def missing_in(set_dir: Path) -> list[str]:
    """What a set directory lacks: manager binaries and CRD directories."""
    missing = [f"bin/{b}" for b in MANAGERS if not os.access(set_dir / "bin" / b, os.X_OK)]
    for sub in ("crds/trainer", "crds/jobset"):
        if not any((set_dir / sub).glob("*.yaml")):
            missing.append(f"{sub}/*.yaml")
    return missing


def find_trainer_set() -> Path:
    """The directory holding bin/ and crds/, or :class:`TrainerMissing` saying how to get it."""
    explicit = os.environ.get(ENV_VAR)
    if explicit:
        directory = Path(explicit).expanduser()
        missing = missing_in(directory)
        if missing:
            raise TrainerMissing(f"{ENV_VAR}={directory} lacks {', '.join(missing)}")
        return directory
    directory = cached_set_dir()
    if (directory / STAMP_NAME).is_file() and not missing_in(directory):
        return directory
    raise TrainerMissing(
        "the Kubeflow Trainer test-bed set (trainer-controller-manager, jobset-controller-manager "
        f"and their CRDs) is not built: run `make trainer` (builds it once into {directory}, "
        f"5 to 13 minutes cold on 2 cores, by load) or set {ENV_VAR} to a built set"
    )


# ------------------------------------------------------------------ running it
class KubeflowTrainer:
    """Trainer v2 + JobSet controller managers serving one local control plane."""

    def __init__(self, plane: ControlPlane, workdir: Path, set_dir: Path | None = None) -> None:
        self.plane = plane
        self.workdir = Path(workdir)
        self.set_dir = set_dir or find_trainer_set()
        self.ports: dict[str, int] = {}
        self.records: list[ProcessRecord] = []
        self._popens: dict[int, subprocess.Popen] = {}
        self._installed_crds = False
        self._webhooks = False
        self._atexit = False

    # -- public ------------------------------------------------------------------
    def start(self, timeout_s: float = 90.0) -> KubeflowTrainer:
        if self.plane.ca_key is None or not Path(self.plane.ca_key).is_file():
            raise ControlPlaneError(
                "Kubeflow Trainer needs the local test bed (its CA issues the webhook "
                "certificate); an external cluster is not supported here"
            )
        deadline = time.monotonic() + timeout_s
        self.workdir.mkdir(parents=True, exist_ok=True)
        atexit.register(self.stop)
        self._atexit = True
        try:
            self._install_crds(deadline)
            certs = self.workdir / "webhook-certs"
            pair = self.plane.issue_serving_cert(certs, "webhook", ("127.0.0.1",))
            (certs / "tls.crt").write_bytes(pair.cert.read_bytes())
            (certs / "tls.key").write_bytes(pair.key.read_bytes())
            (certs / "tls.key").chmod(0o600)
            for name in ("jobset_webhook", "jobset_metrics", "jobset_health",
                         "trainer_webhook", "trainer_metrics", "trainer_health"):
                self.ports[name] = free_port()
            self._start_jobset(certs)
            self._start_trainer(certs)
            self._wait_ready("jobset-controller-manager", self.ports["jobset_health"], deadline)
            self._wait_ready("trainer-controller-manager", self.ports["trainer_health"], deadline)
            self._register_webhooks()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Webhook configurations, then CRDs we installed (their objects go with them,
        while the managers still run to finish them), then the processes."""
        if self._webhooks:
            for kind, names in WEBHOOK_NAMES.items():
                self._kubectl("delete", kind, *names, "--ignore-not-found", check=False)
            self._webhooks = False
        if self._installed_crds:
            self._kubectl("delete", "crd", *CRD_NAMES, "--ignore-not-found", "--wait=true",
                          "--timeout=60s", check=False)
            self._installed_crds = False
        stop_all(self.records, self._popens)
        self.records, self._popens = [], {}
        if self._atexit:
            atexit.unregister(self.stop)
            self._atexit = False

    def trainer_metrics(self) -> str:
        """The Trainer manager's Prometheus text (plain HTTP on loopback; JobSet's
        metrics endpoint is authenticated HTTPS, as upstream ships it)."""
        url = f"http://127.0.0.1:{self.ports['trainer_metrics']}/metrics"
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.read().decode()

    def log_tail(self, manager: str, lines: int = 40) -> str:
        path = self.workdir / f"{manager}.log"
        if not path.is_file():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # -- steps -------------------------------------------------------------------
    def _kubectl(self, *args: str, check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess:
        cmd = [str(self.plane.kubectl_path), "--kubeconfig", str(self.plane.kubeconfig), *args]
        result = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise ControlPlaneError(f"{' '.join(args[:3])}... failed: {result.stderr.strip() or result.stdout.strip()}")
        return result

    def _install_crds(self, deadline: float) -> None:
        present = self._kubectl("get", "crd", *CRD_NAMES, "-o", "name", check=False)
        self._installed_crds = present.returncode != 0
        for sub in ("jobset", "trainer"):
            self._kubectl("apply", "--server-side", "--force-conflicts", "-f", str(self.set_dir / "crds" / sub))
        # Polled, not `kubectl wait`: that errors out on a CRD whose status has no
        # conditions yet instead of waiting for them.
        pending = list(CRD_NAMES)
        while pending:
            listing = json.loads(self._kubectl("get", "crd", *pending, "-o", "json").stdout)
            pending = [item["metadata"]["name"] for item in listing.get("items", [])
                       if not any(c.get("type") == "Established" and c.get("status") == "True"
                                  for c in (item.get("status") or {}).get("conditions") or [])]
            if pending and time.monotonic() > deadline:
                raise ControlPlaneError(f"CRDs not Established in time: {', '.join(pending)}")
            if pending:
                time.sleep(0.2)

    def _env(self) -> dict[str, str]:
        # TMPDIR: controller-runtime keeps scratch files there; one per test bed.
        return {**os.environ, "KUBECONFIG": str(self.plane.kubeconfig), "TMPDIR": str(self.workdir)}

    def _spawn(self, name: str, argv: list[str]) -> None:
        proc, record = spawn(name, argv, self.workdir / f"{name}.log", detach=False, env=self._env())
        self.records.append(record)
        self._popens[proc.pid] = proc

    def _start_jobset(self, certs: Path) -> None:
        config = {
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"host": "127.0.0.1", "port": self.ports["jobset_webhook"], "certDir": str(certs)},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.ports['jobset_health']}"},
            # JobSet >= 0.11 reads its metrics certificate from a fixed /tmp path shared
            # by every run on the machine unless one is named (self-signed if absent):
            # name the test bed's own loopback pair.
            "metrics": {"bindAddress": f"127.0.0.1:{self.ports['jobset_metrics']}", "certDir": str(certs)},
        }
        path = self.workdir / "jobset-config.yaml"
        path.write_text(yaml.safe_dump(config))
        self._spawn("jobset-controller-manager", [
            str(self.set_dir / "bin" / "jobset-controller-manager"),
            f"--config={path}", f"--kubeconfig={self.plane.kubeconfig}", "--zap-log-level=info",
        ])

    def _start_trainer(self, certs: Path) -> None:
        self._spawn("trainer-controller-manager", [
            str(self.set_dir / "bin" / "trainer-controller-manager"),
            f"--kubeconfig={self.plane.kubeconfig}",
            f"--metrics-bind-address=127.0.0.1:{self.ports['trainer_metrics']}",
            f"--health-probe-bind-address=127.0.0.1:{self.ports['trainer_health']}",
            "--webhook-host=127.0.0.1",
            f"--webhook-server-port={self.ports['trainer_webhook']}",
            f"--webhook-cert-dir={certs}",
        ])

    def _wait_ready(self, name: str, port: int, deadline: float) -> None:
        url = f"http://127.0.0.1:{port}/readyz"
        last = "no answer yet"
        while True:
            for record in self.records:
                proc = self._popens.get(record.pid)
                if proc is not None and proc.poll() is not None:
                    raise ControlPlaneError(
                        f"{record.name} exited with code {proc.returncode}; last lines of {record.log}:\n"
                        f"{self.log_tail(record.name)}")
            try:
                with urllib.request.urlopen(url, timeout=2) as answer:
                    if answer.status == 200:
                        return
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            except OSError as exc:
                last = str(exc)
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"{name} not ready at {url} ({last}); last lines:\n{self.log_tail(name)}")
            time.sleep(0.2)

    def _register_webhooks(self) -> None:
        ca = base64.b64encode(Path(self.plane.ca_cert).read_bytes()).decode()
        objects = webhook_configurations(ca, self.ports["jobset_webhook"], self.ports["trainer_webhook"])
        self._webhooks = True  # from here on, stop() removes them (also after a failed apply)
        self._kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                      stdin="\n---\n".join(json.dumps(o) for o in objects))


def _hook(name: str, url: str, ca_bundle: str, *, group: str, version: str, resource: str,
          operations: tuple[str, ...], pods_of_jobsets: bool = False) -> dict:
    hook = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "rules": [{"apiGroups": [group], "apiVersions": [version], "operations": list(operations),
                   "resources": [resource]}],
    }
    if pods_of_jobsets:
        # Upstream's pod webhooks only act on JobSet pods; selecting them here keeps
        # every other pod of the test bed (the fleet's, other tests') out of their path.
        hook["objectSelector"] = {"matchExpressions": [{"key": JOBSET_LABEL, "operator": "Exists"}]}
    return hook


def webhook_configurations(ca_bundle: str, jobset_port: int, trainer_port: int) -> list[dict]:
    """The admission webhooks both projects ship (same paths and rules), pointed at loopback."""
    js = f"https://127.0.0.1:{jobset_port}"
    tr = f"https://127.0.0.1:{trainer_port}"
    ops = ("CREATE", "UPDATE")
    jobset_api = {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"}
    pods = {"group": "", "version": "v1", "resource": "pods", "pods_of_jobsets": True}
    trainer = {"group": "trainer.kubeflow.org", "version": "v1alpha1"}
    (mutating_js, mutating_tr), (validating_js, validating_tr) = (
        WEBHOOK_NAMES["MutatingWebhookConfiguration"], WEBHOOK_NAMES["ValidatingWebhookConfiguration"])
    return [
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": mutating_js},
         "webhooks": [
             _hook("mjobset.kb.io", f"{js}/mutate-jobset-x-k8s-io-v1alpha2-jobset", ca_bundle,
                   operations=("CREATE",), **jobset_api),
             _hook("mpod.kb.io", f"{js}/mutate--v1-pod", ca_bundle, operations=("CREATE",), **pods),
         ]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": validating_js},
         "webhooks": [
             _hook("vjobset.kb.io", f"{js}/validate-jobset-x-k8s-io-v1alpha2-jobset", ca_bundle,
                   operations=ops, **jobset_api),
             _hook("vpod.kb.io", f"{js}/validate--v1-pod", ca_bundle, operations=("CREATE",), **pods),
         ]},
        # Trainer 2.2 and later (not 2.0) default TrainJobs in a mutating webhook (runtimePatches times).
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": mutating_tr},
         "webhooks": [
             _hook("defaulter.trainjob.trainer.kubeflow.org",
                   f"{tr}/mutate-trainer-kubeflow-org-v1alpha1-trainjob", ca_bundle,
                   operations=ops, resource="trainjobs", **trainer),
         ]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
         "metadata": {"name": validating_tr},
         "webhooks": [
             _hook(f"validator.{res}.trainer.kubeflow.org",
                   f"{tr}/validate-trainer-kubeflow-org-v1alpha1-{res}", ca_bundle,
                   operations=ops, resource=f"{res}s", **trainer)
             for res in ("clustertrainingruntime", "trainingruntime", "trainjob")
         ]},
    ]
