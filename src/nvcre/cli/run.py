"""`nvcrectl certification run`, `workloadrun run` and `certification cleanup`.

A run gets its own namespace (``nvcrectl-<timestamp>``) so its workloads, logs and
Events are easy to find and remove. With ``--wait`` the command shows live progress
per category and then the same report ``certification report`` prints.
Exit codes: 0 PASSED, 1 FAILED, 2 usage error, 3 cluster unreachable, 4 INCOMPLETE
or not judged, 5 still running when the wait ended.
"""

from __future__ import annotations

import copy
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from nvcre import API_GROUP_VERSION
from nvcre.cli.apps import certification_app, workloadrun_app
from nvcre.cli.output import info
from nvcre.cli.rbac import DEFAULT_CONTROLLER_NAMESPACE, DEFAULT_RELEASE, run_access_binding
from nvcre.cli.report import (
    ContextOpt,
    HtmlFileOpt,
    JunitFileOpt,
    KubeconfigOpt,
    OutputOpt,
    ResultsFileOpt,
    WideOpt,
    check_output_format,
    cluster_errors,
    connect,
    emit,
    fetch_report,
)
from nvcre.errors import EXIT_TIMEOUT, UserError
from nvcre.objpath import dig

if TYPE_CHECKING:  # pragma: no cover
    from nvcre.cli.run_lifecycle import Lifecycle
    from nvcre.kube.client import KubeClient
    from nvcre.report.model import Report

MANAGED_BY = "app.kubernetes.io/managed-by"
RUN_LABEL = "nvcre.nvidia.com/run"
MIN_DERIVED_TIMEOUT = 30 * 60  # seconds; a derived wait is never shorter
TIMEOUT_FACTOR = 1.5
POLL_SECONDS = 2.0
EXIT_STILL_RUNNING = EXIT_TIMEOUT  # the wait ended before the run did
NO_REPORT_YET = ("junit", "markdown", "html")  # formats of a report: they need --wait


# ---------------------------------------------------------------- pure helpers


def parse_timeout(text: str, flag: str = "--timeout") -> float:
    """A wait bound given by the user ("90s", "45m", "1h30m"); at least one second."""
    from nvcre.api.common import parse_duration

    try:
        seconds = parse_duration(text.strip())
    except ValueError:
        raise UserError(f"{flag}: {text!r} is not a duration; write e.g. 90s, 45m or 1h30m") from None
    if seconds < 1:
        raise UserError(f"{flag}: {text!r} is below 1s")
    return float(seconds)


def parse_categories(values: list[str]) -> list[tuple[str, str]]:
    """``domain/variant`` pairs, each checked against the catalog (aliases resolved)."""
    from nvcre.catalog.data import load_catalog

    catalog = load_catalog()
    known = ", ".join(e.key for e in catalog.sorted_entries())
    pairs = []
    for value in values:
        domain, sep, variant = value.strip().partition("/")
        if not sep or not domain or not variant:
            raise UserError(f"--category {value!r}: expected DOMAIN/VARIANT, e.g. communication/nccl-all-reduce")
        entry = catalog.lookup(domain, variant)
        if entry is None:
            raise UserError(f"--category {value!r}: unknown category; known: {known}")
        pairs.append((entry.domain, entry.variant))
    return pairs


def check_catalog(cert_spec: dict, source: str) -> None:
    """Every category of a manifest exists in the catalog (else the run would only fail
    later, in the cluster): the field, the value and what is allowed."""
    from nvcre.catalog.data import load_catalog

    catalog = load_catalog()
    for i, cat in enumerate(cert_spec.get("categories") or []):
        domain, variant = cat.get("domain", ""), cat.get("variant", "")
        if catalog.lookup(domain, variant) is None:
            known = ", ".join(e.key for e in catalog.sorted_entries())
            raise UserError(f"{source}: spec.categories[{i}]: unknown category {domain}/{variant}; known: {known}")


def derived_timeout(cert_spec: dict) -> float:
    """How long --wait waits when --timeout is omitted (see ``derived_wait``)."""
    return derived_wait(cert_spec)[0]


