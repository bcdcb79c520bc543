"""`--setup`, `--cleanup`, `--controller-image`/`--image`, `--controller-pull-secret` and
`--grant-run-access` of `certification run` and `workloadrun run` (reference section 7.3):
the checks, the commands they run, and the order, with the cluster side recorded."""

from __future__ import annotations

import subprocess

import base64
import json
from pathlib import Path

import pytest
import typer

from nvcre.cli.main import main
from nvcre.cli.run_lifecycle import (
    CONTROLLER_PULL_SECRET, Lifecycle, check_lifecycle, controller_pull_secret, registry_host, reset_argv, setup_argv,
)
from nvcre.errors import UserError

REPO = Path(__file__).resolve().parents[3]
RUN_FILE = str(REPO / "examples" / "seeds" / "000-workloadrun-nccl-all-reduce.yaml")
CERT = ["certification", "run", "--category", "communication/nccl-all-reduce", "--name", "nvcrectl-t"]


@pytest.mark.parametrize("kwargs,message", [
    (dict(controller_image="reg.example/nvcre:1"), "--controller-image is the controller image that --setup installs"),
    (dict(controller_token="tok"), "--controller-pull-secret is the registry token --setup"),
    (dict(setup=True, controller_token="  "), "the token is empty"),
    (dict(cleanup=True), "--cleanup needs --wait"),
])
def test_combinations_that_would_do_nothing_are_refused(kwargs, message):
    args = dict(setup=False, cleanup=False, wait=False, controller_image=None, controller_token=None) | kwargs
    with pytest.raises(UserError, match=message):
        check_lifecycle(**args)


def test_setup_and_reset_command_lines():
    life = check_lifecycle(setup=True, cleanup=True, wait=True, controller_image="reg.example:5000/nvcre:1",
                           controller_token="tok")
    assert setup_argv(life, release="r", namespace="nv", kubeconfig="/k", context="c") == [
        "setup", "init", "--auto-approve", "--release", "r", "--namespace", "nv", "--image", "reg.example:5000/nvcre:1",
        "--image-pull-secret", CONTROLLER_PULL_SECRET, "--kubeconfig", "/k", "--context", "c"]
    assert setup_argv(Lifecycle(setup=True), release="nvcre", namespace="nvcre", kubeconfig=None, context=None) == [
        "setup", "init", "--auto-approve", "--release", "nvcre", "--namespace", "nvcre"]
    assert reset_argv(release="r", namespace="nv", kubeconfig=None, context=None) == [
        "setup", "reset", "--auto-approve", "--release", "r", "--namespace", "nv"]


@pytest.mark.parametrize("image,host", [(None, "ghcr.io"), ("reg.example:5000/a/b:1", "reg.example:5000"),
                                        ("localhost/x", "localhost"), ("nvcre/nvcre:1", "docker.io")])
def test_controller_pull_secret_is_for_the_controller_image_registry(image, host):
    assert registry_host(image) == host
    secret = controller_pull_secret("s3cret", image, "nv")
    assert secret["metadata"] == {"name": CONTROLLER_PULL_SECRET, "namespace": "nv",
                                  "labels": {"app.kubernetes.io/managed-by": "nvcrectl"}}
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    config = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    assert list(config["auths"]) == [host] and config["auths"][host]["password"] == "s3cret"


@pytest.mark.parametrize("argv,message", [
    ([*CERT, "--cleanup"], "--cleanup needs --wait"),
    ([*CERT, "--setup", "--image", "reg.example/pytorch:1"], "give --controller-image"),
    ([*CERT, "--controller-pull-secret", "tok"], "add --setup"),
    (["workloadrun", "run", RUN_FILE, "--image", "reg.example/nvcre:1"], "--image is the controller image that --setup"),
    (["workloadrun", "run", RUN_FILE, "--cleanup"], "--cleanup needs --wait"),
])
def test_bad_combinations_exit_2_before_touching_a_cluster(argv, message, capsys, monkeypatch):
    monkeypatch.setenv("KUBECONFIG", "/nonexistent")
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err and "Traceback" not in captured.err


