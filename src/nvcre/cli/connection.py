"""Connecting to the user's cluster, and saying in one line why that failed.

Exit code 3 means "cannot reach or authenticate to the cluster", and its message
names what a person checks first: the kubeconfig file, the context, the server and
what the server answered. No urllib3 retry text, no traceback. The Kubernetes client
is imported only when a command connects, so ``--help`` stays fast.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nvcre.errors import EXIT_CLUSTER, EXIT_USAGE, UserError

if TYPE_CHECKING:  # pragma: no cover
    from nvcre.kube.client import KubeClient


@dataclass
class Target:
    """Which cluster a command talks to, as the user would name it."""

    kubeconfig: str = ""
    context: str = ""
    server: str = ""
    user: str = ""

    def describe(self) -> str:
        parts = []
        if self.server:
            parts.append(f"server {self.server}")
        if self.context:
            parts.append(f"context {self.context!r}")
        if self.user:
            parts.append(f"user {self.user!r}")
        if self.kubeconfig:
            parts.append(f"kubeconfig {self.kubeconfig}")
        return ", ".join(parts) or "the in-cluster service account"


_target = Target()


def current_target() -> Target:
    return _target


def _kubeconfig_path(kubeconfig: str | None) -> str:
    if kubeconfig:
        return kubeconfig
    env = os.environ.get("KUBECONFIG", "")
    if env:
        return env.split(os.pathsep)[0]
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return ""
    return os.path.expanduser("~/.kube/config")


def _read_names(path: str, context: str | None) -> tuple[str, str]:
    """(context, user) the kubeconfig selects; empty when it cannot be read (the loader says why)."""
    try:
        import yaml

        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh) or {}
        name = context or doc.get("current-context") or ""
        for entry in doc.get("contexts") or []:
            if entry.get("name") == name:
                return name, (entry.get("context") or {}).get("user", "")
        return name, ""
    except Exception:  # noqa: BLE001 - only used to describe the target
        return context or "", ""


def connect(kubeconfig: str | None, context: str | None) -> KubeClient:
    """A client for the user's cluster, named so audit logs show nvcrectl.

    A kubeconfig that is missing or unreadable is exit 3 (the cluster cannot be
    reached), naming the file and the context.
    """
    from nvcre.kube.client import KubeClient, load_configuration

    global _target
    path = _kubeconfig_path(kubeconfig)
    ctx, user = _read_names(path, context) if path else (context or "", "")
    _target = Target(kubeconfig=path, context=ctx, user=user)
    try:
        configuration = load_configuration(kubeconfig, context)
    except UserError as err:
        raise UserError(f"cannot connect: {err.message}", exit_code=EXIT_CLUSTER) from None
    _target.server = configuration.host or ""
    return KubeClient(configuration, user_agent="nvcrectl")


def _answer(err: BaseException) -> str:
    """What the network layer said, in a few words (the innermost cause, no retry text)."""
    cause: BaseException | None = getattr(err, "reason", None) or err.__cause__ or err.__context__
    seen = 0
    while cause is not None and seen < 5:
        inner = getattr(cause, "reason", None) or cause.__cause__
        if not isinstance(inner, BaseException):
            break
        cause, seen = inner, seen + 1
    text = str(cause if isinstance(cause, BaseException) else err)
    for marker in ("Connection refused", "Name or service not known", "timed out", "No route to host",
                   "certificate verify failed", "Temporary failure in name resolution", "Network is unreachable"):
        if marker.lower() in text.lower():
            return marker.lower() if marker != "certificate verify failed" else "TLS certificate verify failed"
    # "<urllib3.connection.HTTPSConnection object at 0x..>: Failed to establish ...: [Errno 111] ..."
    if ">: " in text:
        text = text.split(">: ", 1)[1]
    return text.splitlines()[0][:200] if text else type(err).__name__


def cluster_error_message(err: BaseException, target: Target | None = None) -> str:
    """One line for an API refusal or an unreachable server, with where we tried."""
    from nvcre.kube.client import ApiError

    where = (target or _target).describe()
    if isinstance(err, ApiError):
        if err.status == 401:
            return f"the API server rejected the credentials (401 Unauthorized): {where}; check the user's token or certificate"
        if err.status == 403:
            return (f"the API server refused: 403 Forbidden: {err.message} ({where}; "
                    "your kubeconfig's user lacks that permission)")
        return f"the API server refused: {err.status} {err.reason}: {err.message} ({where})"
    return f"cannot reach the API server: {_answer(err)} ({where})"


@contextlib.contextmanager
def cluster_errors() -> Iterator[None]:
    """Turn API refusals and unreachable servers into one readable line (exit 3)."""
    from nvcre.kube.client import ApiError

    try:
        yield
    except ApiError as err:
        # the server understood us and said the object is invalid: that is bad input
        code = EXIT_USAGE if err.status in (400, 422) else EXIT_CLUSTER
        raise UserError(cluster_error_message(err), exit_code=code) from None
    except (ConnectionError, TimeoutError) as err:  # nvcre.kube.TransportError is a ConnectionError
        raise UserError(cluster_error_message(err), exit_code=EXIT_CLUSTER) from None
