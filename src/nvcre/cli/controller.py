"""``nvcrectl controller run``: the controller process (kubeconfig or in-cluster)."""

from __future__ import annotations

import logging
from typing import Optional

import typer

from nvcre.cli.apps import controller_app
from nvcre.errors import UserError


@controller_app.command("run")
def run_controller(
    kubeconfig: Optional[str] = typer.Option(None, "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)."),
    namespace: list[str] = typer.Option([], "--namespace", "-n", help="Watch only these namespaces (repeatable)."),
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Watch every namespace (the default)."),
    metrics_port: int = typer.Option(0, "--metrics-port", help="Serve Prometheus metrics on ADDRESS:PORT/metrics (0: off)."),
    metrics_address: str = typer.Option(
        "127.0.0.1", "--metrics-address", help="Address the metrics server binds (0.0.0.0 in a pod, so its Service reaches it)."
    ),
    resync_seconds: float = typer.Option(30.0, "--resync-seconds", help="Safety-net resync period."),
    poll_seconds: float = typer.Option(10.0, "--poll-seconds", help="How often a running Job is looked at until the watches have synced (then events and its clocks decide)."),
    waiting_for_nodes_seconds: float = typer.Option(300.0, "--waiting-for-nodes-seconds", help="How long a Certification waits for target nodes."),
    namespace_access_timeout: float = typer.Option(600.0, "--namespace-access-timeout", help="Seconds a Workflow waits for namespace permissions."),
    adapter: str = typer.Option("auto", "--adapter", help="Workload adapter: auto, native or trainjob."),
    workers: int = typer.Option(4, "--workers", help="Reconcile worker threads."),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR."),
) -> None:
    """Run the nvcre controller until interrupted."""
    from nvcre.controller.context import Settings
    from nvcre.controller.main import serve

    if namespace and all_namespaces:
        raise UserError("--namespace and --all-namespaces cannot be combined")
    if adapter not in ("auto", "native", "trainjob"):
        raise UserError(f"--adapter must be auto, native or trainjob, not {adapter!r}")
    if workers < 1:
        raise UserError("--workers must be at least 1")
    level = getattr(logging, log_level.upper(), None)
    if not isinstance(level, int):
        raise UserError(f"--log-level must be DEBUG, INFO, WARNING or ERROR, not {log_level!r}")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kopf").setLevel(max(level, logging.WARNING))
    settings = Settings(
        resync_seconds=resync_seconds,
        poll_seconds=poll_seconds,
        waiting_for_nodes_seconds=waiting_for_nodes_seconds,
        namespace_access_timeout_seconds=namespace_access_timeout,
        adapter=adapter,
        workers=workers,
    )
    serve(
        kubeconfig,
        namespaces=list(namespace) or None,
        metrics_port=metrics_port or None,
        metrics_address=metrics_address,
        settings=settings,
    )
