"""`nvcrectl workflow render`: the Workflows a Certification (or a WorkloadRun, or a
Workflow manifest) becomes, and the nvcre Jobs each Workflow creates for its first
iteration, under the names the controller gives them.

The controller's own functions do the work (``compose.workflow_for_category``,
``plan.plan_workflow``, ``group_job.job_for_group``) against a read-only stand-in for
the API server (``ObjectStore``) that holds the manifest's objects and the nodes:
synthetic nodes for ``--platform``/``--gpu-arch``, or with ``--dry-run`` the cluster's
own, with everything else read live. Nothing is written anywhere; ``--dry-run`` then
has the API server judge every rendered object (``nvcre.cli.dry_run``).
"""

from __future__ import annotations

import copy
import json
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

import typer

from nvcre.cli.apps import workflow_app
from nvcre.errors import UserError

if TYPE_CHECKING:  # pragma: no cover
    from nvcre.kube.client import KubeClient

ANN_PLATFORM = "nvcrectl.nvidia.com/detected-platform"
ANN_ARCH = "nvcrectl.nvidia.com/detected-gpu-architecture"
ANN_OVERRIDES = "nvcrectl.nvidia.com/applied-overrides"
RUN_KINDS = ("Certification", "WorkloadRun", "Workflow")


class ObjectStore:
    """The reads the controller's planning makes, answered from the manifest's objects and
    the nodes; with ``live`` anything else comes from that cluster (read only)."""

    def __init__(self, objects: list[dict], nodes: list[dict], live: KubeClient | None = None) -> None:
        self.objects = {(o["kind"], o["metadata"].get("namespace") or "", o["metadata"]["name"]): o for o in objects}
        self.nodes = nodes
        self.live = live

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict | None:
        found = self.objects.get((kind, namespace or "", name))
        if found is not None:
            return copy.deepcopy(found)
        if kind == "Node":
            return next((copy.deepcopy(n) for n in self.nodes if n["metadata"]["name"] == name), None)
        return self.live.get(api_version, kind, name, namespace) if self.live is not None else None

    def list(self, api_version: str, kind: str, namespace: str | None = None, *, label_selector: str | None = None,
             field_selector: str | None = None) -> list[dict]:
        if kind == "Node":
            return copy.deepcopy(self.nodes)
        if self.live is None:
            return []
        from nvcre.kube.client import ApiError

        try:
            return self.live.list(api_version, kind, namespace, label_selector=label_selector, field_selector=field_selector)
        except ApiError:  # not allowed to read it: as if there were none (e.g. the TCPXO installer pods)
            return []

    def kind_installed(self, api_version: str, kind: str) -> bool:
        return self.live.kind_installed(api_version, kind) if self.live is not None else False


# ---------------------------------------------------------------- nodes


def synthetic_nodes(platform: str, arch: str, count: int, target: dict | None) -> list[dict]:
    """``count`` nodes of the simulated fleet for this platform and GPU, labelled so the
    target selects them (its nodeSelector, the first value of each In expression, its
    nodeNames as the names)."""
    from nvcre.discovery.platform import FORGE_SITE_LABEL
    from nvcre.sim.fleet import FleetSpec, build_fleet

    target = target or {}
    names = sorted(target.get("nodeNames") or [])
    count = len(names) or count
    if count < 1:
        raise UserError("--nodes: must be at least 1")
    fleet = build_fleet(FleetSpec(nodes=count, platform="onprem" if platform == "forge" else platform, gpu=arch,
                                  racks=min(2, count), fleet_name="render"))
    extra = dict(target.get("nodeSelector") or {})
    for e in target.get("matchExpressions") or []:
        if e.get("operator") == "In" and e.get("values"):
            extra[e["key"]] = e["values"][0]
        elif e.get("operator") == "Exists":
            extra.setdefault(e["key"], "true")
    if platform == "forge":
        extra[FORGE_SITE_LABEL] = "render"
    nodes = []
    for i, node in enumerate(fleet.nodes):
        node = copy.deepcopy(node)
        if names:
            node["metadata"]["name"] = names[i]
            node["metadata"]["labels"]["kubernetes.io/hostname"] = names[i]
        node["metadata"]["labels"].update(extra)
        nodes.append(node)
    return nodes


def live_nodes(client: KubeClient) -> list[dict]:
    """Every Node of the cluster: target selection happens in the controller's discovery."""
    return client.list("v1", "Node")


# ---------------------------------------------------------------- planning


@dataclass
class RenderedWorkflow:
    workflow: dict
    jobs: list[dict]
    notes: list[str] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)


def _context(store: ObjectStore, adapter: str):
    from nvcre.controller.context import Context, Settings

    return Context(kube=store, settings=Settings(adapter=adapter))  # type: ignore[arg-type]