def derived_wait(cert_spec: dict) -> tuple[float, str]:
    """How long --wait waits when --timeout is omitted, and why, in words.

    Categories run one after another, so their budgets add up: each category's
    timeoutPerJob (its option, the spec's, else the catalog's; the diagnose budget for
    testScale diagnose) times its repeatCount, the sum times 1.5 for scheduling and
    measurement, and never less than 30 minutes.
    """
    from nvcre.api.common import parse_duration
    from nvcre.catalog.data import load_catalog

    catalog = load_catalog()
    total = 0.0
    terms: list[str] = []
    for cat in cert_spec.get("categories") or []:
        options = cat.get("options") or {}
        entry = catalog.lookup(cat.get("domain", ""), cat.get("variant", ""))
        defaults = (entry.data.get("defaults") or {}) if entry else {}
        scale = options.get("testScale") or cert_spec.get("testScale") or defaults.get("testScale")
        budget = options.get("timeoutPerJob") or cert_spec.get("timeoutPerJob")
        if not budget:
            budget = defaults.get("timeoutPerJobDiagnose") if scale == "diagnose" else None
            budget = budget or defaults.get("timeoutPerJob") or "1h"
        repeat = options.get("repeatCount") or cert_spec.get("repeatCount") or 1
        total += parse_duration(budget) * int(repeat)
        terms.append(f"{human_wait(parse_duration(budget))}" + (f" x {repeat} repeats" if int(repeat) > 1 else ""))
    wait = max(MIN_DERIVED_TIMEOUT, total * TIMEOUT_FACTOR)
    return wait, explain_wait(terms, total, wait)


def explain_wait(terms: list[str], total: float, wait: float) -> str:
    """"(1h + 1h30m timeoutPerJob) x 1.5 for scheduling; override with --timeout"."""
    n = len(terms)
    cats = f"{n} categor{'y' if n == 1 else 'ies'}"
    if wait > total * TIMEOUT_FACTOR:
        why = f"the {human_wait(MIN_DERIVED_TIMEOUT)} minimum ({cats} budget {human_wait(total)})"
    else:
        why = f"{cats}: ({' + '.join(terms)} timeoutPerJob) x {TIMEOUT_FACTOR:g} for scheduling and measurement"
    return f"{why}; override with --timeout"


def run_name(now: datetime | None = None) -> str:
    """nvcrectl-YYYYmmdd-HHMMSS (UTC): sortable, and a valid namespace name."""
    return (now or datetime.now(timezone.utc)).strftime("nvcrectl-%Y%m%d-%H%M%S")


def human_wait(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else (f"{minutes}m{secs:02d}s" if minutes else f"{secs}s")


# ---------------------------------------------------------------- cluster side


def _ensure_namespace(client: KubeClient, namespace: str, run: str) -> bool:
    """Create the run namespace (labelled as ours); False when it already existed."""
    body = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {MANAGED_BY: "nvcrectl", RUN_LABEL: run}},
    }
    _, created = client.create(body)
    return created


def _grant_run_access(client: KubeClient, namespace: str, release: str, controller_namespace: str) -> str:
    """--grant-run-access: bind the controller's run role in the namespace (what
    rbac.scope=namespaced needs). Asked for and refused is an error, not a warning."""
    from nvcre.kube.client import ApiError

    try:
        _, created = client.create(run_access_binding(namespace, release, controller_namespace), namespace)
    except ApiError as err:
        if err.forbidden:
            raise UserError(
                f"--grant-run-access: you may not create the RoleBinding in {namespace} ({err.reason}); ask an admin "
                f"to apply `nvcrectl rbac print --namespace {namespace}`, then run again without --grant-run-access"
            ) from None
        raise
    binding = run_access_binding(namespace, release, controller_namespace)["metadata"]["name"]
    return f"rolebinding/{binding} {'created' if created else 'exists'} (--grant-run-access)"


def _run_access_hint(client: KubeClient, namespace: str, release: str, controller_namespace: str) -> str:
    """Without --grant-run-access: a note when the namespace has no run-role binding (the
    chart's default rbac.scope=namespaced needs one); nothing when it has one or we may not look."""
    from nvcre.kube.client import ApiError

    binding = run_access_binding(namespace, release, controller_namespace)
    try:
        if client.get(binding["apiVersion"], "RoleBinding", binding["metadata"]["name"], namespace) is not None:
            return ""
    except ApiError:
        return ""
    return (f"note: no RoleBinding {binding['metadata']['name']} in {namespace}: under rbac.scope=namespaced (the chart's "
            f"default) the controller cannot run workloads here; add --grant-run-access, or have an admin apply "
            f"`nvcrectl rbac print --namespace {namespace}`")


def _create(client: KubeClient, obj: dict, namespace: str) -> None:
    _, created = client.create(obj, namespace)
    if not created:
        kind, name = obj["kind"], obj["metadata"]["name"]
        raise UserError(f"{kind.lower()} {name!r} already exists in namespace {namespace!r}; pick another --name")


