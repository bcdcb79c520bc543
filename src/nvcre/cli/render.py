"""`nvcrectl certification render` and `nvcrectl workloadrun render`: print, offline,
exactly the workload objects the controller would create for a platform and GPU.

No cluster is read: the platform and architecture come from the flags (the
architecture may also come from the target's ``nvidia.com/gpu.product`` selector)
and node names are synthesized unless the target lists them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from nvcre.cli.apps import certification_app, workloadrun_app
from nvcre.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    from nvcre.catalog.model import ResolvedCategory

# The catalog, the API models and the renderers load when a render runs (fast --help).
PLATFORM_HELP = "Platform to render for: aws, gcp, azure, oci, nscale, togetherai, mistral, forge, onprem."
ARCH_HELP = "GPU architecture (h100, gb200, ...) or product name (NVIDIA-H100-80GB-HBM3)."


def _context(platform: str | None, gpu_arch: str | None, target: Any) -> tuple[str, str]:
    from nvcre.catalog.hardware import check_gpu_arch, known_architectures
    from nvcre.discovery.gpu import PRODUCT_LABEL
    from nvcre.discovery.platform import PLATFORMS, check_platform

    selector = (getattr(target, "node_selector", None) or {}) if target is not None else {}
    if not gpu_arch and selector.get(PRODUCT_LABEL):
        gpu_arch = selector[PRODUCT_LABEL]
    missing = [flag for flag, value in (("--platform", platform), ("--gpu-arch", gpu_arch)) if not value]
    if missing:
        raise UserError(
            f"{' and '.join(missing)} required to render without a cluster; platforms: {', '.join(PLATFORMS)}; "
            f"GPU architectures: {', '.join(known_architectures())}"
        )
    return check_platform(platform or ""), check_gpu_arch(gpu_arch or "")


def _node_names(target: Any, count: int | None) -> list[str]:
    listed = list(getattr(target, "node_names", None) or []) if target is not None else []
    if listed:
        return sorted(listed)
    n = count or 2
    if n < 1:
        raise UserError("--nodes: must be at least 1")
    width = max(3, len(str(n)))
    return [f"node-{i:0{width}d}" for i in range(1, n + 1)]


def _groups(resolved: ResolvedCategory, nodes: list[str]) -> list[tuple[str, list[str]]]:
    """The groups the controller would run (diagnose: its first round is all nodes)."""
    from nvcre.planning.partition import plan_groups

    scale = resolved.test_scale
    per_job = resolved.nodes_per_job
    if per_job is None and resolved.min_gpus:
        per_job = resolved.valid_node_count(len(nodes)) or None
        if per_job is None:
            raise UserError(f"{resolved.key}: {len(nodes)} node(s) x {resolved.gpus_per_node} GPUs cannot run it "
                            f"(needs at least {resolved.min_gpus} GPUs in multiples of TP x PP); use --nodes")
    if scale in ("diagnose", "intra-rack"):
        scale = "full-scale"  # racks and rounds need the live cluster; offline shows one full group
    plan = plan_groups(scale, nodes, nodes_per_job=per_job, placement=resolved.placement)
    return [(g.name, list(g.nodes) or nodes[: g.size]) for g in plan.groups]


REDACTED = "<redacted: the controller generates a fresh key pair for each Job>"


def redact_secrets(objects: list[dict]) -> list[dict]:
    """Secrets keep their keys but lose private material: render output is shared and
    pasted; the controller makes the real key pair in the cluster."""
    out = []
    for obj in objects:
        if obj.get("kind") == "Secret":
            obj = {**obj}
            for field in ("data", "stringData"):
                if isinstance(obj.get(field), dict):
                    obj[field] = {k: (REDACTED if _is_private(k, v) else v) for k, v in obj[field].items()}
        out.append(obj)
    return out


def _is_private(key: str, value: object) -> bool:
    text = str(value)
    return "PRIVATE KEY" in text or key in ("id_rsa", "id_ed25519", "id_ecdsa", "ssh-privatekey") or (
        "PRIVATE" in _b64_peek(text))


def _b64_peek(text: str) -> str:
    import base64
    import binascii

    try:
        return base64.b64decode(text[:64] + "=" * (-len(text[:64]) % 4), validate=False).decode("utf-8", "ignore")
    except (binascii.Error, ValueError):
        return ""


def _emit(objects: list[dict], comments: list[str], output: str) -> None:
    from nvcre.workloads.output import dump_yaml

    objects = redact_secrets(objects)

    if output == "json":
        typer.echo(json.dumps(objects, indent=2))
    elif output == "yaml":
        typer.echo("".join(f"# {c}\n" for c in comments) + dump_yaml(objects), nl=False)
    else:
        raise UserError(f"--output: unknown format {output!r}; valid: yaml, json")


def _check_adapter(adapter: str) -> None:
    from nvcre.catalog.resolve import ADAPTERS

    if adapter not in ADAPTERS:
        raise UserError(f"--adapter: unknown adapter {adapter!r}; valid: {', '.join(ADAPTERS)}")


def _objects_of_kind(file: str, kind: str, other_kind: str) -> list:
    """The manifest's objects of ``kind``; none is an error that points at the other render."""
    from nvcre.api.load import load_file

    found = [o for o in load_file(file) if o.kind == kind]
    if not found:
        raise UserError(f"{file}: no {kind} in the file (use 'nvcrectl {other_kind.lower()} render' for {other_kind}s)")
    return found


