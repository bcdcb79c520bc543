"""``nvcrectl controller run``: the controller process (kubeconfig or in-cluster)."""

from __future__ import annotations

from typing import Optional

import typer

from nvcre.cli.apps import controller_app
from nvcre.errors import UserError

# Kept equal to nvcre.controller.logs by a test; not imported from there so --help stays light.
LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@controller_app.command("run")
def run_controller(
    kubeconfig: Optional[str] = typer.Option(None, "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)."),
    namespace: list[str] = typer.Option([], "--namespace", "-n", help="Watch only these namespaces (repeatable)."),
    all_namespaces: bool = typer.Option(False, "--all-namespaces", "-A", help="Watch every namespace (the default)."),
    metrics_port: int = typer.Option(0, "--metrics-port", help="Serve Prometheus metrics on ADDRESS:PORT/metrics (0: off)."),
    metrics_address: str = typer.Option(
        "127.0.0.1", "--metrics-address", help="Address the metrics server binds (0.0.0.0 in a pod, so its Service reaches it)."
    ),
    resync_seconds: float = typer.Option(300.0, "--resync-seconds", help="Safety-net resync period: every unfinished object is looked at again (watch events and deadlines drive the work)."),
    poll_seconds: Optional[float] = typer.Option(
        None, "--poll-seconds", hidden=True,
        help="Removed: watch events and deadlines drive the work. Accepted and ignored, with a warning."),
    waiting_for_nodes_seconds: float = typer.Option(300.0, "--waiting-for-nodes-seconds", help="How long a Certification waits for target nodes."),
    namespace_access_timeout: float = typer.Option(600.0, "--namespace-access-timeout", help="Seconds a Workflow waits for namespace permissions."),
    adapter: str = typer.Option("auto", "--adapter", help="Workload adapter: auto, native or trainjob."),
    workers: int = typer.Option(4, "--workers", help="Reconcile worker threads."),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR."),
    log_format: str = typer.Option("text", "--log-format", help="text (a line per record) or json (an object per line)."),
    metrics_node_detail_limit: int = typer.Option(
        0, "--metrics-node-detail-limit", help="Per-node metric series for at most this many nodes (0: none; node names are unbounded)."
    ),
    reference_metrics: bool = typer.Option(
        False, "--reference-metrics",
        help="Also export the reference's NCCL gauges (nvcre_nccl_busbw_gbs, nvcre_nccl_algbw_gbs and their _gbps aliases, GB/s, "
             "per measurement and message size) while a BandwidthMeasurement runs. Many more series; see docs/observability.md.",
    ),
) -> None:
    """Run the nvcre controller until interrupted."""
    from nvcre.controller.context import Settings
    from nvcre.controller.main import serve

    if poll_seconds is not None:  # a deployment written for an older release must still start
        typer.echo("warning: --poll-seconds is ignored: watch events and deadlines drive the work "
                   "(--resync-seconds is the safety net)", err=True)
    if namespace and all_namespaces:
        raise UserError("--namespace and --all-namespaces cannot be combined")
    if adapter not in ("auto", "native", "trainjob"):
        raise UserError(f"--adapter must be auto, native or trainjob, not {adapter!r}")
    if workers < 1:
        raise UserError("--workers must be at least 1")
    if log_level.upper() not in LOG_LEVELS:
        raise UserError(f"--log-level must be DEBUG, INFO, WARNING or ERROR, not {log_level!r}")
    if log_format not in LOG_FORMATS:
        raise UserError(f"--log-format must be text or json, not {log_format!r}")
    if not 0 <= metrics_node_detail_limit <= 10000:
        raise UserError("--metrics-node-detail-limit must be between 0 and 10000")
    from nvcre.controller.logs import configure

    configure(log_level, log_format)
    settings = Settings(
        resync_seconds=resync_seconds,
        waiting_for_nodes_seconds=waiting_for_nodes_seconds,
        namespace_access_timeout_seconds=namespace_access_timeout,
        adapter=adapter,
        workers=workers,
        metrics_node_detail_limit=metrics_node_detail_limit,
        reference_metrics=reference_metrics,
    )
    serve(
        kubeconfig,
        namespaces=list(namespace) or None,
        metrics_port=metrics_port or None,
        metrics_address=metrics_address,
        settings=settings,
    )
