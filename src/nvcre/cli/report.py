"""`nvcrectl certification report` and `workloadrun report`, plus the report plumbing
the run commands share (formats, writing report files, exit codes).

Module-level imports stay light (typer and the standard library): the report model,
the renderers and the Kubernetes client load when a command runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from nvcre.cli.apps import certification_app, workloadrun_app
from nvcre.cli.connection import cluster_errors, connect  # noqa: F401 - re-exported for other commands
from nvcre.cli.output import REPORT_FORMATS, check_format, info, terminal_width
from nvcre.errors import EXIT_USAGE, UserError

if TYPE_CHECKING:  # pragma: no cover
    from nvcre.kube.client import KubeClient
    from nvcre.report import Report

REPORT_OUTPUTS = REPORT_FORMATS + ("name",)

KubeconfigOpt = typer.Option(None, "--kubeconfig", help="Kubeconfig file (default: $KUBECONFIG or ~/.kube/config).")
ContextOpt = typer.Option(None, "--context", help="Kubeconfig context.")
OutputOpt = typer.Option(
    "text", "--output", "-o",
    help=f"Report format: {', '.join(REPORT_FORMATS)}; name prints node/<name> per failed node. "
    "Machine formats put only the document on stdout.",
)
WideOpt = typer.Option(False, "--wide", help="Text report: no width limit, nothing cut.")
ResultsFileOpt = typer.Option(None, "--results-file", help="Also write the JSON report (schema nvcre.report/v1) here.")
JunitFileOpt = typer.Option(None, "--junit-file", help="Also write JUnit XML here (a testsuite per category).")
HtmlFileOpt = typer.Option(None, "--html-file", help="Also write the self-contained HTML report here.")


def check_output_format(output: str) -> None:
    check_format(output, REPORT_OUTPUTS)


def text_width(wide: bool) -> int | None:
    """The text report's width: the terminal's (at least the reference 66), none with --wide."""
    if wide:
        return None
    return max(66, terminal_width(default=80))


def write_report_files(report: Report, results_file: Path | None, junit_file: Path | None, html_file: Path | None) -> None:
    """Write the requested files; a file that cannot be written is bad input (exit 2)."""
    from nvcre.report.render import render

    for path, fmt in ((results_file, "json"), (junit_file, "junit"), (html_file, "html")):
        if path is None:
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(render(report, fmt), encoding="utf-8")
        except OSError as err:
            raise UserError(f"cannot write {fmt} report to {path}: {err.strerror or err}", exit_code=EXIT_USAGE) from None
        info(f"wrote {fmt} report: {path}")


def emit(report: Report, output: str, results_file: Path | None, junit_file: Path | None, html_file: Path | None,
         *, wide: bool = False) -> int:
    """Print the report, write the files, return the exit code its result maps to."""
    from nvcre.report.render import RESULT_EXIT, render

    if output == "name":
        text = "".join(f"node/{n}\n" for n in report.failed_nodes)
    elif output == "text":
        from nvcre.report.text import render_text

        text = render_text(report, width=text_width(wide))
    else:
        text = render(report, output)
    sys.stdout.write(text)
    sys.stdout.flush()
    write_report_files(report, results_file, junit_file, html_file)
    return RESULT_EXIT[report.result]


def fetch_report(client: KubeClient, kind: str, name: str, namespace: str) -> Report:
    from nvcre.report import build_report
    from nvcre.report.collect import collect

    return build_report(collect(client, kind, name, namespace))


def _report_command(kind: str, name: str, namespace: str, output: str, wide: bool, results_file, junit_file, html_file,
                    kubeconfig, context) -> None:
    check_output_format(output)
    with cluster_errors():
        report = fetch_report(connect(kubeconfig, context), kind, name, namespace)
    code = emit(report, output, results_file, junit_file, html_file, wide=wide)
    if code:
        raise typer.Exit(code)


@certification_app.command("report")
def certification_report(
    name: str = typer.Argument(..., help="The Certification's name."),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Its namespace (`certification run` makes nvcrectl-<timestamp>)."),
    output: str = OutputOpt,
    wide: bool = WideOpt,
    results_file: Optional[Path] = ResultsFileOpt,
    junit_file: Optional[Path] = JunitFileOpt,
    html_file: Optional[Path] = HtmlFileOpt,
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Print a Certification's report. Exit 0 PASSED, 1 FAILED, 4 INCOMPLETE or still running."""
    _report_command("Certification", name, namespace, output, wide, results_file, junit_file, html_file, kubeconfig, context)


@workloadrun_app.command("report")
def workloadrun_report(
    name: str = typer.Argument(..., help="The WorkloadRun's name."),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Its namespace."),
    output: str = OutputOpt,
    wide: bool = WideOpt,
    results_file: Optional[Path] = ResultsFileOpt,
    junit_file: Optional[Path] = JunitFileOpt,
    html_file: Optional[Path] = HtmlFileOpt,
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Print a WorkloadRun's report. Exit 0 passed, 1 failed, 4 incomplete or still running."""
    _report_command("WorkloadRun", name, namespace, output, wide, results_file, junit_file, html_file, kubeconfig, context)
