"""`nvcrectl certification report` and `workloadrun report`, plus the cluster plumbing
the other user-surface commands share (connecting, API errors, writing report files).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Iterator, Optional

import typer

from nvcre.cli.apps import certification_app, workloadrun_app
from nvcre.errors import UserError
from nvcre.kube.client import ApiError, KubeClient, TransportError, load_configuration
from nvcre.report import Report, build_report
from nvcre.report.collect import collect
from nvcre.report.render import RENDERERS, RESULT_EXIT, render

EXIT_CLUSTER = 1  # the cluster refused or could not be reached

KubeconfigOpt = typer.Option(None, "--kubeconfig", help="Kubeconfig file (default: $KUBECONFIG or ~/.kube/config).")
ContextOpt = typer.Option(None, "--context", help="Kubeconfig context.")
OutputOpt = typer.Option("text", "--output", "-o", help=f"Report format: {', '.join(RENDERERS)}.")
ResultsFileOpt = typer.Option(None, "--results-file", help="Also write the JSON report (schema nvcre.report/v1) here.")
JunitFileOpt = typer.Option(None, "--junit-file", help="Also write JUnit XML here (a testsuite per category).")
HtmlFileOpt = typer.Option(None, "--html-file", help="Also write the self-contained HTML report here.")


def connect(kubeconfig: str | None, context: str | None) -> KubeClient:
    """A client for the user's cluster, named so audit logs show nvcrectl."""
    return KubeClient(load_configuration(kubeconfig, context), user_agent="nvcrectl")


@contextlib.contextmanager
def cluster_errors() -> Iterator[None]:
    """Turn API refusals and unreachable servers into one readable line, not a traceback."""
    try:
        yield
    except ApiError as err:
        hint = " (your kubeconfig's user lacks that permission)" if err.forbidden else ""
        raise UserError(f"the API server refused: {err.status} {err.reason}: {err.message}{hint}", exit_code=EXIT_CLUSTER) from None
    except TransportError as err:
        raise UserError(f"cannot reach the API server: {err}", exit_code=EXIT_CLUSTER) from None


def check_output_format(output: str) -> None:
    if output not in RENDERERS:
        raise UserError(f"-o/--output: unknown format {output!r}; choose one of {', '.join(RENDERERS)}")


def write_report_files(report: Report, results_file: Path | None, junit_file: Path | None, html_file: Path | None) -> None:
    """Write the requested files; a file that cannot be written fails the command."""
    for path, fmt in ((results_file, "json"), (junit_file, "junit"), (html_file, "html")):
        if path is None:
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(report, fmt), encoding="utf-8")
        except OSError as err:
            raise UserError(f"cannot write {fmt} report to {path}: {err.strerror or err}", exit_code=EXIT_CLUSTER) from None
        print(f"wrote {fmt} report: {path}", file=sys.stderr)


def emit(report: Report, output: str, results_file: Path | None, junit_file: Path | None, html_file: Path | None) -> int:
    """Print the report, write the files, return the exit code its result maps to."""
    sys.stdout.write(render(report, output))
    sys.stdout.flush()
    write_report_files(report, results_file, junit_file, html_file)
    return RESULT_EXIT[report.result]


def fetch_report(client: KubeClient, kind: str, name: str, namespace: str) -> Report:
    return build_report(collect(client, kind, name, namespace))


def _report_command(kind: str, name: str, namespace: str, output: str, results_file, junit_file, html_file, kubeconfig, context) -> None:
    check_output_format(output)
    with cluster_errors():
        report = fetch_report(connect(kubeconfig, context), kind, name, namespace)
    code = emit(report, output, results_file, junit_file, html_file)
    if code:
        raise typer.Exit(code)


@certification_app.command("report")
def certification_report(
    name: str = typer.Argument(..., help="The Certification's name."),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Its namespace (`certification run` makes nvcrectl-<timestamp>)."),
    output: str = OutputOpt,
    results_file: Optional[Path] = ResultsFileOpt,
    junit_file: Optional[Path] = JunitFileOpt,
    html_file: Optional[Path] = HtmlFileOpt,
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Print a Certification's report. Exit 0 PASSED or INCOMPLETE, 1 FAILED, 3 still RUNNING."""
    _report_command("Certification", name, namespace, output, results_file, junit_file, html_file, kubeconfig, context)


@workloadrun_app.command("report")
def workloadrun_report(
    name: str = typer.Argument(..., help="The WorkloadRun's name."),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Its namespace."),
    output: str = OutputOpt,
    results_file: Optional[Path] = ResultsFileOpt,
    junit_file: Optional[Path] = JunitFileOpt,
    html_file: Optional[Path] = HtmlFileOpt,
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Print a WorkloadRun's report. Exit 0 passed, 1 failed, 3 still running."""
    _report_command("WorkloadRun", name, namespace, output, results_file, junit_file, html_file, kubeconfig, context)
