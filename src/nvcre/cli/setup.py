"""`nvcrectl setup init | status | reset`: install, inspect and remove nvcre with Helm.

Chart values given with ``--values``/``--set``/``--set-json`` are kept across runs.
They are stored where Helm already stores them: in the installed release (Helm's
release Secret in the install namespace). Each ``init`` reads them back with
``helm get values`` and passes them first, so a later run only changes what it sets.
The controller image is the exception: it is worked out on every run (``--image`` or
the chart's appVersion), so an old pin never holds the controller on an old image.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from nvcre import API_GROUP
from nvcre.cli.apps import setup_app
from nvcre.cli.chart_source import (
    DEFAULT_TRAINER_CHART_REF, DEFAULT_TRAINER_CHART_VERSION, check_chart_ref, check_trainer_chart_ref, local_chart,
    trainer_chart,
)
from nvcre.cli.rbac import release_fullname
from nvcre.cli.report import ContextOpt, KubeconfigOpt, cluster_errors, connect
from nvcre.errors import UserError

if TYPE_CHECKING:  # pragma: no cover - the client loads when a command connects
    from nvcre.kube.client import KubeClient

INIT_PHASES = ("deps", "helm")
RESET_PHASES = ("cr", "helm", "deps")
KEPT_ACROSS_RESET = ("rbac.scope", "rbac.runNamespaces")
# Reset keeps these CRDs, so their objects survive, as the reference's reset retains
# ReportExport resources: the delivery records (and policies) outlive a reinstall.
KEPT_BY_RESET = ("reportexports", "reportexportpolicies")
NVCRE_KINDS = ("Certification", "WorkloadRun", "Workflow", "Job", "BandwidthMeasurement", "GoodputMeasurement")
_SET_KEY = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-\[\]\\]*$")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_IMAGE = re.compile(r"^(?P<repo>[^@\s]+?)(?::(?P<tag>[\w][\w.\-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?$")
DCGM_SERVICE = ("gpu-operator", "nvidia-dcgm")

NamespaceOpt = typer.Option("nvcre", "--namespace", "-n", help="Namespace nvcre is installed in.")
ReleaseOpt = typer.Option("nvcre", "--release", help="Helm release name.")
HelmOpt = typer.Option(None, "--helm", help="helm binary (default: $NVCRE_HELM, helm on PATH, or the test bed's).")
AutoApproveOpt = typer.Option(False, "--auto-approve", "-y", help="Do not ask for confirmation.")


# ---------------------------------------------------------------- pure checks


def parse_phases(values: list[str], allowed: tuple[str, ...], command: str) -> set[str]:
    """--skip-phases as given (repeated or comma-separated); unknown names are refused."""
    phases = {p.strip() for v in values for p in v.split(",") if p.strip()}
    unknown = sorted(phases - set(allowed))
    if unknown:
        raise UserError(f"--skip-phases: unknown phase {', '.join(map(repr, unknown))} for {command}; accepted: {', '.join(allowed)}")
    return phases


def check_set(values: list[str]) -> list[str]:
    """KEY=VALUE pairs in Helm's syntax (a=1,b=2 sets two keys; a={x,y} one list); keys checked."""
    for item in values:
        for part in _split_set(item) or [item]:
            key, sep, _ = part.partition("=")
            if not sep or not _SET_KEY.match(key):
                raise UserError(f"--set {item!r}: expected KEY=VALUE with a key like controller.resources.limits.memory")
    return values


def _split_set(item: str) -> list[str]:
    """Helm splits --set on commas outside braces: a=1,b=2 sets two keys; a={x,y} one list."""
    parts, depth, current = [], 0, ""
    for ch in item:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p for p in parts if p]


def check_set_json(values: list[str]) -> list[str]:
    for item in values:
        key, sep, raw = item.partition("=")
        if not sep or not _SET_KEY.match(key):
            raise UserError(f"--set-json {item!r}: expected KEY=JSON, e.g. controller.tolerations=[]")
        try:
            json.loads(raw)
        except ValueError as err:
            raise UserError(f"--set-json {key}: the value is not JSON ({err})") from None
    return values