def _render_groups(resolved: ResolvedCategory, workflow: str, groups: list[tuple[str, list[str]]], *, namespace: str,
                   adapter: str, target, iterations: int = 1) -> list[dict]:
    """The workload objects of every group, under the names the controller gives them
    (``nvcre.controller.naming``): Job ``<workflow>-job`` for one group and iteration,
    else ``<workflow>-<group>-iter-1``; the workload ``<job>-workload``."""
    from nvcre.workloads.render import render_workload
    from nvcre.controller import naming

    objects: list[dict] = []
    single = len(groups) == 1 and iterations <= 1 and resolved.test_scale != "diagnose"
    for group, members in groups:
        job = naming.job_name(workflow, group, 1, single=single)
        objects += render_workload(resolved, name=naming.workload_name(job), namespace=namespace, nodes=members,
                                   adapter=adapter, target=target, job=job, group=group)
    return objects


def _warn(resolved: ResolvedCategory) -> None:
    for warning in resolved.warnings:
        print(f"warning: {resolved.key}: {warning}", file=sys.stderr)


def _target_dict(target: Any) -> dict | None:
    return target.model_dump(by_alias=True, exclude_none=True, mode="json") if target is not None else None


def _where(discovered, platform, gpu_arch, target, count):
    """(platform, GPU architecture, node names, found): from the cluster when ``discovered``
    is given (--dry-run; ``found`` resolves with what the nodes say), else from the flags
    with synthesized names (``found`` None)."""
    if discovered is None:
        plat, arch = _context(platform, gpu_arch, target)
        return plat, arch, _node_names(target, count), None
    found = discovered(_target_dict(target))
    for note in found.notes:
        print(f"note: {note}", file=sys.stderr)
    print(f"discovered {len(found.names)} target node(s): {found.arch} on {found.platform}", file=sys.stderr)
    return found.platform, found.arch, found.names, found


def _resolve(found, resolve_fn):
    return resolve_fn() if found is None else found.resolve(resolve_fn)


def certification_objects(file: str, *, platform: str | None, gpu_arch: str | None, nodes: int | None, adapter: str,
                          namespace: str | None, workload_registry: str | None = None,
                          per_category: list[tuple[str, list[dict]]] | None = None,
                          discovered=None, sources: list[dict] | None = None) -> tuple[list[dict], list[str]]:
    """The workload objects (and one comment per category) a Certification file would create;
    ``per_category`` (when given) receives each category's key and objects, ``sources``
    each Certification as it would be created; ``discovered`` (a target -> platform, arch,
    node names, notes function) replaces the flags with the cluster's nodes."""
    from nvcre.catalog.resolve import canonical_category, resolve_category
    from nvcre.cli.run_options import with_registry
    from nvcre.controller import naming

    _check_adapter(adapter)
    certs = _objects_of_kind(file, "Certification", "WorkloadRun")
    objects: list[dict] = []
    comments: list[str] = []
    for cert in certs:
        spec = with_registry(cert.spec, workload_registry)
        plat, arch, names, found = _where(discovered, platform, gpu_arch, spec.target, nodes)
        ns = namespace or cert.metadata.namespace or "default"
        if sources is not None:
            sources.append(_source_body(cert, spec, ns))
        # the controller's names: the catalog's own spelling of an alias, a hash for a repeated category
        raws = [canonical_category(c.model_dump(by_alias=True, exclude_none=True, mode="json")) for c in spec.categories]
        for index, category in enumerate(spec.categories):
            resolved = _resolve(found, lambda **detected: resolve_category(
                category, spec, platform=plat, gpu_arch=arch, gang_scheduler=spec.gang_scheduler, target=spec.target,
                index=index, source=file, **detected))
            _warn(resolved)
            groups = _groups(resolved, names)
            comments.append(
                f"{cert.name} {resolved.key} on {plat}/{arch}: {len(groups)} job(s), {resolved.test_scale}, "
                f"timeout {resolved.timeout_per_job}, overrides: {', '.join(resolved.applied_overrides) or 'none'}"
            )
            raw = raws[index]
            workflow = naming.category_workflow_name(cert.name, raws, index)
            comments[-1] += f"; Workflow {workflow}"
            comments.append(f"{cert.name} {resolved.key} judged: {_judging_line(spec, category, resolved, len(names))}")
            repeat = (raw.get("options") or {}).get("repeatCount") or getattr(spec, "repeat_count", None) or 1
            rendered = _render_groups(resolved, workflow, groups, namespace=ns, adapter=adapter, target=spec.target,
                                      iterations=int(repeat))
            if per_category is not None:
                per_category.append((resolved.key, rendered))
            objects += rendered
    return objects, comments


