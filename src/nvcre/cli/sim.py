"""``nvcrectl sim up|status|down``: the local test bed with a simulated GPU fleet.

``up`` starts (or reuses) the local control plane unless ``--kubeconfig`` names a
cluster, then starts the fake kubelet in the background for the fleet. ``status``
says what runs; ``down`` stops the kubelet, deletes the fleet's nodes and stops the
control plane it started, leaving nothing running.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import typer

from nvcre.cli.apps import sim_app
from nvcre.errors import UserError

# The simulator (aiohttp, the fault model) loads when a sim command runs, so the
# rest of nvcrectl starts fast.

SIM_STATE = "sim.json"
DEFAULTS = {"nodes": 16, "platform": "aws", "gpu": "h100", "racks": 2, "time_scale": 60.0, "dra": False}


def _state_dir(option: Optional[Path]) -> Path:
    if option is not None:
        return option
    if os.environ.get("NVCRE_SIM_STATE_DIR"):
        return Path(os.environ["NVCRE_SIM_STATE_DIR"])
    from nvcre.testbed.controlplane import default_workdir

    return default_workdir().parent / "sim"


def _pick(flag: Any, from_scenario: Any, key: str) -> Any:
    if flag is not None:
        return flag
    if from_scenario is not None:
        return from_scenario
    return DEFAULTS[key]


def _rack_sizes(from_scenario: tuple[int, ...] | None, racks_flag: int | None) -> tuple[int, ...]:
    """The scenario's rackSizes, unless --racks asks for another number of racks."""
    if not from_scenario:
        return ()
    if racks_flag is not None and racks_flag != len(from_scenario):
        raise UserError(f"--racks: {racks_flag} racks, but the scenario's rackSizes names {len(from_scenario)}; "
                        "drop --racks or edit rackSizes")
    return tuple(from_scenario)