def check_values_files(files: list[str], auto_approve: bool) -> list[str]:
    import yaml
    for f in files:
        if re.match(r"^[a-z]+://", f):
            raise UserError(f"--values {f}: URLs are not accepted; download the file and pass its path")
        if f == "-":
            if not auto_approve:
                raise UserError("--values -: reading values from stdin needs --auto-approve (stdin cannot also answer the prompt)")
            continue
        if not Path(f).is_file():
            raise UserError(f"--values {f}: no such file")
        try:
            data = yaml.safe_load(Path(f).read_text())
        except yaml.YAMLError as err:
            raise UserError(f"--values {f}: not valid YAML: {str(err).splitlines()[0]}") from None
        if data is not None and not isinstance(data, dict):
            raise UserError(f"--values {f}: expected a mapping of chart values, got {type(data).__name__}")
    return files


def image_sets(image: str | None, sets: list[str], set_json: list[str], files: list[str]) -> list[str]:
    """--image as chart values; refused beside values that also set the image."""
    import yaml
    if not image:
        return []
    touching = [p.split("=", 1)[0] for s in sets for p in _split_set(s) if p.startswith("image.")]
    touching += [s.split("=", 1)[0] for s in set_json if s.startswith("image.")]
    touching += [f"{f}: image" for f in files if f != "-" and "image" in (yaml.safe_load(Path(f).read_text()) or {})]
    if touching:
        raise UserError(f"--image cannot be combined with values that set the image ({', '.join(touching)})")
    m = _IMAGE.match(image)
    if not m:
        raise UserError(f"--image {image!r}: expected REPOSITORY[:TAG][@sha256:DIGEST]")
    out = [f"image.repository={m['repo']}"]
    if m["tag"]:
        out.append(f"image.tag={m['tag']}")
    if m["digest"]:
        out.append(f"image.digest={m['digest']}")
    return out


def pull_secret_sets(secrets: list[str], sets: list[str], set_json: list[str], files: list[str]) -> list[str]:
    """--image-pull-secret NAME (repeatable) as the chart's imagePullSecrets, in the order given."""
    import yaml
    if not secrets:
        return []
    bad = [name for name in secrets if len(name) > 253 or not _SUBDOMAIN.fullmatch(name)]
    if bad:
        raise UserError(f"--image-pull-secret {bad[0]!r}: a Secret name must be a DNS subdomain "
                        "(lowercase letters, digits, '-' and '.', at most 253 characters)")
    touching = [p.split("=", 1)[0] for s in sets for p in _split_set(s) if p.startswith("imagePullSecrets")]
    touching += [s.split("=", 1)[0] for s in set_json if s.startswith("imagePullSecrets")]
    touching += [f"{f}: imagePullSecrets" for f in files
                 if f != "-" and "imagePullSecrets" in (yaml.safe_load(Path(f).read_text()) or {})]
    if touching:
        raise UserError(f"--image-pull-secret cannot be combined with values that set imagePullSecrets ({', '.join(touching)})")
    unique = list(dict.fromkeys(secrets))
    return ["imagePullSecrets=" + json.dumps([{"name": name} for name in unique], separators=(",", ":"))]


def kept_values(previous: dict, reset: bool) -> dict:
    """Values to carry into this run: all that were set, minus the image (always re-derived);
    with --reset-values only rbac.scope and rbac.runNamespaces."""
    kept = {k: v for k, v in (previous or {}).items() if k != "image"}
    if reset:
        rbac = {k: v for k, v in (kept.get("rbac") or {}).items() if f"rbac.{k}" in KEPT_ACROSS_RESET}
        kept = {"rbac": rbac} if rbac else {}
    return kept


def find_helm(explicit: str | None) -> str:
    candidates = [explicit, os.environ.get("NVCRE_HELM"), shutil.which("helm")]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    try:
        from nvcre.testbed.binaries import find_binaries

        found = find_binaries()
    except UserError:
        found = None
    if found and (found / "helm").is_file():
        return str(found / "helm")
    raise UserError("helm not found: install Helm 3.8+ or 4, pass --helm PATH, or build the test bed's with `make kube`")


