"""`--setup`, `--cleanup`, `--controller-image`/`--image` and `--controller-pull-secret` of
`certification run` and `workloadrun run`: install nvcre before a run, remove the run after.

As in the reference, ``--setup`` runs ``setup init`` first (the controller image and a
registry token for it are the only setup flags a run takes), and ``--cleanup`` runs on
every exit path once the run object exists: it deletes the run (its Workflows, Jobs and
workloads go with it), the namespace when this run made it, and, after ``--setup``,
what setup installed (``setup reset``). Both print to stderr, so the run's machine
output stays alone on stdout.
"""

from __future__ import annotations

import base64
import contextlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass

from nvcre.errors import UserError

CONTROLLER_PULL_SECRET = "nvcrectl-controller-pull"  # in the install namespace
DEFAULT_CONTROLLER_REGISTRY = "ghcr.io"  # the chart's default image (charts/nvcre/values.yaml)
TOKEN_USERNAME = "nvcrectl"  # a token registry (GHCR, a GitHub PAT) ignores the user name


@dataclass(frozen=True)
class Lifecycle:
    """What a run does around itself, checked and ready to act on."""

    setup: bool = False
    cleanup: bool = False
    controller_image: str | None = None
    controller_token: str | None = None


def check_lifecycle(*, setup: bool, cleanup: bool, wait: bool, controller_image: str | None,
                    controller_token: str | None, image_flag: str = "--controller-image") -> Lifecycle:
    """The flags as one decision; a combination that would do nothing or harm is refused by name."""
    if controller_image is not None and not setup:
        raise UserError(f"{image_flag} is the controller image that --setup installs; add --setup "
                        "(or install with `nvcrectl setup init --image ...`)")
    if controller_token is not None and not setup:
        raise UserError("--controller-pull-secret is the registry token --setup pulls the controller image with; add --setup")
    if controller_token is not None and not controller_token.strip():
        raise UserError("--controller-pull-secret: the token is empty")
    if cleanup and not wait:
        raise UserError("--cleanup needs --wait: without it the run would be deleted as soon as it is created "
                        "(remove a run later with `nvcrectl certification cleanup NAME` or `workloadrun cleanup NAME`)")
    return Lifecycle(setup=setup, cleanup=cleanup, controller_image=controller_image, controller_token=controller_token)


def registry_host(image: str | None) -> str:
    """The registry host the kubelet matches for ``image`` (Docker's rule), else the chart default's."""
    if not image:
        return DEFAULT_CONTROLLER_REGISTRY
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def controller_pull_secret(token: str, image: str | None, namespace: str) -> dict:
    """The dockerconfigjson Secret (in the install namespace) for the controller image's registry."""
    host = registry_host(image)
    auth = base64.b64encode(f"{TOKEN_USERNAME}:{token}".encode()).decode()
    config = {"auths": {host: {"username": TOKEN_USERNAME, "password": token, "auth": auth}}}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": CONTROLLER_PULL_SECRET, "namespace": namespace,
                     "labels": {"app.kubernetes.io/managed-by": "nvcrectl"}},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(json.dumps(config).encode()).decode()},
    }


@dataclass(frozen=True)
class SetupOutcome:
    """What --setup installed in this run: --cleanup resets only that."""

    release: bool = False
    deps: bool = False


def setup_argv(lifecycle: Lifecycle, *, release: str, namespace: str, kubeconfig: str | None,
               context: str | None) -> list[str]:
    """The ``setup init`` command line --setup runs (no prompt: the run command is the approval)."""
    argv = ["setup", "init", "--auto-approve", "--release", release, "--namespace", namespace]
    if lifecycle.controller_image:
        argv += ["--image", lifecycle.controller_image]
    if lifecycle.controller_token is not None:
        argv += ["--image-pull-secret", CONTROLLER_PULL_SECRET]
    return argv + _connection(kubeconfig, context)


def reset_argv(*, release: str, namespace: str, kubeconfig: str | None, context: str | None,
               installed: SetupOutcome | None = None) -> list[str]:
    """The ``setup reset`` command line --cleanup runs after --setup, for what this run's setup
    installed: the release (with every run in it) and/or the dependencies; what was there
    before (an earlier ``setup init``) stays."""
    installed = installed or SetupOutcome(release=True, deps=True)
    kept = [*([] if installed.release else ["cr", "helm"]), *([] if installed.deps else ["deps"])]
    skip = ["--skip-phases", ",".join(kept)] if kept else []
    return ["setup", "reset", "--auto-approve", "--release", release, "--namespace", namespace, *skip,
            *_connection(kubeconfig, context)]


def _connection(kubeconfig: str | None, context: str | None) -> list[str]:
    return [*(["--kubeconfig", kubeconfig] if kubeconfig else []), *(["--context", context] if context else [])]