@sim_app.command("up")
def up(
    nodes: Optional[int] = typer.Option(None, "--nodes", help="Number of simulated GPU nodes (default 16)."),
    platform: Optional[str] = typer.Option(None, "--platform", help="aws, gcp, azure, oci, togetherai, nscale, mistral, onprem (default aws)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="h100, h200, a100, b200, b300, gb200, gb300, l40s, l40, rtxpro6000 (default h100)."),
    racks: Optional[int] = typer.Option(None, "--racks", help="Racks the nodes are spread over (default 2)."),
    scenario: Optional[Path] = typer.Option(None, "--scenario", help="Fault scenario YAML (fleet shape, seed, faults)."),
    fault: list[str] = typer.Option([], "--fault", help="Extra fault TYPE:key=value,... (repeatable)."),
    kubeconfig: Optional[Path] = typer.Option(None, "--kubeconfig", help="Use this cluster instead of starting the local control plane."),
    time_scale: Optional[float] = typer.Option(None, "--time-scale", help="Simulated seconds per real second (default 60)."),
    dra: Optional[bool] = typer.Option(None, "--dra/--no-dra", help="DRA-only GPUs: ResourceSlices, no nvidia.com/gpu."),
    state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="Where the kubelet keeps its pid, log and ground truth."),
) -> None:
    """Start the control plane (unless --kubeconfig) and a simulated GPU fleet."""
    from nvcre.sim.faults import FaultModel, Scenario, load_scenario, parse_fault_flag
    from nvcre.sim.fleet import FleetSpec, build_fleet
    from nvcre.sim.kubelet import KubeletConfig
    from nvcre.sim.process import load_fleet, self_signed_kubelet_cert, start_fleet

    shape = load_scenario(scenario) if scenario is not None else Scenario()
    fleet_shape = shape.fleet
    spec = FleetSpec(
        nodes=_pick(nodes, fleet_shape.nodes, "nodes"),
        platform=_pick(platform, fleet_shape.platform, "platform"),
        gpu=_pick(gpu, fleet_shape.gpu, "gpu"),
        racks=_pick(racks, fleet_shape.racks, "racks"),
        dra=_pick(dra, fleet_shape.dra, "dra"),
        rack_sizes=_rack_sizes(fleet_shape.rack_sizes, racks),
    )
    scale = _pick(time_scale, fleet_shape.time_scale, "time_scale")
    if scale <= 0:
        raise UserError(f"--time-scale: must be greater than 0, got {scale:g}")
    extra = tuple(parse_fault_flag(text) for text in fault)
    faults = FaultModel.from_scenario(shape, extra)
    faults.name = str(scenario) if scenario is not None else "--fault"
    build_fleet(spec, faults)  # validates the shape and every fault before anything starts
    if kubeconfig is not None and not kubeconfig.is_file():
        raise UserError(f"--kubeconfig: {kubeconfig} does not exist")

    directory = _state_dir(state_dir)
    directory.mkdir(parents=True, exist_ok=True)
    if load_fleet(directory) is not None:
        raise UserError(f"a simulated fleet is already running (state in {directory}); run `nvcrectl sim down` first")

    owns_plane = False
    plane_dir: str | None = None
    if kubeconfig is None:
        from nvcre.testbed.controlplane import ControlPlane, default_workdir, load_running

        workdir = default_workdir()
        plane = load_running(workdir)
        if plane is None:
            typer.echo("starting the local control plane (etcd, kube-apiserver, kube-scheduler, kube-controller-manager)...")
            plane = ControlPlane(workdir, detach=True)
            plane.start()
            owns_plane = True
            typer.echo(f"control plane: started in {plane.start_seconds:.1f}s at {plane.server}")
        else:
            typer.echo(f"control plane: already running at {plane.server}")
        plane_dir = str(workdir)
        kubeconfig_path = Path(plane.kubeconfig)
        cert, key = str(plane.kubelet_serving_cert), str(plane.kubelet_serving_key)
        client_ca: str | None = str(plane.kubelet_client_ca)
    else:
        kubeconfig_path = kubeconfig.resolve()
        cert, key = self_signed_kubelet_cert(directory)
        client_ca = None
        typer.echo(f"control plane: using the cluster of {kubeconfig_path}")

    config = KubeletConfig(
        kubeconfig=str(kubeconfig_path), state_dir=str(directory), nodes=spec.nodes, platform=spec.platform,
        gpu=spec.gpu, racks=spec.rack_count(), rack_sizes=list(spec.rack_sizes), dra=spec.dra, time_scale=scale,
        scenario=shape.model_dump(by_alias=True, exclude_none=True) if scenario is not None else {},
        faults=list(fault), tls_cert=cert, tls_key=key, client_ca=client_ca,
    )
    (directory / SIM_STATE).write_text(json.dumps({
        "ownsControlPlane": owns_plane, "controlPlaneWorkdir": plane_dir, "kubeconfig": str(kubeconfig_path),
    }, indent=2))
    handle = start_fleet(config, detach=True)
    typer.echo(
        f"fleet: {len(handle.nodes)} {spec.platform} {spec.gpu} nodes in {spec.rack_count()} rack(s) registered in "
        f"{handle.registered_seconds:.2f}s ({handle.nodes[0]} .. {handle.nodes[-1]}); time scale {scale:g}x"
    )
    typer.echo(f"fake kubelet: pid {handle.pid}, kubelet API on 127.0.0.1:{handle.port}, log {handle.log_file}")
    truth = handle.ground_truth()
    if truth["faults"]:
        for name, reasons in truth["faultyNodes"].items():
            typer.echo(f"fault: {name}: {'; '.join(reasons)}")
        for link in truth["faultyLinks"]:
            typer.echo(f"fault: link {' <-> '.join(link['nodes'])} at {link['factor']:g}")
        for rack in truth["degradedRacks"]:
            typer.echo(f"fault: {rack['rack']} uplink at {rack['factor']:g}")
    typer.echo(f"ground truth: {directory / 'ground-truth.json'}")
    typer.echo(f"kubeconfig: {kubeconfig_path}")
    typer.echo(f"export KUBECONFIG={kubeconfig_path}")