def _with_identity(obj: dict) -> dict:
    """A manifest object as the API server would hold it for the planning: a namespace and a uid slot."""
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    meta.setdefault("namespace", "default")
    meta.setdefault("uid", "")
    return obj


def category_certification(pairs: list[tuple[str, str]], name: str, namespace: str, test_scale: str | None) -> dict:
    """The Certification `certification run --category` would create for these categories."""
    from nvcre import API_GROUP_VERSION

    spec: dict[str, Any] = {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
                            "categories": [{"domain": d, "variant": v} for d, v in pairs]}
    if test_scale:
        spec["testScale"] = test_scale
    return {"apiVersion": API_GROUP_VERSION, "kind": "Certification", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def _workflows_of_certification(ctx, cert: dict, found) -> list[dict]:
    from nvcre.catalog.resolve import canonical_category
    from nvcre.controller import compose

    adapter = compose.choose_adapter(ctx)
    bodies = []
    categories = [canonical_category(c) for c in (cert.get("spec") or {}).get("categories") or []]
    for index in range(len(categories)):
        # as the controller: the first category is resolved with the nodes, later ones from the recorded hardware
        resolved = compose.resolve_certification_category(cert, index, found.platform, found.arch,
                                                          nodes=found.nodes if index == 0 else None)
        bodies.append(compose.workflow_for_category(ctx, cert, index, resolved, adapter, total_nodes=len(found.nodes)))
    return bodies


def _workflow_of_run(ctx, run: dict, found) -> dict:
    from nvcre.catalog.resolve import resolve_workloadrun
    from nvcre.controller import compose

    resolved = resolve_workloadrun(run, platform=found.platform, gpu_arch=found.arch)
    return compose.workflow_for_run(run, resolved, compose.choose_adapter(ctx))


def _standalone_owner(wf: dict) -> dict:
    """A Certification for a Workflow manifest whose owner is nowhere to be read: its
    category with the orchestration's nodesPerJob and testScale, its target."""
    from nvcre import API_GROUP_VERSION
    from nvcre.controller import labels as L

    spec = wf.get("spec") or {}
    category = spec.get("category") or ""
    domain, _, variant = category.partition("/")
    if not domain or not variant:
        raise UserError(f"Workflow {wf['metadata']['name']}: its owner is not in the file and it names no spec.category "
                        "(domain/variant); give the Certification or WorkloadRun it belongs to as well")
    orch = spec.get("orchestration") or {}
    options = {k: orch[k] for k in ("nodesPerJob", "testScale") if orch.get(k)}
    if orch.get("placement") == "Unpinned":
        options["placement"] = "Unpinned"
    owner = {"apiVersion": API_GROUP_VERSION, "kind": "Certification",
             "metadata": {"name": (wf["metadata"].get("labels") or {}).get(L.CERTIFICATION) or wf["metadata"]["name"],
                          "namespace": wf["metadata"]["namespace"], "uid": ""},
             "spec": {"categories": [{"domain": domain, "variant": variant, **({"options": options} if options else {})}]}}
    if orch.get("target"):
        owner["spec"]["target"] = orch["target"]
    if int(orch.get("iterations") or 1) > 1:
        owner["spec"]["repeatCount"] = int(orch["iterations"])
    return owner


def _adopt_workflow(store: ObjectStore, wf: dict) -> tuple[dict, list[str]]:
    """A Workflow manifest ready for planning: controlled by an owner the store can read."""
    from nvcre.controller import labels as L

    owner = L.controller_of(wf) or {}
    labels = wf["metadata"].get("labels") or {}
    name = owner.get("name") or labels.get(L.WORKLOAD_RUN) or labels.get(L.CERTIFICATION)
    kind = owner.get("kind") or ("WorkloadRun" if labels.get(L.WORKLOAD_RUN) else "Certification")
    from nvcre import API_GROUP_VERSION

    found = store.get(API_GROUP_VERSION, kind, name, wf["metadata"]["namespace"]) if name else None
    notes = []
    if found is None:
        found = _standalone_owner(wf)
        notes.append(f"Workflow {wf['metadata']['name']}: no {kind} {name or ''} to read; rendered from its spec.category "
                     f"{(wf.get('spec') or {}).get('category')} and orchestration alone")
    found = _with_identity(found)
    store.objects[(found["kind"], found["metadata"]["namespace"], found["metadata"]["name"])] = found
    wf["metadata"]["ownerReferences"] = [L.owner_reference(found)]
    return wf, notes


def plan_jobs(ctx, wf: dict) -> RenderedWorkflow:
    """The Workflow with its planned orchestration (groups) in status, and its first
    iteration's nvcre Jobs, as the Workflow reconciler makes them."""
    from nvcre.controller import group_job, workflow_step
    from nvcre.controller.compose import PlanError
    from nvcre.controller.plan import plan_workflow

    wf = copy.deepcopy(wf)
    wf["metadata"].setdefault("uid", "")  # the API server's to assign; its Jobs name their owner without one
    try:
        plan = plan_workflow(ctx, wf)
    except PlanError as err:
        raise UserError(f"Workflow {wf['metadata']['name']}: the controller would fail it ({err.reason}): {err.message}") from None
    wf["status"] = {"orchestration": {**plan.orchestration, "groups": plan.groups}}
    resolved = group_job.resolved_for(ctx, wf)
    annotations = wf["metadata"].setdefault("annotations", {})
    annotations[ANN_PLATFORM] = plan.orchestration.get("detectedPlatform") or ""
    annotations[ANN_ARCH] = plan.orchestration.get("detectedGPUArchitecture") or ""
    if resolved.applied_overrides:
        annotations[ANN_OVERRIDES] = json.dumps(list(resolved.applied_overrides))
    jobs = []
    for group in plan.groups:
        name = workflow_step.job_name(wf, group, 1)
        try:
            jobs.append(group_job.job_for_group(ctx, wf, group, name, 1))
        except PlanError as err:
            raise UserError(f"Workflow {wf['metadata']['name']}: {err.message}") from None
    notes = []
    if not plan.groups:
        notes.append(f"Workflow {wf['metadata']['name']}: diagnose plans its Jobs round by round from the results; none up front")
    if plan.iterations > 1:
        notes.append(f"Workflow {wf['metadata']['name']}: iteration 1 of {plan.iterations} shown; later iterations "
                     "run the same groups under -iter-<n> names")
    return RenderedWorkflow(wf, jobs, notes, list(plan.events))


def render_workflows(objects: list[dict], nodes: list[dict], *, adapter: str, live: KubeClient | None = None
                     ) -> list[RenderedWorkflow]:
    """Every Workflow the manifest's Certifications, WorkloadRuns and Workflows come to, planned on ``nodes``."""
    from nvcre.controller import compose

    objects = [_with_identity(o) for o in objects]
    store = ObjectStore(objects, nodes, live)
    ctx = _context(store, adapter)
    out: list[RenderedWorkflow] = []
    for obj in objects:
        kind, target = obj["kind"], None
        notes: list[str] = []
        if kind == "Certification":
            target = (obj.get("spec") or {}).get("target")
        elif kind == "WorkloadRun":
            target = (obj.get("spec") or {}).get("target")
        found = compose.discover(compose.gpu_nodes(ctx), target)
        if kind != "Workflow" and not found.nodes:
            raise UserError(f"{kind} {obj['metadata']['name']}: no schedulable GPU node matches its target "
                            f"({len(nodes)} node(s) seen); the controller would wait for nodes")
        try:
            if kind == "Certification":
                bodies = _workflows_of_certification(ctx, obj, found)
            elif kind == "WorkloadRun":
                bodies = [_workflow_of_run(ctx, obj, found)]
            else:
                wf, notes = _adopt_workflow(store, copy.deepcopy(obj))
                bodies = [wf]
        except UserError:
            raise
        except compose.PlanError as err:
            raise UserError(f"{kind} {obj['metadata']['name']}: {err.message}") from None
        except Exception as err:  # a catalog or option problem: the controller would fail the run with it
            raise UserError(f"{kind} {obj['metadata']['name']}: {getattr(err, 'message', err)}") from None
        for body in bodies:
            rendered = plan_jobs(ctx, body)
            rendered.notes[:0] = notes
            out.append(rendered)
    return out


def printable(objects: list[dict]) -> list[dict]:
    """What is shown: private keys redacted (also inside a Job's embedded workload), no empty uids."""
    from nvcre.cli.render import redact_secrets

    shown = []
    for obj in redact_secrets(copy.deepcopy(objects)):
        native = (((obj.get("spec") or {}).get("workload") or {}).get("native") or {})
        if isinstance(native.get("objects"), list):
            native["objects"] = redact_secrets(native["objects"])
        for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
            if not ref.get("uid"):
                ref.pop("uid", None)
        if not (obj.get("metadata") or {}).get("uid"):
            obj.get("metadata", {}).pop("uid", None)
        shown.append(obj)
    return shown


def load_run_objects(file: str, namespace: str | None) -> list[dict]:
    """The Certifications, WorkloadRuns and Workflows of a manifest, as plain bodies."""
    from nvcre.api.load import load_file

    found = []
    for obj in load_file(file):
        if obj.kind not in RUN_KINDS:
            continue
        body = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
        body.pop("status", None)
        body["metadata"]["namespace"] = namespace or body["metadata"].get("namespace") or "default"
        found.append(body)
    if not found:
        raise UserError(f"{file}: no Certification, WorkloadRun or Workflow in the file")
    return found


@workflow_app.command("render")
def workflow_render(
    file: Optional[str] = typer.Argument(None, help="A Certification, WorkloadRun or Workflow manifest (YAML)."),
    category: list[str] = typer.Option([], "--category", "-c", help="DOMAIN/VARIANT instead of a file (repeatable), "
                                       "as `certification run --category` would run it."),
    name: str = typer.Option("nvcrectl", "--name", help="With --category: the Certification's name (Workflow names start with it)."),
    test_scale: Optional[str] = typer.Option(None, "--test-scale", help="With --category: the spec's testScale."),
    platform: Optional[str] = typer.Option(None, "--platform", help="Platform to render for (offline)."),
    gpu_arch: Optional[str] = typer.Option(None, "--gpu-arch", help="GPU architecture or product name (offline)."),
    nodes: Optional[int] = typer.Option(None, "--nodes", help="Synthetic nodes (offline; default 2, or the target's nodeNames)."),
    adapter: str = typer.Option("native", "--adapter", help="native or trainjob (offline; --dry-run asks the cluster)."),
    namespace: Optional[str] = typer.Option(None, "--namespace", "-n", help="Namespace of the rendered objects."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Discover the real nodes and have the API server judge every "
                                 "rendered object (server-side dry-run apply; nothing is created)."),
    output: str = typer.Option("yaml", "--output", "-o", help="yaml or json"),
    kubeconfig: Optional[str] = typer.Option(None, "--kubeconfig", help="With --dry-run: the kubeconfig file."),
    context: Optional[str] = typer.Option(None, "--context", help="With --dry-run: the kubeconfig context."),
) -> None:
    """Print the Workflows a Certification, WorkloadRun or Workflow becomes, and the nvcre
    Jobs of each one's first iteration, named as the controller names them."""
    from nvcre.cli.render import ARCH_HELP, _check_adapter  # noqa: F401 - shared checks
    from nvcre.cli.run import parse_categories

    if output not in ("yaml", "json"):
        raise UserError(f"--output: unknown format {output!r}; valid: yaml, json")
    if bool(file) == bool(category):
        raise UserError("give a manifest file or --category (one or more), not both and not neither")
    if dry_run and (platform or gpu_arch or nodes):
        raise UserError("--dry-run discovers the nodes from the cluster; it cannot be combined with --platform, "
                        "--gpu-arch or --nodes")
    _check_adapter(adapter)
    if category:
        objects = [category_certification(parse_categories(category), name, namespace or "default", test_scale)]
        from nvcre.api.load import parse_object

        parse_object(objects[0], source="--category")
    else:
        if test_scale:
            raise UserError("--test-scale goes with --category; in a manifest set spec.testScale")
        objects = load_run_objects(file or "", namespace)
    if dry_run:
        from nvcre.cli.dry_run import judge, live_session

        with live_session(kubeconfig, context) as client:
            rendered = render_workflows(objects, live_nodes(client), adapter="auto", live=client)
            _emit(rendered, output)
            judge(client, [o for o in objects if o["kind"] != "Workflow"] + _all_objects(rendered))
        return
    from nvcre.cli.render import _context as offline_context

    targets = [(o.get("spec") or {}).get("target") or dig_target(o) for o in objects]
    plat, arch = offline_context(platform, gpu_arch, _first_target_model(targets))
    node_objects = synthetic_nodes(plat, arch, nodes or 2, targets[0] if len(targets) == 1 else None)
    _emit(render_workflows(objects, node_objects, adapter=adapter), output)


def dig_target(obj: dict) -> dict | None:
    return ((obj.get("spec") or {}).get("orchestration") or {}).get("target")


def _first_target_model(targets: list[dict | None]):
    """What ``render._context`` reads off a target: its nodeSelector (for the GPU product)."""
    class _T:  # a duck of TargetSpec
        node_selector = (targets[0] or {}).get("nodeSelector") if targets else None

    return _T()


def _all_objects(rendered: list[RenderedWorkflow]) -> list[dict]:
    """Workflows, Jobs and each Job's workload objects, in the order the controller creates them."""
    out: list[dict] = []
    for r in rendered:
        out.append(r.workflow)
        for job in r.jobs:
            out.append(job)
            out += ((job.get("spec") or {}).get("workload") or {}).get("native", {}).get("objects") or []
    return out


def _emit(rendered: list[RenderedWorkflow], output: str) -> None:
    from nvcre.workloads.output import dump_yaml

    for r in rendered:
        for note in r.notes:
            print(f"note: {note}", file=sys.stderr)
        for event_type, reason, message in r.events:
            if event_type == "Warning":
                print(f"warning: {reason}: {message}", file=sys.stderr)
    objects = printable([o for r in rendered for o in [r.workflow, *r.jobs]])
    if output == "json":
        sys.stdout.write(json.dumps(objects, indent=2) + "\n")
    else:
        sys.stdout.write(dump_yaml(objects))
    sys.stdout.flush()