class Recorder:
    """Stands in for the cluster side of a run: what was called, in order."""

    def __init__(self, monkeypatch, *, finish_code: int = 0, submit_fails: bool = False, installed_before: bool = False):
        import nvcre.cli.run as run
        import nvcre.cli.run_lifecycle as lifecycle_module
        self.calls: list[tuple] = []
        monkeypatch.setattr(lifecycle_module, "_release_exists", lambda *a: installed_before)

        def child(cmd, *, stdout, **kw):
            """The nested `nvcrectl setup init|reset` process: it chatters on what it was given."""
            argv = cmd[cmd.index("nvcre.cli.main") + 1:]
            print("helm chatter that must not reach stdout", file=stdout)
            self.calls.append(tuple(argv[:2]))
            return subprocess.CompletedProcess(cmd, 0)

        def submit(obj, namespace, **kw):
            self.calls.append(("submit", obj["kind"], namespace, kw["grant"]))
            if submit_fails:
                raise UserError("certification 'x' already exists")
            return object()

        def finish(client, kind, name, namespace, wait, timeout, output, files, **kw):
            self.calls.append(("finish", kind, kw["cleanup"]))
            print('{"result": "PASSED"}')
            if finish_code:
                raise typer.Exit(finish_code)

        def cleanup(kind, name, namespace, keep_namespace, timeout, kubeconfig, context):
            print(f"{kind.lower()} {name} deleted")
            self.calls.append(("cleanup", kind, name, namespace))

        monkeypatch.setattr(subprocess, "run", child)  # the nested setup init / reset, not the run itself
        monkeypatch.setattr(run, "_submit", submit)
        monkeypatch.setattr(run, "_finish", finish)
        monkeypatch.setattr(run, "cleanup_run", cleanup)


@pytest.mark.parametrize("finish_code", [0, 1, 5])
def test_setup_run_wait_then_cleanup_on_every_exit(monkeypatch, capsys, finish_code):
    rec = Recorder(monkeypatch, finish_code=finish_code)
    code = main([*CERT, "--setup", "--wait", "--cleanup", "-o", "json", "--grant-run-access"])
    assert code == finish_code  # the run's own verdict stands
    assert rec.calls == [("setup", "init"), ("submit", "Certification", "nvcrectl-t", True),
                         ("finish", "Certification", True), ("cleanup", "Certification", "nvcrectl-t", "nvcrectl-t"),
                         ("setup", "reset")]
    out = capsys.readouterr().out
    assert out == '{"result": "PASSED"}\n'  # setup, cleanup and reset talk on stderr


def test_cleanup_without_setup_leaves_the_install(monkeypatch, capsys):
    rec = Recorder(monkeypatch)
    assert main(["workloadrun", "run", RUN_FILE, "--wait", "--cleanup", "-n", "team-a"]) == 0
    assert [c[0] for c in rec.calls] == ["submit", "finish", "cleanup"]
    assert rec.calls[0] == ("submit", "WorkloadRun", "team-a", False)  # no RoleBinding unless asked


def test_a_run_not_created_is_not_deleted_but_setup_is_undone(monkeypatch, capsys):
    rec = Recorder(monkeypatch, submit_fails=True)
    assert main([*CERT, "--setup", "--wait", "--cleanup"]) == 2
    assert rec.calls == [("setup", "init"), ("submit", "Certification", "nvcrectl-t", False), ("setup", "reset")]
    assert "already exists" in capsys.readouterr().err


def test_failed_setup_stops_the_run(monkeypatch, capsys):
    import nvcre.cli.run_lifecycle as lifecycle

    rec = Recorder(monkeypatch)
    monkeypatch.setattr(lifecycle, "_nvcrectl", lambda argv: rec.calls.append(tuple(argv[:2])) or 3)
    assert main([*CERT, "--setup", "--wait"]) == 3
    assert rec.calls == [("setup", "init")]
    assert "setup init failed (exit 3); nothing was created" in capsys.readouterr().err