async def _cluster_view(kubeconfig: str, fleet_name: str) -> dict[str, Any]:
    from nvcre.sim.apiclient import ApiClient, load_kubeconfig
    from nvcre.sim.fleet import FLEET_LABEL, GPU_HEALTH_CONDITION

    api = ApiClient(load_kubeconfig(kubeconfig))
    try:
        nodes = await api.get("/api/v1/nodes", params={"labelSelector": f"{FLEET_LABEL}={fleet_name}"})
        names = set()
        ready = 0
        unhealthy: list[str] = []
        for node in nodes.get("items", []):
            names.add(node["metadata"]["name"])
            conditions = node["status"].get("conditions", [])
            if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                ready += 1
            for c in conditions:
                if c["type"] == GPU_HEALTH_CONDITION and c["status"] == "False":
                    unhealthy.append(f"{node['metadata']['name']}: {c.get('message', c.get('reason', ''))}")
        pods = await api.get("/api/v1/pods")
        phases: dict[str, int] = {}
        for pod in pods.get("items", []):
            if pod.get("spec", {}).get("nodeName") in names:
                phase = pod.get("status", {}).get("phase", "Unknown")
                phases[phase] = phases.get(phase, 0) + 1
        return {"nodes": len(names), "ready": ready, "unhealthy": unhealthy,
                **{f"pods{k}": v for k, v in phases.items()}}
    finally:
        await api.close()


@sim_app.command("status")
def status(
    state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="The state directory `sim up` used."),
) -> None:
    """Say whether the control plane and the simulated fleet run, and how many nodes are Ready."""
    directory = _state_dir(state_dir)
    sim_state = _read_state(directory)
    healthy = True
    plane_dir = sim_state.get("controlPlaneWorkdir")
    if plane_dir:
        from nvcre.testbed.controlplane import load_running

        plane = load_running(plane_dir)
        if plane is None:
            typer.echo("control plane: not running")
            healthy = False
        else:
            parts = ", ".join(f"{name} {'up' if up else 'DOWN'}" for name, up in plane.process_status().items())
            typer.echo(f"control plane: running at {plane.server} ({parts})")
    elif sim_state.get("kubeconfig"):
        typer.echo(f"control plane: external ({sim_state['kubeconfig']})")
    import asyncio

    from nvcre.sim.process import load_fleet

    handle = load_fleet(directory)
    if handle is None:
        typer.echo("fleet: not running")
        raise typer.Exit(1)
    typer.echo(f"fleet: fake kubelet pid {handle.pid}, {len(handle.nodes)} nodes "
               f"({handle.config.platform} {handle.config.gpu}), time scale {handle.config.time_scale:g}x")
    try:
        view = asyncio.run(_cluster_view(handle.config.kubeconfig, handle.config.fleet_name))
    except Exception as exc:
        typer.echo(f"cluster: not reachable ({exc})")
        raise typer.Exit(1)
    pods = ", ".join(f"{v} {k[4:]}" for k, v in sorted(view.items()) if k.startswith("pods")) or "none"
    typer.echo(f"nodes: {view['ready']}/{view['nodes']} Ready; pods on the fleet: {pods}")
    for line in view["unhealthy"]:
        typer.echo(f"GPU health: {line}")
    if not healthy or view["ready"] != len(handle.nodes):
        raise typer.Exit(1)


@sim_app.command("down")
def down(
    state_dir: Optional[Path] = typer.Option(None, "--state-dir", help="The state directory `sim up` used."),
) -> None:
    """Stop the fake kubelet, delete the fleet's nodes and stop the control plane `sim up` started."""
    directory = _state_dir(state_dir)
    sim_state = _read_state(directory)
    from nvcre.sim.process import stop_fleet

    stopped = stop_fleet(directory, delete=True)
    typer.echo("fleet: stopped and its nodes deleted" if stopped else "fleet: nothing running")
    if sim_state.get("ownsControlPlane") and sim_state.get("controlPlaneWorkdir"):
        from nvcre.testbed.controlplane import stop_running

        if stop_running(sim_state["controlPlaneWorkdir"]):
            typer.echo("control plane: stopped")
        else:
            typer.echo("control plane: nothing running")
    (directory / SIM_STATE).unlink(missing_ok=True)


def _read_state(directory: Path) -> dict[str, Any]:
    try:
        return json.loads((directory / SIM_STATE).read_text())
    except (OSError, json.JSONDecodeError):
        return {}