def _load_one(file: Path, kind: str) -> dict:
    """The one object of ``kind`` in a manifest, as a body to create (validated, no status)."""
    from nvcre.api.load import load_file

    objects = [o for o in load_file(file) if getattr(o, "kind", None) == kind]
    if len(objects) != 1:
        raise UserError(f"{file}: expected exactly one {kind}, found {len(objects)}")
    body = objects[0].model_dump(by_alias=True, exclude_none=True, mode="json")
    body.pop("status", None)
    return body


def _submit(obj: dict, namespace: str, *, release: str, controller_namespace: str,
            kubeconfig: str | None, context: str | None, wait: bool, output: str,
            before: tuple[dict, ...] = (), grant: bool = False, cleanup: bool = False) -> KubeClient:
    """Create the run namespace, let the controller into it, create the run object, and
    say where to watch it; the client is returned for the wait.

    Progress and hints go to stderr. Without --wait the created object is the
    command's result, on stdout in the chosen format; with --wait stdout is the report's.
    With ``cleanup`` (--cleanup), a run object that cannot be created takes back the
    namespace and pull Secret made for it: nothing of a refused run is left behind.
    """
    kind, name = obj["kind"].lower(), obj["metadata"]["name"]
    with cluster_errors():
        client = connect(kubeconfig, context)
        created = _ensure_namespace(client, namespace, name)
        info(f"namespace/{namespace} {'created' if created else 'exists'}")
        made: list[dict] = []
        try:
            if grant:
                info(_grant_run_access(client, namespace, release, controller_namespace))
            else:
                hint = _run_access_hint(client, namespace, release, controller_namespace)
                if hint:
                    info(hint)
            for extra in before:  # e.g. the workload registry's pull Secret
                _create(client, extra, namespace)
                made.append(extra)
                info(f"{extra['kind'].lower()}/{extra['metadata']['name']} created")
            _create(client, obj, namespace)
        except BaseException:
            if cleanup:
                _undo_submit(client, namespace, created, made)
            raise
    ref = f"{kind}.nvcre.nvidia.com/{name}"
    if wait or output != "text":
        info(f"{ref} created in namespace {namespace}")
    if not wait:
        _print_created(obj, ref, namespace, output)
    info(f"  watch:  kubectl get {kind}s -n {namespace} -w")
    info(f"  report: nvcrectl {kind} report {name} -n {namespace}")
    return client


def _undo_submit(client: KubeClient, namespace: str, created_namespace: bool, made: list[dict]) -> None:
    """--cleanup when the run object was never created: delete the namespace this run made
    (its Secret goes with it), else only the objects it made in a namespace that was there.
    A failure here is a warning: the refusal that got us here is the error to report."""
    try:
        if created_namespace:
            client.delete("v1", "Namespace", namespace)
            info(f"[cleanup] namespace/{namespace} deleted (nvcrectl created it for this run, which was not created)")
            return
        for extra in made:
            client.delete(extra["apiVersion"], extra["kind"], extra["metadata"]["name"], namespace)
            info(f"[cleanup] {extra['kind'].lower()}/{extra['metadata']['name']} deleted (the run was not created)")
    except Exception as err:  # noqa: BLE001 - reported, never hides the refusal
        info(f"[cleanup] warning: could not remove what this run made in {namespace}: {err}")


def _print_created(obj: dict, ref: str, namespace: str, output: str) -> None:
    """The created object on stdout: a line (text), its name, or the object (json/yaml)."""
    if output == "text":
        sys.stdout.write(f"{ref} created in namespace {namespace}\n")
    elif output == "name":
        sys.stdout.write(ref + "\n")
    else:
        from nvcre.cli.output import write_document

        write_document(obj, output)
    sys.stdout.flush()


def _progress_lines(report: Report, elapsed: float) -> list[str]:
    lines = []
    for c in report.categories:
        groups = f"{c.groups_done}/{c.groups_total} groups" if c.groups_total else "no groups yet"
        lines.append(f"[{human_wait(elapsed):>7}] {c.key:<38} {c.status:<10} {groups}")
        if c.status_detail:
            lines.append(f"          Blocked: {c.status_detail}")
        if c.isolation and c.status == "Running":
            lines.append(f"          Isolation: {c.isolation}")
    return lines


def _progress_table(report: Report, elapsed: float, deadline: float):
    from rich.table import Table

    table = Table(title=f"{report.kind} {report.namespace}/{report.name} · {report.result} · elapsed {human_wait(elapsed)} of {human_wait(deadline)}")
    for column in ("Category", "Phase", "Groups", "Runtime", "Blocked"):
        table.add_column(column, overflow="fold")
    colors = {"Succeeded": "green", "Failed": "red", "Running": "cyan", "Pending": "dim"}
    for c in report.categories:
        table.add_row(
            c.key,
            f"[{colors.get(c.status, 'white')}]{c.status}[/]",
            f"{c.groups_done}/{c.groups_total}" if c.groups_total else "-",
            c.runtime or "-",
            c.status_detail or "",
        )
    return table


