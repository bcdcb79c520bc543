"""`nvcrectl workloadrun status` and `workloadrun cancel`, and the run flags that edit a
WorkloadRun before it is created (`--node-list`, `--topology-domain`, `--topology-key`,
`--test-scale`).

``status`` is the light poll: one word on stdout (Pending, InProgress, Succeeded or
Failed), or a small document with ``-o json|yaml``. ``cancel`` deletes the WorkloadRun;
its Workflow, Jobs and workloads go with it through their owner references, and no Node
is touched. Cancelling a run that is already gone says so and succeeds, so a retry or a
script that cancels twice is not an error.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

import typer

from nvcre.cli.apps import workloadrun_app
from nvcre.cli.output import info
from nvcre.cli.report import ContextOpt, KubeconfigOpt, cluster_errors, connect
from nvcre.errors import EXIT_USAGE, UserError

if TYPE_CHECKING:  # pragma: no cover
    from nvcre.kube.client import KubeClient

PHASES = ("InProgress", "Succeeded", "Failed")  # the exclusive conditions, in the order they are read
STATUS_FORMATS = ("text", "json", "yaml")
TEST_SCALES = ("intra-node", "intra-rack", "full-scale")  # a WorkloadRun has no diagnose
AUTO_KEY = ""  # --topology-domain without --topology-key: the platform's key, found on the cluster


# ---------------------------------------------------------------- pure helpers


def run_phase(run: dict) -> str:
    """Pending until the controller sets one of the exclusive conditions True."""
    for cond_type in ("Succeeded", "Failed", "InProgress"):
        for cond in (run.get("status") or {}).get("conditions") or []:
            if cond.get("type") == cond_type and cond.get("status") == "True":
                return cond_type
    return "Pending"


def phase_message(run: dict, phase: str) -> str:
    for cond in (run.get("status") or {}).get("conditions") or []:
        if cond.get("type") == phase and cond.get("status") == "True":
            return str(cond.get("message") or "")
    return ""


def apply_run_flags(run: dict, *, node_list: str | None = None, topology_domain: str | None = None,
                    topology_key: str | None = None, test_scale: str | None = None) -> list[str]:
    """Write the run flags into a WorkloadRun body, as the reference does; the flags used.

    ``--node-list a,b`` sets ``target.nodeNames`` and lowers ``numNodes`` to the list's
    length when it asked for more. ``--topology-domain D`` adds ``KEY In [D]`` to the
    target (KEY from ``--topology-key``, else ``AUTO_KEY`` for ``resolve_auto_key``);
    ``numNodes`` becomes the domain's node count once the nodes are known.
    ``--test-scale`` sets ``orchestration.testScale``.
    """
    spec = run.setdefault("spec", {})
    used: list[str] = []
    if topology_key is not None and topology_domain is None:
        raise UserError("--topology-key goes with --topology-domain (it names the label the domain is a value of)")
    if node_list is not None:
        names = [n.strip() for n in node_list.split(",") if n.strip()]
        if not names:
            raise UserError("--node-list: give one or more node names separated by commas")
        if len(set(names)) != len(names):
            raise UserError(f"--node-list: a node is named twice: {node_list}")
        target = spec.get("target") or {}
        target["nodeNames"] = names
        spec["target"] = target
        if int(spec.get("numNodes") or 0) > len(names):
            spec["numNodes"] = len(names)
        used.append("--node-list")
    if topology_domain is not None:
        if not topology_domain.strip():
            raise UserError("--topology-domain: give the domain (a value of the topology label)")
        if topology_key is not None:
            from nvcre.cli.cluster import check_topology_key

            check_topology_key(topology_key)
        target = spec.get("target") or {}
        expressions = list(target.get("matchExpressions") or [])
        expressions.append({"key": topology_key if topology_key is not None else AUTO_KEY, "operator": "In",
                            "values": [topology_domain]})
        target["matchExpressions"] = expressions
        spec["target"] = target
        used.append("--topology-domain")
    if test_scale is not None:
        if test_scale not in TEST_SCALES:
            raise UserError(f"--test-scale: {test_scale!r} is not a WorkloadRun test scale; use one of {', '.join(TEST_SCALES)}")
        spec.setdefault("orchestration", {})["testScale"] = test_scale
        used.append("--test-scale")
    return used


def apply_registry(run: dict, mirror: str | None, credentials: tuple[str, str] | None) -> dict | None:
    """``--workload-registry``: ``spec.workloadRegistry``, so the controller pulls every image
    of the run from the mirror, sidecars a platform adds included (the host replaced, path and
    tag kept); the run's image and init containers are rewritten here too, so the stored run
    shows what is pulled. With credentials, the ``nvcrectl-pull-<name>`` Secret to create
    first, referenced from ``imagePullSecrets``."""
    from nvcre.cli.run_options import pull_secret, pull_secret_name
    from nvcre.workloads.registry import check_mirror, mirror_image

    if mirror is None:
        return None
    problem = check_mirror(mirror, "--workload-registry")
    if problem:
        raise UserError(problem)
    spec = run.setdefault("spec", {})
    spec["workloadRegistry"] = mirror
    if spec.get("image"):
        spec["image"] = mirror_image(spec["image"], mirror)
    for container in spec.get("initContainers") or []:
        if isinstance(container, dict) and container.get("image"):
            container["image"] = mirror_image(container["image"], mirror)
    if credentials is None:
        return None
    name = run["metadata"]["name"]
    ref = {"name": pull_secret_name(name)}
    spec["imagePullSecrets"] = [*[s for s in spec.get("imagePullSecrets") or [] if s != ref], ref]
    return pull_secret(name, run["metadata"].get("namespace") or "", mirror, *credentials)


def resolve_auto_key(run: dict, platform: str) -> str | None:
    """Put the platform's topology key where ``--topology-domain`` left ``AUTO_KEY``; the key."""
    from nvcre.discovery.racks import default_topology_key

    expressions = ((run.get("spec") or {}).get("target") or {}).get("matchExpressions") or []
    if not any(e.get("key") == AUTO_KEY for e in expressions):
        return None
    key = default_topology_key(platform)
    if key is None:
        raise UserError(f"--topology-domain needs --topology-key on platform {platform!r} (it has no default topology label)")
    for e in expressions:
        if e.get("key") == AUTO_KEY:
            e["key"] = key
    return key