def _source_body(obj, spec, namespace: str) -> dict:
    """The run object itself as `run` would create it (for the dry-run's admission)."""
    body = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
    body["spec"] = spec.model_dump(by_alias=True, exclude_none=True, mode="json")
    body.pop("status", None)
    body["metadata"]["namespace"] = namespace
    return body


DRY_RUN_HELP = ("Discover the nodes from the cluster instead of --platform/--gpu-arch, and have the API server judge "
                "the run and every rendered object (server-side dry-run apply: schema, CEL, admission policies; "
                "nothing is created).")
CONFLICTING = "--dry-run discovers the nodes from the cluster; it cannot be combined with --platform, --gpu-arch or --nodes"


def _check_dry_run(dry_run: bool, platform, gpu_arch, nodes) -> None:
    if dry_run and (platform or gpu_arch or nodes):
        raise UserError(CONFLICTING)


def _dry_run(kubeconfig, context, render_fn, output: str) -> None:
    """Render against the live cluster's nodes, print as offline, then judge everything server-side."""
    from nvcre.cli.dry_run import discover, judge, live_session

    with live_session(kubeconfig, context) as client:
        sources: list[dict] = []
        objects, comments = render_fn(lambda target: discover(client, target), sources)
        _emit(objects, comments, output)
        judge(client, sources + objects)


REGISTRY_HELP = ("Pull every workload image from this mirror (host[:port][/path]): the registry host is replaced, "
                 "the repository path and tag are kept.")


@certification_app.command("render")
def render_certification(
    file: str = typer.Argument(..., help="Certification manifest (YAML)."),
    platform: str = typer.Option(None, "--platform", help=PLATFORM_HELP),
    gpu_arch: str = typer.Option(None, "--gpu-arch", help=ARCH_HELP),
    nodes: int = typer.Option(None, "--nodes", help="Target nodes to synthesize (default 2; ignored when target.nodeNames is set)."),
    adapter: str = typer.Option("native", "--adapter", help="native (batch/v1 Jobs) or trainjob (Kubeflow Trainer v2)."),
    namespace: str = typer.Option(None, "--namespace", "-n", help="Namespace of the rendered objects (default: the manifest's, else default)."),
    workload_registry: str = typer.Option(None, "--workload-registry", help=REGISTRY_HELP),
    output: str = typer.Option("yaml", "--output", "-o", help="yaml or json"),
    dry_run: bool = typer.Option(False, "--dry-run", help=DRY_RUN_HELP),
    kubeconfig: str = typer.Option(None, "--kubeconfig", help="With --dry-run: the kubeconfig file."),
    context: str = typer.Option(None, "--context", help="With --dry-run: the kubeconfig context."),
) -> None:
    """Print the workload objects a Certification would create, for every category."""
    _check_dry_run(dry_run, platform, gpu_arch, nodes)

    def render(discovered=None, sources=None):
        return certification_objects(file, platform=platform, gpu_arch=gpu_arch, nodes=nodes, adapter=adapter,
                                     namespace=namespace, workload_registry=workload_registry,
                                     discovered=discovered, sources=sources)

    _render_or_dry_run(render, dry_run=dry_run, output=output, kubeconfig=kubeconfig, context=context)