def wait_for(client: KubeClient, kind: str, name: str, namespace: str, timeout: float) -> tuple[Report, bool]:
    """Poll the run's report until it has a result or ``timeout`` passes; (report, finished).

    On a terminal a live table shows each category's phase, groups done of total,
    Blocked lines and elapsed time; otherwise a line is printed whenever one changes.
    """
    from nvcre.report import build_report
    from nvcre.report.collect import collect

    start = time.monotonic()
    interactive = sys.stderr.isatty()
    seen: set[str] = set()
    live = None
    if interactive:
        from rich.console import Console
        from rich.live import Live

        live = Live(console=Console(stderr=True), refresh_per_second=4, transient=False)
        live.start()
    try:
        while True:
            elapsed = time.monotonic() - start
            # running categories show their time so far; nodes are read once, for the final report
            report = build_report(collect(client, kind, name, namespace, with_nodes=False), now=datetime.now(timezone.utc))
            if live is not None:
                live.update(_progress_table(report, elapsed, timeout))
            else:
                for line in _progress_lines(report, elapsed):
                    key = line.split("]", 1)[-1]  # the elapsed time alone is no change
                    if key not in seen:
                        seen.add(key)
                        print(line, file=sys.stderr, flush=True)
            if report.result != "RUNNING":
                return report, True
            if elapsed >= timeout:
                return report, False
            time.sleep(min(POLL_SECONDS, max(0.1, timeout - elapsed)))
    finally:
        if live is not None:
            live.stop()


def _finish(
    client: KubeClient, kind: str, name: str, namespace: str, wait: bool, timeout: float, output: str, files: tuple,
    *, why: str = "", wide: bool = False, cleanup: bool = False,
) -> None:
    if not wait:
        return
    info(f"waiting up to {human_wait(timeout)} for {kind.lower()} {name}" + (f" ({why})" if why else "") + " ...")
    with cluster_errors():
        report, finished = wait_for(client, kind, name, namespace, timeout)
        report = fetch_report(client, kind, name, namespace)  # with node layout for the final render
    code = emit(report, output, *files, wide=wide)
    if not finished and cleanup:
        print(f"timed out after {human_wait(timeout)}; --cleanup removes the run now", file=sys.stderr)
        raise typer.Exit(EXIT_STILL_RUNNING)
    if not finished:
        stop = (
            f"nvcrectl certification cleanup {name} -n {namespace}"
            if kind == "Certification"
            else f"nvcrectl workloadrun cleanup {name} -n {namespace}"
        )
        print(
            f"timed out after {human_wait(timeout)}; the run keeps going.\n"
            f"  watch it:      kubectl get {kind.lower()}s -n {namespace} -w\n"
            f"  report again:  nvcrectl {kind.lower()} report {name} -n {namespace}\n"
            f"  stop it:       {stop}",
            file=sys.stderr,
        )
        raise typer.Exit(EXIT_STILL_RUNNING)
    if code:
        raise typer.Exit(code)


def _submit_and_finish(lifecycle: Lifecycle, obj: dict, namespace: str, *, release: str, controller_namespace: str,
                       kubeconfig: str | None, context: str | None, wait: bool, output: str, before: tuple[dict, ...],
                       grant: bool, timeout: float, files: tuple, why: str, wide: bool) -> None:
    """--setup, create the run, --wait for it, and --cleanup on every way out once anything was
    made (the run's exit code stands; cleanup problems are warnings)."""
    from nvcre.cli.run_lifecycle import SetupOutcome, run_cleanup, run_setup

    kind, name = obj["kind"], obj["metadata"]["name"]
    created, installed = False, SetupOutcome()
    try:
        if lifecycle.setup:
            installed = run_setup(lifecycle, release=release, namespace=controller_namespace, kubeconfig=kubeconfig,
                                  context=context)
        client = _submit(obj, namespace, release=release, controller_namespace=controller_namespace, kubeconfig=kubeconfig,
                         context=context, wait=wait, output=output, before=before, grant=grant,
                         cleanup=lifecycle.cleanup)
        created = True
        _finish(client, kind, name, namespace, wait, timeout, output, files, why=why, wide=wide, cleanup=lifecycle.cleanup)
    finally:
        if lifecycle.cleanup:
            run_cleanup(lifecycle, created=created, kind=kind, name=name, namespace=namespace, release=release,
                        controller_namespace=controller_namespace, kubeconfig=kubeconfig, context=context,
                        cleanup_run=cleanup_run, installed=installed)