def fit_to_target(client: KubeClient, run: dict, *, topology_domain: str | None, node_list: str | None) -> str:
    """Resolve the automatic topology key and size ``numNodes`` from the cluster's GPU nodes
    (the controller's target selection): all of a topology domain's nodes, and never more
    than a node list holds; a line for stderr."""
    from nvcre.controller import compose

    spec = run["spec"]
    gpu_nodes = client.list("v1", "Node")
    if topology_domain is not None:
        everything = compose.discover(gpu_nodes, None)
        resolve_auto_key(run, everything.platform if everything.nodes else "onprem")
    found = compose.discover(gpu_nodes, spec.get("target"))
    if not found.nodes:
        raise UserError("no schedulable GPU node matches the WorkloadRun's target (after --node-list/--topology-domain); "
                        "check `nvcrectl cluster info` and the target")
    if topology_domain is not None:
        spec["numNodes"] = len(found.nodes)
    elif node_list is not None and int(spec.get("numNodes") or 0) > len(found.nodes):
        spec["numNodes"] = len(found.nodes)
    return f"{len(found.nodes)} target GPU node(s): {', '.join(found.products) or found.arch} on {found.platform}"


# ---------------------------------------------------------------- status


def _failed_node_names(client: KubeClient, run: dict) -> list[str]:
    """From the failed-nodes ConfigMap when the run points at one and it can be read, else the inline list."""
    from nvcre.controller.node_results import decode_failed
    from nvcre.kube.client import ApiError

    status = run.get("status") or {}
    ref = (status.get("failedNodesRef") or {}).get("name")
    if ref:
        try:
            cm = client.get("v1", "ConfigMap", ref, run["metadata"]["namespace"])
        except ApiError:
            cm = None
        if cm is not None:
            return sorted({n["name"] for n in decode_failed(cm)})
    return sorted({n["name"] for n in status.get("failedNodes") or []})