def _render_or_dry_run(render, *, dry_run: bool, output: str, kubeconfig: str | None, context: str | None) -> None:
    """Print what ``render`` builds, or (``--dry-run``) render from the live nodes and let the API server judge it."""
    if dry_run:
        _check_output(output)
        _dry_run(kubeconfig, context, render, output)
        return
    with _no_cycle_collection():
        objects, comments = render()
        _emit(objects, comments, output)


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Rendered objects are plain acyclic dicts, freed by reference counting; at fleet
    scale (4096 nodes: ~2.9 million containers) the cycle collector's repeated passes
    over them were more than half of building them (2.8 s of CPU against 1.3 s)."""
    import gc

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _check_output(output: str) -> None:
    if output not in ("yaml", "json"):
        raise UserError(f"--output: unknown format {output!r}; valid: yaml, json")


def _judging_line(spec, category, resolved: ResolvedCategory, total_nodes: int) -> str:
    """What would judge this category: the spec's thresholds, a stage's derived bar (with source), or nothing."""
    from nvcre.controller.judging import judging_for_category

    as_dict = spec.model_dump(by_alias=True, exclude_none=True)
    judging = judging_for_category(as_dict, category.model_dump(by_alias=True, exclude_none=True), resolved, total_nodes)
    if judging.derived:
        return "; ".join(d.text for d in judging.derived)
    if judging.thresholds:
        return ", ".join(f"{k} {v}" for k, v in judging.thresholds.items())
    return judging.message


@workloadrun_app.command("render")
def render_workloadrun(
    file: str = typer.Argument(..., help="WorkloadRun manifest (YAML)."),
    platform: str = typer.Option(None, "--platform", help=PLATFORM_HELP),
    gpu_arch: str = typer.Option(None, "--gpu-arch", help=ARCH_HELP),
    nodes: int = typer.Option(None, "--nodes", help="Target nodes to synthesize (default: numNodes)."),
    adapter: str = typer.Option("native", "--adapter", help="native (batch/v1 Jobs) or trainjob (Kubeflow Trainer v2)."),
    namespace: str = typer.Option(None, "--namespace", "-n", help="Namespace of the rendered objects."),
    output: str = typer.Option("yaml", "--output", "-o", help="yaml or json"),
    dry_run: bool = typer.Option(False, "--dry-run", help=DRY_RUN_HELP),
    kubeconfig: str = typer.Option(None, "--kubeconfig", help="With --dry-run: the kubeconfig file."),
    context: str = typer.Option(None, "--context", help="With --dry-run: the kubeconfig context."),
) -> None:
    """Print the workload objects a WorkloadRun would create."""
    _check_dry_run(dry_run, platform, gpu_arch, nodes)
    _check_adapter(adapter)

    def render(discovered=None, sources=None):
        return workloadrun_objects(file, platform=platform, gpu_arch=gpu_arch, nodes=nodes, adapter=adapter,
                                   namespace=namespace, discovered=discovered, sources=sources)

    _render_or_dry_run(render, dry_run=dry_run, output=output, kubeconfig=kubeconfig, context=context)


def workloadrun_objects(file: str, *, platform: str | None, gpu_arch: str | None, nodes: int | None, adapter: str,
                        namespace: str | None, discovered=None, sources: list[dict] | None = None
                        ) -> tuple[list[dict], list[str]]:
    """The workload objects (and a comment per run) a WorkloadRun file would create."""
    from nvcre.catalog.resolve import resolve_workloadrun

    runs = _objects_of_kind(file, "WorkloadRun", "Certification")
    objects: list[dict] = []
    comments: list[str] = []
    for run in runs:
        spec = run.spec
        plat, arch, names, found = _where(discovered, platform, gpu_arch, spec.target, nodes or spec.num_nodes)
        resolved = _resolve(found, lambda **detected: resolve_workloadrun(run, platform=plat, gpu_arch=arch, **detected))
        _warn(resolved)
        groups = _groups(resolved, names)
        comments.append(f"WorkloadRun {run.name} on {plat}/{arch}: {len(groups)} job(s), "
                        f"overrides: {', '.join(resolved.applied_overrides) or 'none'}")
        ns = namespace or run.metadata.namespace or "default"
        if sources is not None:
            sources.append(_source_body(run, spec, ns))
        objects += _render_groups(resolved, run.name, groups, namespace=ns, adapter=adapter, target=spec.target)
    return objects, comments