def _check_files_need_wait(wait: bool, files: tuple, output: str = "text") -> None:
    if not wait and any(f is not None for f in files):
        raise UserError("--results-file, --junit-file and --html-file need --wait (there is no result to write yet)")
    if not wait and output in NO_REPORT_YET:
        raise UserError(f"-o {output} is a report format and needs --wait; without it use text, name, json or yaml")


# ---------------------------------------------------------------- commands

SetupOpt = typer.Option(False, "--setup", help="Install nvcre first (`setup init`: CRDs, controller, LogProfiles).")
CleanupOpt = typer.Option(False, "--cleanup", help="With --wait: after the report (or a failure or timeout), delete the "
                          "run and what it created, the namespace this run made, and after --setup what setup installed.")
ControllerImageOpt = typer.Option(None, "--controller-image", help="With --setup: the controller image to install "
                                  "(setup init --image).")
ControllerPullSecretOpt = typer.Option(None, "--controller-pull-secret", envvar="NVCRE_CONTROLLER_PULL_SECRET",
                                       help="With --setup: a registry token (e.g. a GitHub PAT for ghcr.io) to pull the "
                                       "controller image with; stored as Secret nvcrectl-controller-pull in the install "
                                       "namespace (or NVCRE_CONTROLLER_PULL_SECRET).")
GrantRunAccessOpt = typer.Option(False, "--grant-run-access", help="Create the RoleBinding that lets the controller run "
                                 "workloads in the run namespace (needed under rbac.scope=namespaced; "
                                 "see `nvcrectl rbac print`).")


