"""pytest fixtures for tests that need a real Kubernetes API server.

Registered in tests/conftest.py with ``pytest_plugins = ["nvcre.testbed.pytest_plugin"]``.

- ``control_plane`` (session): one :class:`ControlPlane` for the whole run. With
  ``NVCRE_TEST_KUBECONFIG`` set, that cluster is used instead and nothing is started
  (its ``ca_key`` and kubelet certificates are then None).
- ``fresh_control_plane`` (function): a control plane of this test's own (about 5 s),
  for tests that change cluster-wide state (CRDs, cluster roles) others would see.
- ``kubeconfig`` (session): path of the admin kubeconfig, as a str.
- ``api_client`` (session): ``kubernetes.client.ApiClient`` for that kubeconfig.
- ``namespace`` (function): a fresh namespace (its default ServiceAccount exists, so
  pods can be created), deleted after the test.
- ``kubeflow_trainer`` (module): Kubeflow Trainer v2 + JobSet on ``control_plane``
  (:class:`nvcre.testbed.trainer.KubeflowTrainer`), uninstalled after the module.
- ``kubectl`` / ``helm`` (session): ``kubectl(*args, check=True, input=None, timeout=120)``
  runs the pinned binary against the cluster and returns a CompletedProcess (text).

Missing binaries fail the test with the command that builds them; they never skip.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nvcre.testbed.binaries import BinariesMissing, find_binaries
from nvcre.testbed.controlplane import ControlPlane, ControlPlaneError

EXTERNAL_ENV = "NVCRE_TEST_KUBECONFIG"


class CommandFailed(subprocess.CalledProcessError):
    """A kubectl/helm call that failed; its message carries stdout and stderr."""

    def __str__(self) -> str:
        return (
            f"{' '.join(map(str, self.cmd))} exited {self.returncode}\n"
            f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}"
        )


def _external_plane(kubeconfig: Path) -> ControlPlane:
    """A ControlPlane object describing a cluster someone else runs."""
    if not kubeconfig.is_file():
        pytest.fail(f"{EXTERNAL_ENV}={kubeconfig} does not exist", pytrace=False)
    try:
        bin_dir = find_binaries()
    except BinariesMissing:
        bin_dir = None
    if bin_dir is None:
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            pytest.fail(
                f"{EXTERNAL_ENV} is set but no kubectl was found: run `make kube` or put "
                "kubectl on PATH",
                pytrace=False,
            )
        bin_dir = Path(kubectl).parent
    return ControlPlane.external(kubeconfig, bin_dir=bin_dir)


def _started(plane: ControlPlane) -> ControlPlane:
    """Start ``plane`` or fail the test with why (missing binaries: how to build them)."""
    problem = None
    try:
        plane.start()
    except BinariesMissing as exc:
        problem = exc.message
    except ControlPlaneError as exc:
        problem = f"the local control plane did not start: {exc.message}"
    if problem:
        pytest.fail(problem, pytrace=False)
    return plane


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    external = os.environ.get(EXTERNAL_ENV)
    if external:
        yield _external_plane(Path(external).expanduser())
        return
    plane = _started(ControlPlane())
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def fresh_control_plane(tmp_path: Path) -> Iterator[ControlPlane]:
    plane = _started(ControlPlane(tmp_path / "control-plane"))
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def kubeconfig(control_plane: ControlPlane) -> str:
    return str(control_plane.kubeconfig)


@pytest.fixture(scope="session")
def api_client(kubeconfig: str):
    from kubernetes import config

    client = config.new_client_from_config(config_file=kubeconfig)
    try:
        yield client
    finally:
        client.close()


def _runner(binary: Path, kubeconfig: str) -> Callable[..., subprocess.CompletedProcess]:
    env = {**os.environ, "KUBECONFIG": kubeconfig}

    def run(
        *args: str, check: bool = True, input: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        cmd = [str(binary), *map(str, args)]
        result = subprocess.run(
            cmd, input=input, capture_output=True, text=True, env=env, timeout=timeout
        )
        if check and result.returncode != 0:
            raise CommandFailed(result.returncode, cmd, result.stdout, result.stderr)
        return result

    return run


@pytest.fixture(scope="session")
def kubectl(control_plane: ControlPlane, kubeconfig: str) -> Callable[..., subprocess.CompletedProcess]:
    return _runner(control_plane.kubectl_path, kubeconfig)


@pytest.fixture(scope="session")
def helm(control_plane: ControlPlane, kubeconfig: str) -> Callable[..., subprocess.CompletedProcess]:
    if not control_plane.helm_path.is_file():
        pytest.fail(f"helm not found at {control_plane.helm_path}; run `make kube`", pytrace=False)
    return _runner(control_plane.helm_path, kubeconfig)


def _namespace_name(test_name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")[:40].strip("-")
    return f"t-{slug}-{secrets.token_hex(3)}"


@pytest.fixture
def namespace(api_client, request: pytest.FixtureRequest) -> Iterator[str]:
    from kubernetes import client
    from kubernetes.client.rest import ApiException

    core = client.CoreV1Api(api_client)
    name = _namespace_name(request.node.name)
    core.create_namespace(
        client.V1Namespace(
            metadata=client.V1ObjectMeta(name=name, labels={"nvcre.nvidia.com/test": "true"})
        )
    )
    # Pod admission looks up the namespace's default ServiceAccount, which the
    # service-account controller creates a moment after the namespace (on a loaded 2-core
    # CI host its queue once took over 30 s: the fixture failed with NotFound).
    deadline = time.monotonic() + 120
    while True:
        try:
            core.read_namespaced_service_account("default", name)
            break
        except ApiException as exc:
            if exc.status != 404 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    try:
        yield name
    finally:
        try:
            core.delete_namespace(name, propagation_policy="Background")
        except ApiException as exc:
            if exc.status != 404:
                raise



@pytest.fixture(scope="module")
def kubeflow_trainer(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory):
    """Kubeflow Trainer v2 + JobSet running against ``control_plane`` for one test module.

    Module-scoped and fully uninstalled at teardown (webhooks, CRDs, processes): the
    controller picks the trainjob adapter whenever TrainJob is served, so leaving it
    installed would change which adapter later modules' tests exercise.
    A missing build fails the test with `make trainer`; it never skips.
    """
    from nvcre.testbed.trainer import KubeflowTrainer, TrainerMissing

    try:
        trainer = KubeflowTrainer(control_plane, tmp_path_factory.mktemp("kubeflow-trainer"))
        trainer.start()
    except (TrainerMissing, ControlPlaneError) as exc:
        pytest.fail(f"Kubeflow Trainer: {exc.message}", pytrace=False)
    try:
        yield trainer
    finally:
        trainer.stop()