@workloadrun_app.command("status")
def workloadrun_status(
    name: str = typer.Argument(..., help="The WorkloadRun."),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Its namespace."),
    output: str = typer.Option("text", "--output", "-o", help="text (the phase alone), json or yaml."),
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Print a WorkloadRun's phase: Pending, InProgress, Succeeded or Failed (a light poll;
    `workloadrun report` prints the whole report)."""
    from nvcre import API_GROUP_VERSION
    from nvcre.report.collect import not_found_message

    if output not in STATUS_FORMATS:
        raise UserError(f"-o/--output: unknown format {output!r}; choose one of {', '.join(STATUS_FORMATS)}")
    with cluster_errors():
        client = connect(kubeconfig, context)
        run = client.get(API_GROUP_VERSION, "WorkloadRun", name, namespace)
        if run is None:
            raise UserError(not_found_message(client, "WorkloadRun", name, namespace))
        failed = _failed_node_names(client, run)
    phase = run_phase(run)
    if output == "text":
        sys.stdout.write(phase + "\n")
        message = phase_message(run, phase)
        if message:
            info(message)
        return
    from nvcre.cli.output import write_document

    document: dict[str, Any] = {"name": name, "namespace": namespace, "status": phase}
    if phase_message(run, phase):
        document["message"] = phase_message(run, phase)
    if failed:
        document["failedNodes"] = failed
    write_document(document, output)


# ---------------------------------------------------------------- cancel


def cancel_one(client: KubeClient, name: str, namespace: str) -> tuple[bool, str]:
    """(ok, line) for one WorkloadRun: deleted, already going, or not there (ok, said so);
    present under another namespace only (not ok: the user meant that one)."""
    from nvcre import API_GROUP_VERSION
    from nvcre.report.collect import where_they_are

    run = client.get(API_GROUP_VERSION, "WorkloadRun", name, namespace)
    ref = f"workloadrun.nvcre.nvidia.com/{name}"
    if run is None:
        elsewhere = [ns for ns, n in where_they_are(client, "WorkloadRun") if n == name]
        if elsewhere:
            return False, f"{ref} not found in namespace {namespace!r}; it exists in namespace {elsewhere[0]!r}: add -n {elsewhere[0]}"
        return True, f"{ref} not found in namespace {namespace!r} (nothing to cancel)"
    if run["metadata"].get("deletionTimestamp"):
        return True, f"{ref} is already being cancelled"
    phase = run_phase(run)
    if not client.delete(API_GROUP_VERSION, "WorkloadRun", name, namespace, uid=run["metadata"].get("uid")):
        return True, f"{ref} is already gone (nothing to cancel)"
    after = " (it had already finished: its result goes with it)" if phase in ("Succeeded", "Failed") else ""
    return True, f"{ref} cancelled: its Workflow, Jobs and workloads are deleted with it{after}"


@workloadrun_app.command("cancel")
def workloadrun_cancel(
    names: list[str] = typer.Argument(..., help="One or more WorkloadRuns."),
    namespace: str = typer.Option("default", "--namespace", "-n", help="Their namespace."),
    kubeconfig: Optional[str] = KubeconfigOpt,
    context: Optional[str] = ContextOpt,
) -> None:
    """Cancel WorkloadRuns: delete each one, and with it its Workflow, Jobs and workloads.
    Nodes are not touched. A run that is already gone is reported, not an error."""
    code = 0
    with cluster_errors():
        client = connect(kubeconfig, context)
        for name in names:
            ok, line = cancel_one(client, name, namespace)
            if ok:
                sys.stdout.write(line + "\n")
            else:
                print(f"error: {line}", file=sys.stderr)
                code = EXIT_USAGE
    sys.stdout.flush()
    if code:
        raise typer.Exit(code)