# ---------------------------------------------------------------- helm


class Helm:
    """The helm binary pointed at the same cluster as nvcrectl."""

    def __init__(self, binary: str, kubeconfig: str | None, context: str | None) -> None:
        self.binary = binary
        self.flags = [f"--kubeconfig={kubeconfig}"] if kubeconfig else []
        if context:
            self.flags.append(f"--kube-context={context}")

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run([self.binary, *args, *self.flags], capture_output=True, text=True, timeout=600)
        if check and result.returncode != 0:
            text = (result.stderr or result.stdout).strip().replace("Error: ", "", 1)
            message = "\n".join(line for line in text.splitlines() if line.strip() and not line.startswith("Use --debug"))
            raise UserError(f"helm {args[0]} failed: {message}")
        return result

    def release_values(self, release: str, namespace: str) -> tuple[dict | None, str | None]:
        """(user-supplied values, revision) of an installed release; (None, None) when absent."""
        status = self.run("status", release, "-n", namespace, "-o", "json", check=False)
        if status.returncode != 0:
            return None, None
        revision = str(json.loads(status.stdout).get("version", "?"))
        values = self.run("get", "values", release, "-n", namespace, "-o", "json").stdout.strip()
        return (json.loads(values) if values and values != "null" else {}), revision


# ---------------------------------------------------------------- commands