def _nvcrectl(argv: list[str]) -> int:
    """Run another nvcrectl command (setup init or reset) as a child process, its stdout sent
    to our stderr: the run's stdout stays the report alone, and the CLI's entry point is not
    imported back from a command it dispatched (no import cycle)."""
    import subprocess

    sys.stderr.flush()
    done = subprocess.run([sys.executable, "-m", "nvcre.cli.main", *argv], stdin=subprocess.DEVNULL,
                          stdout=sys.stderr, check=False)
    return done.returncode


def _release_exists(release: str, namespace: str, kubeconfig: str | None, context: str | None) -> bool:
    """Whether the Helm release is already installed (then --cleanup must not reset it: it
    holds other users' runs). Unknown (no helm yet) reads as installed, the safe side."""
    from nvcre.cli.setup import Helm, find_helm

    try:
        values, _ = Helm(find_helm(None), kubeconfig, context).release_values(release, namespace)
    except Exception:  # noqa: BLE001 - setup init itself reports what is wrong with helm
        return True
    return values is not None


def _deps_installed(kubeconfig: str | None, context: str | None) -> bool:
    """Whether a Trainer release of ``setup init`` is there. Unknown reads as installed (then
    --cleanup leaves the dependencies alone, the safe side)."""
    from nvcre.cli.deps import ours_installed
    from nvcre.cli.report import connect

    try:
        return bool(ours_installed(connect(kubeconfig, context)))
    except Exception:  # noqa: BLE001 - setup init itself reports what is wrong with the cluster
        return True


def run_setup(lifecycle: Lifecycle, *, release: str, namespace: str, kubeconfig: str | None,
              context: str | None) -> SetupOutcome:
    """--setup: the controller pull Secret (with a token), then ``setup init``; a failure stops the
    run. Says whether this run installed the release and the dependencies (they were not there
    before), so that --cleanup resets only an install it made itself."""
    fresh = not _release_exists(release, namespace, kubeconfig, context)
    had_deps = _deps_installed(kubeconfig, context)
    if lifecycle.controller_token is not None:
        from nvcre.cli.report import cluster_errors, connect

        with cluster_errors():
            client = connect(kubeconfig, context)
            client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            secret = controller_pull_secret(lifecycle.controller_token, lifecycle.controller_image, namespace)
            client.apply(secret, namespace)  # server-side apply: a changed token replaces the old one
        print(f"[setup] secret/{CONTROLLER_PULL_SECRET} ready in {namespace} for {registry_host(lifecycle.controller_image)}",
              file=sys.stderr)
    argv = setup_argv(lifecycle, release=release, namespace=namespace, kubeconfig=kubeconfig, context=context)
    print("[setup] nvcrectl " + " ".join(argv), file=sys.stderr)
    code = _nvcrectl(argv)
    if code:
        raise UserError(f"--setup: setup init failed (exit {code}); nothing was created", exit_code=code)
    if not fresh:
        print(f"[setup] release {release} was already installed: --cleanup will leave it", file=sys.stderr)
    return SetupOutcome(release=fresh, deps=not had_deps and _deps_installed(kubeconfig, context))


def run_cleanup(lifecycle: Lifecycle, *, created: bool, kind: str, name: str, namespace: str, release: str,
                controller_namespace: str, kubeconfig: str | None, context: str | None,
                cleanup_run: Callable[..., None], installed: SetupOutcome = SetupOutcome()) -> bool:
    """--cleanup: delete the run (only when this command created it) and wait until it is
    gone, its namespace when this run made it, then ``setup reset`` only when --setup installed
    the release in this run (``installed``): a reset deletes every run in the cluster, so an
    install that was there before, or a setup that failed, is left alone; the dependencies
    (Kubeflow Trainer) are reset only when this run's setup installed them too. True when every step
    succeeded; a failed step is a warning, so the run's own exit code stands.
    ``cleanup_run`` is the `cleanup` command's own deletion, passed in by the run command."""

    ok = True
    if created:
        print(f"[cleanup] deleting {kind.lower()} {name} ...", file=sys.stderr)
        try:
            with contextlib.redirect_stdout(sys.stderr):
                cleanup_run(kind, name, namespace, keep_namespace=False, timeout="10m", kubeconfig=kubeconfig, context=context)
        except UserError as err:
            print(f"[cleanup] warning: {err.message}", file=sys.stderr)
            ok = False
    if lifecycle.setup and (installed.release or installed.deps):
        code = _nvcrectl(reset_argv(release=release, namespace=controller_namespace, kubeconfig=kubeconfig,
                                    context=context, installed=installed))
        if code:
            print(f"[cleanup] warning: setup reset failed (exit {code})", file=sys.stderr)
            ok = False
    print("[cleanup] done" + ("" if ok else " (with warnings)"), file=sys.stderr)
    return ok