def test_workloadrun_image_is_the_controller_image_for_setup(monkeypatch, capsys):
    import nvcre.cli.run_lifecycle as lifecycle

    seen: list[list[str]] = []
    Recorder(monkeypatch)
    monkeypatch.setattr(lifecycle, "_nvcrectl", lambda argv: seen.append(argv) or 0)
    assert main(["workloadrun", "run", RUN_FILE, "--setup", "--image", "reg.example/nvcre:2"]) == 0
    assert seen[0][:2] == ["setup", "init"] and seen[0][seen[0].index("--image") + 1] == "reg.example/nvcre:2"


class FakeClient:
    """Only what the run-access helpers call."""

    def __init__(self, *, exists: bool = False, forbidden: bool = False):
        self.exists, self.forbidden, self.created = exists, forbidden, []

    def create(self, obj, namespace=None):
        from nvcre.kube.client import ApiError

        if self.forbidden:
            raise ApiError(403, "Forbidden", "rolebindings is forbidden")
        self.created.append(obj)
        return obj, not self.exists

    def get(self, api_version, kind, name, namespace=None):
        from nvcre.kube.client import ApiError

        if self.forbidden:
            raise ApiError(403, "Forbidden", "no")
        return {"metadata": {"name": name}} if self.exists else None


def test_grant_run_access_binds_only_when_asked_and_a_refusal_is_an_error():
    from nvcre.cli.run import _grant_run_access, _run_access_hint

    client = FakeClient()
    assert _grant_run_access(client, "team-a", "nvcre", "nvcre") == "rolebinding/nvcre-manager-run created (--grant-run-access)"
    assert client.created[0]["roleRef"]["name"] == "nvcre-run-role"
    with pytest.raises(UserError, match="--grant-run-access: you may not create the RoleBinding in team-a"):
        _grant_run_access(FakeClient(forbidden=True), "team-a", "nvcre", "nvcre")
    # not asked: nothing is created; a note only when the binding is missing
    assert "add --grant-run-access" in _run_access_hint(FakeClient(), "team-a", "nvcre", "nvcre")
    assert _run_access_hint(FakeClient(exists=True), "team-a", "nvcre", "nvcre") == ""
    assert _run_access_hint(FakeClient(forbidden=True), "team-a", "nvcre", "nvcre") == ""


def test_cleanup_leaves_an_install_that_was_there_before(monkeypatch, capsys):
    """`setup reset` deletes every run in the cluster: --cleanup resets only a release that
    this run's --setup installed, never one other users' runs depend on."""
    rec = Recorder(monkeypatch, installed_before=True)
    assert main([*CERT, "--setup", "--wait", "--cleanup"]) == 0
    assert [c[0] for c in rec.calls] == ["setup", "submit", "finish", "cleanup"]
    assert "was already installed: --cleanup will leave it" in capsys.readouterr().err


def test_a_failed_setup_is_not_followed_by_a_reset(monkeypatch, capsys):
    import nvcre.cli.run_lifecycle as lifecycle

    rec = Recorder(monkeypatch)
    monkeypatch.setattr(lifecycle, "_nvcrectl", lambda argv: rec.calls.append(tuple(argv[:2])) or 3)
    assert main([*CERT, "--setup", "--wait", "--cleanup"]) == 3
    assert rec.calls == [("setup", "init")]  # no ("setup", "reset"): the failed init may sit on an older install