@setup_app.command("init")
def init(
    values: list[str] = typer.Option([], "--values", "-f", help="Chart values file (repeatable; '-' reads stdin, needs --auto-approve)."),
    set_: list[str] = typer.Option([], "--set", help="Chart value KEY=VALUE (Helm syntax, repeatable)."),
    set_json: list[str] = typer.Option([], "--set-json", help="Chart value KEY=JSON (repeatable)."),
    image: Optional[str] = typer.Option(None, "--image", help="Controller image REPOSITORY[:TAG][@sha256:DIGEST]."),
    image_pull_secrets: list[str] = typer.Option([], "--image-pull-secret", help="Secret (in the install namespace) to pull the controller image with (repeatable)."),
    rbac_scope: Optional[str] = typer.Option(None, "--rbac-scope", help="cluster or namespaced (kept across runs)."),
    reset_values: bool = typer.Option(False, "--reset-values", help="Drop kept values except rbac.scope and rbac.runNamespaces."),
    skip_phases: list[str] = typer.Option([], "--skip-phases", help="Phases to skip: deps, helm (comma-separated or repeated)."),
    chart: Optional[Path] = typer.Option(None, "--chart", help="Chart directory or .tgz archive (default: the chart inside this installation)."),
    chart_ref: Optional[str] = typer.Option(None, "--chart-ref", help="OCI chart instead, e.g. oci://ghcr.io/nvcre/charts/nvcre (pulled with helm)."),
    chart_version: Optional[str] = typer.Option(None, "--chart-version", "--version", help="Version of the --chart-ref chart (default: the newest); --version as in the reference."),
    trainer_chart_ref: str = typer.Option(DEFAULT_TRAINER_CHART_REF, "--trainer-chart-ref", help="Kubeflow Trainer chart for phase deps: oci://..., a chart directory or .tgz."),
    trainer_chart_version: Optional[str] = typer.Option(None, "--trainer-chart-version", help=f"Version of an oci:// --trainer-chart-ref (default {DEFAULT_TRAINER_CHART_VERSION})."),
    plain_http: bool = typer.Option(False, "--plain-http", help="Pull --chart-ref and --trainer-chart-ref over plain HTTP (a local registry)."),
    namespace: str = NamespaceOpt,
    release: str = ReleaseOpt,
    auto_approve: bool = AutoApproveOpt,
    helm_bin: Optional[str] = HelmOpt,
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Install or upgrade nvcre (CRDs, controller, RBAC, default LogProfiles) with Helm."""
    import yaml
    skipped = parse_phases(skip_phases, INIT_PHASES, "setup init")
    check_set(set_)
    check_set_json(set_json)
    check_values_files(values, auto_approve)
    if rbac_scope is not None and rbac_scope not in ("cluster", "namespaced"):
        raise UserError(f"--rbac-scope: {rbac_scope!r} is not allowed; choose cluster or namespaced")
    derived = image_sets(image, set_, set_json, values)
    derived_json = pull_secret_sets(image_pull_secrets, set_, set_json, values)
    if rbac_scope:
        derived.append(f"rbac.scope={rbac_scope}")
    check_chart_ref(chart_ref, chart, chart_version)
    if "deps" not in skipped:
        check_trainer_chart_ref(trainer_chart_ref, trainer_chart_version)
    helm = Helm(find_helm(helm_bin), kubeconfig, context)
    with contextlib.ExitStack() as stack:
        stack.enter_context(cluster_errors())
        chart_path = stack.enter_context(local_chart(chart, chart_ref, chart_version, lambda *a: helm.run("pull", *a), plain_http))
        client = connect(kubeconfig, context)
        deps_plan, deps_chart = None, None
        if "deps" not in skipped:
            # decided (and the chart fetched) before the prompt: an ambiguous JobSet or an
            # unreachable chart stops the command before anything on the cluster changes
            from nvcre.cli import deps
            from nvcre.cli.deps_plan import Action, decide

            crds = {c["metadata"]["name"]: c for c in client.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")}
            deps_plan = decide(deps.observe(client, crds))
            if deps_plan.action is Action.REFUSE:
                raise UserError(f"deps: {deps_plan.reason}")
            if deps_plan.installs:
                deps_chart = stack.enter_context(_pulled_trainer_chart(helm, trainer_chart_ref, trainer_chart_version, plain_http))
        previous, revision = helm.release_values(release, namespace)
        kept = kept_values(previous or {}, reset_values)
        chart_meta = yaml.safe_load((chart_path / "Chart.yaml").read_text()) or {}

        print("Preflight")
        print(f"  cluster:   {client.configuration.host}")
        print(f"  release:   {release} in namespace {namespace} ({'installed, revision ' + revision if revision else 'not installed yet'})")
        print(f"  chart:     {chart_ref or chart_path} (version {chart_meta.get('version', '?')}, app {chart_meta.get('appVersion', '?')})")
        print(f"  phases:    {', '.join(p for p in INIT_PHASES if p not in skipped) or 'none'}")
        if deps_plan is not None:
            print(f"  deps:      {deps_plan.action.value}: {deps_plan.reason}")
            if deps_chart is not None:
                trainer_meta = yaml.safe_load((deps_chart / "Chart.yaml").read_text()) or {}
                print(f"             chart {trainer_chart_ref} (version {trainer_meta.get('version', '?')})")
        print("  values, in order (later wins; contents not shown):")
        if kept:
            print(f"    kept from the installed release: {', '.join(_leaf_keys(kept))}")
        for f in values:
            print(f"    --values {f}")
        for s in set_ + derived:
            print(f"    --set {s.split('=', 1)[0]}")
        for s in set_json + derived_json:
            print(f"    --set-json {s.split('=', 1)[0]}")
        if not (kept or values or set_ or set_json or derived or derived_json):
            print("    chart defaults only")
        scope = _effective_scope(kept, values, set_ + derived)
        print(f"  rbac:      scope {scope} (read-only on Nodes in every scope)")
        if not auto_approve:
            if not sys.stdin.isatty():
                raise UserError("not a terminal: pass --auto-approve to install without a prompt")
            if not typer.confirm("Proceed?", default=False):
                print("nothing changed")
                raise typer.Exit(1)

        if deps_plan is not None and deps_chart is not None:
            from nvcre.cli import deps

            print(f"deps: {deps.install(helm, client, deps_plan, deps_chart)}")
        elif deps_plan is not None:
            print(f"deps: nothing installed: {deps_plan.reason}")
        if "helm" in skipped:
            print("helm: skipped (--skip-phases helm)")
            return
        stdin_values = sys.stdin.read() if "-" in values else None
        with tempfile.TemporaryDirectory() as tmp:
            value_args: list[str] = []
            if kept:
                kept_file = Path(tmp) / "kept-values.yaml"
                kept_file.write_text(yaml.safe_dump(kept))
                value_args += ["-f", str(kept_file)]
            for f in values:
                if f == "-":
                    f = str(Path(tmp) / "stdin-values.yaml")
                    Path(f).write_text(stdin_values or "")
                value_args += ["-f", f]
            for s in set_ + derived:
                value_args += ["--set", s]
            for s in set_json + derived_json:
                value_args += ["--set-json", s]
            # render first: a bad value is reported before anything on the cluster changes
            helm.run("template", release, str(chart_path), "-n", namespace, *value_args)
            applied = apply_crds(client, Path(chart_path))
            print(f"crds: {applied} applied")
            adopted = adopt_log_profiles(client, Path(chart_path), release, namespace)
            if adopted:
                print(f"logprofiles: {', '.join(adopted)} already present (installed by a controller); handed to the release")
            helm.run("upgrade", "--install", release, str(chart_path), "-n", namespace, "--create-namespace", *value_args)
        _, new_revision = helm.release_values(release, namespace)
        print(f"helm: release {release} {'upgraded' if revision else 'installed'} (revision {new_revision}) in namespace {namespace}")
        print("next: nvcrectl setup status")


@contextlib.contextmanager
def _pulled_trainer_chart(helm: Helm, ref: str, version: str | None, plain_http: bool):
    """The Trainer chart for phase deps; a pull that fails names --trainer-chart-ref."""
    def pull(*args: str):
        try:
            return helm.run("pull", *args)
        except UserError as err:
            raise UserError(f"--trainer-chart-ref {ref}: {err.message}") from None

    with trainer_chart(ref, version, pull, plain_http) as path:
        yield path


def _leaf_keys(values: dict, prefix: str = "") -> list[str]:
    keys = []
    for k, v in values.items():
        path = f"{prefix}{k}"
        keys += _leaf_keys(v, path + ".") if isinstance(v, dict) and v else [path]
    return keys


def _effective_scope(kept: dict, files: list[str], sets: list[str]) -> str:
    import yaml
    scope = (kept.get("rbac") or {}).get("scope") or "namespaced"
    for f in files:
        if f != "-":
            scope = ((yaml.safe_load(Path(f).read_text()) or {}).get("rbac") or {}).get("scope") or scope
    for s in sets:
        for part in _split_set(s):
            if part.startswith("rbac.scope="):
                scope = part.split("=", 1)[1]
    return scope


def apply_crds(client: KubeClient, chart: Path) -> int:
    """Server-side apply the chart's CRDs on every run (Helm installs crds/ only once)."""
    import yaml
    count = 0
    for path in sorted((chart / "crds").glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd:
                continue
            name = crd["metadata"]["name"]
            client.request(
                "PATCH",
                f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
                query={"fieldManager": "nvcrectl", "force": "true"},
                body=crd,
                content_type="application/apply-patch+yaml",
                counter_key="APPLY CustomResourceDefinition",
            )
            count += 1
    return count


def adopt_log_profiles(client: KubeClient, chart: Path, release: str, namespace: str) -> list[str]:
    """Mark default LogProfiles a controller already created as the release's, so Helm
    takes them over instead of refusing to install over objects it does not own."""
    import yaml
    adopted = []
    for path in sorted((chart / "files" / "logprofiles").glob("*.yaml")):
        name = (yaml.safe_load(path.read_text()) or {}).get("metadata", {}).get("name")
        current = client.get(f"{API_GROUP}/v1alpha1", "LogProfile", name) if name else None
        if current is None:
            continue
        annotations = current["metadata"].get("annotations") or {}
        if annotations.get("meta.helm.sh/release-name") == release:
            continue
        client.merge_patch(
            f"{API_GROUP}/v1alpha1",
            "LogProfile",
            name,
            None,
            {
                "metadata": {
                    "labels": {"app.kubernetes.io/managed-by": "Helm"},
                    "annotations": {"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace},
                }
            },
        )
        adopted.append(name)
    return adopted


# ---------------------------------------------------------------- status


def _check(rows: list, ok: bool | None, what: str, detail: str) -> None:
    rows.append(("✓" if ok else ("-" if ok is None else "✗"), what, detail))


@setup_app.command("status")
def status(
    namespace: str = NamespaceOpt,
    release: str = ReleaseOpt,
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """What is installed and what is missing: CRDs, release, controller, RBAC, LogProfiles,
    GPU Operator labels and DCGM. Exit 1 when a required piece is missing."""
    full = release_fullname(release)
    rows: list[tuple[str, str, str]] = []
    with cluster_errors():
        client = connect(kubeconfig, context)
        crds = {c["metadata"]["name"]: c for c in client.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")}
        ours = sorted(n for n, c in crds.items() if c["spec"]["group"] == API_GROUP)
        established = [
            n for n in ours if any(x.get("type") == "Established" and x.get("status") == "True" for x in crds[n].get("status", {}).get("conditions", []))
        ]
        _check(rows, len(established) >= 7, "CRDs", f"{len(established)} of 7 nvcre kinds established" + (f" ({', '.join(n.split('.')[0] for n in ours)})" if ours else ""))
        from nvcre.report.collect import list_if_allowed

        helm_secrets = list_if_allowed(client, "v1", "Secret", namespace, label_selector=f"owner=helm,name={release}")
        latest = max(helm_secrets, key=lambda s: int(s["metadata"]["labels"].get("version", "0")), default=None)
        rel_status = latest["metadata"]["labels"].get("status") if latest else None
        _check(rows, rel_status == "deployed", "Helm release", f"{release} in {namespace}: {rel_status or 'not installed'}" + (f", revision {latest['metadata']['labels'].get('version')}" if latest else ""))
        dep = client.get("apps/v1", "Deployment", f"{full}-controller", namespace)
        if dep is None:
            _check(rows, False, "Controller", f"Deployment {full}-controller not found in {namespace}")
        else:
            want = dep["spec"].get("replicas", 1)
            ready = (dep.get("status") or {}).get("readyReplicas", 0)
            if want == 0:
                _check(rows, True, "Controller", "Deployment scaled to 0 (the controller runs outside the cluster, e.g. `nvcrectl controller run`)")
            else:
                _check(rows, ready >= want, "Controller", f"Deployment {full}-controller: {ready}/{want} ready")
        roles = [r for r in (f"{full}-manager-role", f"{full}-run-role") if client.get("rbac.authorization.k8s.io/v1", "ClusterRole", r)]
        _check(rows, len(roles) == 2, "RBAC", f"ClusterRoles present: {', '.join(roles) or 'none'}")
        profiles = sorted(p["metadata"]["name"] for p in list_if_allowed(client, "nvcre.nvidia.com/v1alpha1", "LogProfile")) if "logprofiles.nvcre.nvidia.com" in crds else []
        _check(rows, bool(profiles), "LogProfiles", ", ".join(profiles) or "none installed")
        nodes = client.list("v1", "Node")
        gpu = [n for n in nodes if (n["metadata"].get("labels") or {}).get("nvidia.com/gpu.present") == "true"]
        products = sorted({(n["metadata"].get("labels") or {}).get("nvidia.com/gpu.product", "") for n in gpu} - {""})
        _check(rows, bool(gpu), "GPU Operator labels", f"{len(gpu)} nodes with nvidia.com/gpu.present=true" + (f" ({', '.join(products)})" if products else "") if gpu else "no node has nvidia.com/gpu.present=true: install the GPU Operator")
        dcgm = client.get("v1", "Service", DCGM_SERVICE[1], DCGM_SERVICE[0])
        _check(rows, True if dcgm else None, "DCGM", f"Service {DCGM_SERVICE[0]}/{DCGM_SERVICE[1]} " + ("present" if dcgm else "missing (needed by diagnostics/dcgm-level4 only; or set dcgmHost)"))
        from nvcre.cli import deps

        for ok, what, detail in deps.status_rows(deps.observe(client, crds, strict=False)):
            _check(rows, ok, what, detail)
    width = max(len(r[1]) for r in rows)
    for mark, what, detail in rows:
        print(f"{mark} {what:<{width}}  {detail}")
    missing = [what for mark, what, _ in rows if mark == "✗"]
    if missing:
        print(f"missing: {', '.join(missing)}; run `nvcrectl setup init`" if any(m in ("CRDs", "Helm release", "RBAC") for m in missing) else f"missing: {', '.join(missing)}")
        raise typer.Exit(1)


# ---------------------------------------------------------------- reset


@setup_app.command("reset")
def reset(
    skip_phases: list[str] = typer.Option([], "--skip-phases", help="Phases to skip: cr, helm, deps."),
    namespace: str = NamespaceOpt,
    release: str = ReleaseOpt,
    auto_approve: bool = AutoApproveOpt,
    helm_bin: Optional[str] = HelmOpt,
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Remove what setup init installed: nvcre objects (cr), the release and nvcre's own CRDs
    (helm), and the Kubeflow Trainer release and CRDs that setup init's phase deps installed
    (deps; a Trainer or JobSet installed otherwise is never touched). ReportExport and
    ReportExportPolicy objects and their CRDs are kept, as in the reference."""
    skipped = parse_phases(skip_phases, RESET_PHASES, "setup reset")
    helm = Helm(find_helm(helm_bin), kubeconfig, context) if {"helm", "deps"} - skipped else None
    with cluster_errors():
        client = connect(kubeconfig, context)
        print(f"Reset on {client.configuration.host}: phases {', '.join(p for p in RESET_PHASES if p not in skipped) or 'none'}")
        if not auto_approve:
            if not sys.stdin.isatty():
                raise UserError("not a terminal: pass --auto-approve to reset without a prompt")
            if not typer.confirm("Remove nvcre from this cluster?", default=False):
                raise typer.Exit(1)
        crds = {c["metadata"]["name"]: c for c in client.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")}
        if "cr" not in skipped:
            removed = 0
            for kind in NVCRE_KINDS:
                plural = kind.lower() + "s"
                if f"{plural}.{API_GROUP}" not in crds:
                    continue
                for obj in client.list(f"{API_GROUP}/v1alpha1", kind):
                    meta = obj["metadata"]
                    if client.delete(f"{API_GROUP}/v1alpha1", kind, meta["name"], meta.get("namespace")):
                        removed += 1
            print(f"cr: deleted {removed} nvcre objects")
        if helm is not None and "helm" not in skipped:
            installed = helm.run("status", release, "-n", namespace, check=False).returncode == 0
            if installed:
                helm.run("uninstall", release, "-n", namespace)
                print(f"helm: release {release} uninstalled from {namespace}")
            else:
                print(f"helm: release {release} not installed in {namespace}")
            ours, kept = crds_to_delete(crds)
            for name in ours:
                client.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
            _wait_crds_gone(client, ours)
            print(f"crds: deleted {len(ours)} nvcre CRDs; kept {len(kept)} ({', '.join(kept)}: ReportExport "
                  f"delivery records and policies are retained) and {len(crds) - len(ours) - len(kept)} CRDs of other groups")
        if helm is not None and "deps" not in skipped:
            from nvcre.cli import deps

            lines, deleted = deps.uninstall(helm, client)
            for line in lines:
                print(f"deps: {line}")
            _wait_crds_gone(client, deleted)


def crds_to_delete(crds: dict[str, dict]) -> tuple[list[str], list[str]]:
    """(nvcre CRDs reset deletes, nvcre CRDs it keeps), each sorted; other groups are in neither."""
    ours = sorted(n for n, c in crds.items() if (c.get("spec") or {}).get("group") == API_GROUP)
    kept = [n for n in ours if n.split(".", 1)[0] in KEPT_BY_RESET]
    return [n for n in ours if n not in kept], kept


def _wait_crds_gone(client, names: list[str], timeout_s: float = 120.0) -> None:
    """Wait until deleted CRDs are really gone: the API server first removes every
    object of the kind, so `reset` returning means a following `init` starts clean."""
    import time

    deadline = time.monotonic() + timeout_s
    left = list(names)
    while left and time.monotonic() < deadline:
        left = [n for n in left if client.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", n) is not None]
        if left:
            time.sleep(0.5)
    if left:
        print(f"crds: still terminating after {timeout_s:.0f}s: {', '.join(left)}", file=sys.stderr)