@certification_app.command("run")
def certification_run(
    category: list[str] = typer.Option([], "--category", "-c", help="DOMAIN/VARIANT to certify; repeat for several."),
    cert_file: Optional[Path] = typer.Option(None, "--cert-file", "-f", help="A Certification manifest (YAML)."),
    name: Optional[str] = typer.Option(None, "--name", help="Certification name (default nvcrectl-<timestamp>)."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Run namespace (default: a new one named like the run)."),
    test_scale: Optional[str] = typer.Option(None, "--test-scale", help="With --category: intra-node, intra-rack, full-scale or diagnose."),
    wait: bool = typer.Option(False, "--wait", help="Show live progress, then the report."),
    timeout: Optional[str] = typer.Option(None, "--timeout", help="With --wait: how long to wait (e.g. 45m). Default: from the categories' budgets."),
    output: str = OutputOpt,
    wide: bool = WideOpt,
    results_file: Optional[Path] = ResultsFileOpt,
    junit_file: Optional[Path] = JunitFileOpt,
    html_file: Optional[Path] = HtmlFileOpt,
    release: str = typer.Option(DEFAULT_RELEASE, "--release", help="Helm release of nvcre (for the run-access RoleBinding)."),
    controller_namespace: str = typer.Option(DEFAULT_CONTROLLER_NAMESPACE, "--controller-namespace", help="Namespace nvcre runs in."),
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
    setup: bool = SetupOpt,
    cleanup: bool = CleanupOpt,
    controller_image: Optional[str] = ControllerImageOpt,
    controller_pull_secret: Optional[str] = ControllerPullSecretOpt,
    grant_run_access: bool = GrantRunAccessOpt,
    nodes_per_job: Optional[int] = typer.Option(None, "--nodes-per-job", help="Nodes per Job (spec.nodesPerJob)."),
    gpus_per_node: Optional[int] = typer.Option(None, "--gpus-per-node", help="GPUs per node (spec.gpusPerNode)."),
    enable_checkpoint: Optional[bool] = typer.Option(None, "--enable-checkpoint/--no-enable-checkpoint", help="Training checkpoints on a PVC (spec.enableCheckpoint)."),
    enable_mnnvl: Optional[bool] = typer.Option(None, "--enable-mnnvl/--no-enable-mnnvl", help="Multi-node NVLink (spec.enableMNNVL)."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Training steps, -1 unlimited (spec.maxSteps)."),
    stage: Optional[str] = typer.Option(None, "--stage", help="Readiness stage that derives thresholds from the shipped "
                                        "baselines: bring-up, burn-in, preproduction or production (spec.stage)."),
    regression_margin: Optional[float] = typer.Option(None, "--regression-margin", help="A drop of more than this fraction "
                                                      "below a node's own last pass is a Regression; in (0, 1), default "
                                                      "0.10 (spec.regressionMargin)."),
    exit_duration_mins: Optional[int] = typer.Option(None, "--exit-duration-mins", help="Training EXIT_DURATION_MINS (spec.exitDurationMins)."),
    startup_stall_timeout_seconds: Optional[int] = typer.Option(None, "--startup-stall-timeout-seconds", help="spec.startupStallTimeoutSeconds."),
    repeat_count: Optional[int] = typer.Option(None, "--repeat-count", help="Times each category runs (spec.repeatCount)."),
    max_restarts: Optional[int] = typer.Option(None, "--max-restarts", help="Checkpoint restarts allowed (spec.maxRestarts)."),
    storage_class: Optional[str] = typer.Option(None, "--storage-class", help="Checkpoint PVC storage class (spec.storageClassName)."),
    image: Optional[str] = typer.Option(None, "--image", help="Workload image for every category (spec.image)."),
    workload_registry: Optional[str] = typer.Option(None, "--workload-registry", help="Pull every workload image from this mirror, host[:port][/path] (spec.workloadRegistry)."),
    registry_username: Optional[str] = typer.Option(None, "--workload-registry-username", envvar="NVCRE_WORKLOAD_REGISTRY_USERNAME", help="Mirror user; with the password, nvcrectl creates the pull Secret nvcrectl-pull-<name>."),
    registry_password: Optional[str] = typer.Option(None, "--workload-registry-password", envvar="NVCRE_WORKLOAD_REGISTRY_PASSWORD", help="Mirror password (or NVCRE_WORKLOAD_REGISTRY_PASSWORD)."),
) -> None:
    """Create a Certification in a fresh namespace; with --wait, watch it and print its report."""
    from nvcre.cli.run_options import (
        OptionFlags, add_pull_secret, apply_option_flags, pull_secret, pull_secret_name, registry_credentials,
    )

    flags = OptionFlags(nodes_per_job=nodes_per_job, gpus_per_node=gpus_per_node, enable_checkpoint=enable_checkpoint,
                        enable_mnnvl=enable_mnnvl, max_steps=max_steps, exit_duration_mins=exit_duration_mins,
                        startup_stall_timeout_seconds=startup_stall_timeout_seconds, repeat_count=repeat_count,
                        max_restarts=max_restarts, storage_class=storage_class, image=image,
                        workload_registry=workload_registry, stage=stage, regression_margin=regression_margin)
    from nvcre.cli.run_lifecycle import check_lifecycle

    credentials = registry_credentials(workload_registry, registry_username, registry_password)
    files = (results_file, junit_file, html_file)
    if setup and image and not controller_image:
        raise UserError("--image is the workload image (spec.image) in nvcre; the controller image --setup installs is "
                        "--controller-image (the reference's --image): give --controller-image, or drop --image")
    lifecycle = check_lifecycle(setup=setup, cleanup=cleanup, wait=wait, controller_image=controller_image,
                                controller_token=controller_pull_secret)
    if bool(category) == bool(cert_file):
        raise UserError("give either --category (one or more) or --cert-file, not both and not neither")
    check_output_format(output)
    _check_files_need_wait(wait, files, output)
    if cert_file is not None:
        if test_scale:
            raise UserError("--test-scale goes with --category; in a --cert-file set spec.testScale instead")
        cert = _load_one(cert_file, "Certification")
        check_catalog(cert["spec"], str(cert_file))
    else:
        pairs = parse_categories(category)
        spec: dict = {
            "target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
            "categories": [{"domain": d, "variant": v} for d, v in pairs],
        }
        if test_scale:
            spec["testScale"] = test_scale
        cert = {"apiVersion": API_GROUP_VERSION, "kind": "Certification", "metadata": {"name": name or run_name()}, "spec": spec}
        from nvcre.api.load import parse_object

        parse_object(cert, source="--category")  # the same validation a manifest gets
    if name:
        cert["metadata"]["name"] = name
    cert["metadata"]["name"] = cert["metadata"].get("name") or run_name()
    before: tuple[dict, ...] = ()
    if apply_option_flags(cert["spec"], flags) or credentials:
        if credentials:
            add_pull_secret(cert["spec"], pull_secret_name(cert["metadata"]["name"]))
        from nvcre.api.load import parse_object

        parse_object(cert, source="the command-line flags")  # a bad flag value is named like a bad field
    wait_seconds, why = (parse_timeout(timeout), "--timeout") if timeout else derived_wait(cert["spec"])
    if name:
        cert["metadata"]["name"] = name
    cname = cert["metadata"].get("name") or run_name()
    cert["metadata"]["name"] = cname
    # a manifest's own namespace is kept; otherwise the run gets a fresh one
    ns = namespace or cert["metadata"].get("namespace") or (cname if cname.startswith("nvcrectl-") else run_name())
    cert["metadata"]["namespace"] = ns
    cert["metadata"].setdefault("labels", {})[MANAGED_BY] = "nvcrectl"
    if credentials:
        before = (pull_secret(cname, ns, workload_registry or "", *credentials),)

    _submit_and_finish(lifecycle, cert, ns, release=release, controller_namespace=controller_namespace,
                       kubeconfig=kubeconfig, context=context, wait=wait, output=output, before=before,
                       grant=grant_run_access, timeout=wait_seconds, files=files, why=why, wide=wide)


WORKLOADRUN_DEFAULT_TIMEOUT = "30m"  # the reference's --timeout default for workloadrun run
WORKLOADRUN_DEFAULT_NAMESPACE = "default"  # the reference's: -n, else the manifest's, else default


@workloadrun_app.command("run")
def workloadrun_run(
    file: Path = typer.Argument(..., help="A WorkloadRun manifest (YAML)."),
    name: Optional[str] = typer.Option(None, "--name", help="Override metadata.name."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Run namespace (default: the manifest's, else default)."),
    wait: bool = typer.Option(False, "--wait", help="Show live progress, then the report."),
    timeout: str = typer.Option(WORKLOADRUN_DEFAULT_TIMEOUT, "--timeout", help="With --wait: how long to wait (at least 1s); "
                                "on timeout the partial report is printed and the run keeps going."),
    node_list: Optional[str] = typer.Option(None, "--node-list", help="Comma-separated node names (target.nodeNames); "
                                            "numNodes is lowered to fit."),
    topology_domain: Optional[str] = typer.Option(None, "--topology-domain", help="Run on one topology domain (a value "
                                                  "of the topology label); numNodes becomes its node count."),
    topology_key: Optional[str] = typer.Option(None, "--topology-key", help="The label --topology-domain is a value of "
                                               "(default: the platform's; AWS, GCP and Azure have one)."),
    test_scale: Optional[str] = typer.Option(None, "--test-scale", help="intra-node, intra-rack or full-scale (orchestration.testScale)."),
    workload_registry: Optional[str] = typer.Option(None, "--workload-registry", help="Pull the run's image (and its init "
                                                    "containers') from this mirror, host[:port][/path]."),
    registry_username: Optional[str] = typer.Option(None, "--workload-registry-username", envvar="NVCRE_WORKLOAD_REGISTRY_USERNAME",
                                                    help="Mirror user; with the password, nvcrectl creates the pull Secret nvcrectl-pull-<name>."),
    registry_password: Optional[str] = typer.Option(None, "--workload-registry-password", envvar="NVCRE_WORKLOAD_REGISTRY_PASSWORD",
                                                    help="Mirror password (or NVCRE_WORKLOAD_REGISTRY_PASSWORD)."),
    output: str = OutputOpt,
    wide: bool = WideOpt,
    results_file: Optional[Path] = ResultsFileOpt,
    junit_file: Optional[Path] = JunitFileOpt,
    html_file: Optional[Path] = HtmlFileOpt,
    release: str = typer.Option(DEFAULT_RELEASE, "--release", help="Helm release of nvcre."),
    controller_namespace: str = typer.Option(DEFAULT_CONTROLLER_NAMESPACE, "--controller-namespace", help="Namespace nvcre runs in."),
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
    setup: bool = SetupOpt,
    cleanup: bool = CleanupOpt,
    controller_image: Optional[str] = typer.Option(None, "--image", "--controller-image", help=ControllerImageOpt.help),
    controller_pull_secret: Optional[str] = ControllerPullSecretOpt,
    grant_run_access: bool = GrantRunAccessOpt,
) -> None:
    """Create a WorkloadRun (an ad-hoc workload without the catalog); with --wait, watch it and print its report."""
    from nvcre.api.load import parse_object
    from nvcre.cli.run_options import registry_credentials
    from nvcre.cli.run_lifecycle import check_lifecycle
    from nvcre.cli.workloadrun_ops import apply_registry, apply_run_flags, fit_to_target

    lifecycle = check_lifecycle(setup=setup, cleanup=cleanup, wait=wait, controller_image=controller_image,
                                controller_token=controller_pull_secret, image_flag="--image")
    credentials = registry_credentials(workload_registry, registry_username, registry_password)
    files = (results_file, junit_file, html_file)
    check_output_format(output)
    _check_files_need_wait(wait, files, output)
    wait_seconds = parse_timeout(timeout) if wait else 0.0
    run = _load_one(file, "WorkloadRun")
    if name:
        run["metadata"]["name"] = name
    if not run["metadata"].get("name"):
        run["metadata"]["name"] = run_name()
    if apply_run_flags(run, node_list=node_list, topology_domain=topology_domain, topology_key=topology_key,
                       test_scale=test_scale):
        probe = copy.deepcopy(run)
        for e in dig(probe, "spec", "target", "matchExpressions") or []:
            e["key"] = e["key"] or "topology.kubernetes.io/zone"  # the automatic key is found on the cluster
        parse_object(probe, source="the command-line flags")  # a bad flag value is named like a bad field
    ns = namespace or run["metadata"].get("namespace") or WORKLOADRUN_DEFAULT_NAMESPACE
    run["metadata"]["namespace"] = ns
    secret = apply_registry(run, workload_registry, credentials)
    if workload_registry is not None:
        parse_object(run, source="the command-line flags")
    if node_list is not None or topology_domain is not None:
        with cluster_errors():
            info(fit_to_target(connect(kubeconfig, context), run, topology_domain=topology_domain, node_list=node_list))
    _submit_and_finish(lifecycle, run, ns, release=release, controller_namespace=controller_namespace,
                       kubeconfig=kubeconfig, context=context, wait=wait, output=output,
                       before=(secret,) if secret else (), grant=grant_run_access, timeout=wait_seconds,
                       files=files, why="--timeout", wide=wide)


def cleanup_run(kind: str, name: str, namespace: str, keep_namespace: bool, timeout: str,
                kubeconfig: str | None, context: str | None) -> None:
    """Delete a run object with foreground propagation, wait until it is gone, and remove
    the namespace `run` made for it (labelled as ours and named after this run)."""
    from nvcre.report.collect import not_found_message

    wait_seconds = parse_timeout(timeout)
    lower = kind.lower()
    with cluster_errors():
        client = connect(kubeconfig, context)
        obj = client.get(API_GROUP_VERSION, kind, name, namespace)
        if obj is None:
            raise UserError(not_found_message(client, kind, name, namespace))
        client.delete(API_GROUP_VERSION, kind, name, namespace, propagation="Foreground")
        children = "Workflows, Jobs and workloads" if kind == "Certification" else "Jobs and workloads"
        print(f"{lower}.nvcre.nvidia.com/{name} deleted (its {children} go with it)")
        ns = client.get("v1", "Namespace", namespace) or {}
        labels = (ns.get("metadata") or {}).get("labels") or {}
        ours = labels.get(MANAGED_BY) == "nvcrectl" and labels.get(RUN_LABEL) == name
        deadline = time.monotonic() + wait_seconds
        while client.get(API_GROUP_VERSION, kind, name, namespace) is not None:
            if time.monotonic() > deadline:
                raise UserError(
                    f"{lower} {name!r} is still being deleted after {timeout}; check its finalizers: "
                    f"kubectl get {lower} {name} -n {namespace} -o yaml",
                    exit_code=EXIT_TIMEOUT,
                )
            time.sleep(0.5)
        if ours and not keep_namespace:
            client.delete("v1", "Namespace", namespace)
            print(f"namespace/{namespace} deleted (nvcrectl created it for this run)")
        elif ours:
            print(f"namespace/{namespace} kept (--keep-namespace)")


@certification_app.command("cleanup")
def certification_cleanup(
    name: str = typer.Argument(..., help="The Certification to remove."),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Its namespace."),
    keep_namespace: bool = typer.Option(False, "--keep-namespace", help="Keep the run namespace even if nvcrectl created it."),
    timeout: str = typer.Option("2m", "--timeout", help="How long to wait for the deletion to finish."),
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Delete a Certification and what it created (Workflows, Jobs, workloads), and the
    namespace `certification run` made for it."""
    cleanup_run("Certification", name, namespace, keep_namespace, timeout, kubeconfig, context)


@workloadrun_app.command("cleanup")
def workloadrun_cleanup(
    name: str = typer.Argument(..., help="The WorkloadRun to remove."),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Its namespace."),
    keep_namespace: bool = typer.Option(False, "--keep-namespace", help="Keep the run namespace even if nvcrectl created it."),
    timeout: str = typer.Option("2m", "--timeout", help="How long to wait for the deletion to finish."),
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Delete a WorkloadRun and what it created (Jobs, workloads, pods), and the namespace
    `workloadrun run` made for it. Read its report first: the pods' logs go with it."""
    cleanup_run("WorkloadRun", name, namespace, keep_namespace, timeout, kubeconfig, context)