class RefusingCluster:
    """A cluster whose API server refuses the run object itself (422): what --cleanup must
    take back is what the run made before that, and only that."""

    def __init__(self, *, namespace_exists: bool = False):
        self.namespace_exists = namespace_exists
        self.created: list[tuple[str, str]] = []
        self.deleted: list[tuple[str, str, str | None]] = []

    def create(self, obj, namespace=None):
        from nvcre.kube.client import ApiError

        if obj["kind"] == "Certification":
            raise ApiError(422, "Invalid", 'Certification.nvcre.nvidia.com "nvcrectl-t" is invalid: spec: refused by a policy')
        if obj["kind"] == "Namespace" and self.namespace_exists:
            return obj, False
        self.created.append((obj["kind"], obj["metadata"]["name"]))
        return obj, True

    def get(self, api_version, kind, name, namespace=None):
        return None

    def delete(self, api_version, kind, name, namespace=None, **kw):
        self.deleted.append((kind, name, namespace))
        return True


REGISTRY = ["--workload-registry", "mirror.example:5000", "--workload-registry-username", "u",
            "--workload-registry-password", "p"]


@pytest.mark.parametrize("extra,namespace_exists,deleted", [
    # the fresh namespace goes, and the pull Secret in it with it
    ([], False, [("Namespace", "nvcrectl-t", None)]),
    # a namespace the user named stays: only the Secret this run made there is removed
    (["-n", "team-a"], True, [("Secret", "nvcrectl-pull-nvcrectl-t", "team-a")]),
])
def test_cleanup_removes_what_a_refused_run_made(monkeypatch, capsys, extra, namespace_exists, deleted):
    import nvcre.cli.run as run

    cluster = RefusingCluster(namespace_exists=namespace_exists)
    monkeypatch.setattr(run, "connect", lambda *a: cluster)
    assert main([*CERT, *REGISTRY, *extra, "--wait", "--cleanup"]) == 2
    err = capsys.readouterr().err
    assert "refused by a policy" in err and "Traceback" not in err
    assert ("Secret", "nvcrectl-pull-nvcrectl-t") in cluster.created
    assert cluster.deleted == deleted


def test_without_cleanup_a_refused_run_leaves_its_namespace(monkeypatch, capsys):
    import nvcre.cli.run as run

    cluster = RefusingCluster()
    monkeypatch.setattr(run, "connect", lambda *a: cluster)
    assert main([*CERT, *REGISTRY, "--wait"]) == 2
    assert cluster.created == [("Namespace", "nvcrectl-t"), ("Secret", "nvcrectl-pull-nvcrectl-t")]
    assert cluster.deleted == []


def test_cleanup_resets_the_dependencies_only_when_this_run_installed_them(monkeypatch):
    """A Trainer an earlier `setup init` installed survives `run --setup --cleanup`."""
    from nvcre.cli import run_lifecycle

    calls = []
    monkeypatch.setattr(run_lifecycle, "_nvcrectl", lambda argv: calls.append(argv) or 0)
    life = Lifecycle(setup=True, cleanup=True)
    common = dict(created=False, kind="Certification", name="c", namespace="ns", release="nvcre",
                  controller_namespace="nvcre", kubeconfig=None, context=None, cleanup_run=lambda *a, **k: None)
    assert run_lifecycle.run_cleanup(life, installed=run_lifecycle.SetupOutcome(release=True, deps=False), **common)
    assert run_lifecycle.run_cleanup(life, installed=run_lifecycle.SetupOutcome(release=True, deps=True), **common)
    assert run_lifecycle.run_cleanup(life, installed=run_lifecycle.SetupOutcome(release=False, deps=True), **common)
    assert calls == [
        ["setup", "reset", "--auto-approve", "--release", "nvcre", "--namespace", "nvcre", "--skip-phases", "deps"],
        ["setup", "reset", "--auto-approve", "--release", "nvcre", "--namespace", "nvcre"],
        ["setup", "reset", "--auto-approve", "--release", "nvcre", "--namespace", "nvcre", "--skip-phases", "cr,helm"],
    ]
    assert run_lifecycle.run_cleanup(life, installed=run_lifecycle.SetupOutcome(), **common)
    assert len(calls) == 3  # nothing installed by this run: nothing reset
