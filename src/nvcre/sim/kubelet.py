"""The fake kubelet: ONE asyncio process that is the kubelet of every simulated node.

It registers the fleet's Nodes (and DRA ResourceSlices), keeps them Ready with node
Leases in ``kube-node-lease`` renewed every 10 s plus a periodic Ready heartbeat in
the node status, watches pods bound to its nodes and runs them (``podrunner.py``),
serves the kubelet API over HTTPS for container logs (``logs.py``), and applies the
effects of faults: a GPU that falls off the bus turns the node's ``GpuHealthy``
condition False (as a GPU health agent reports it) and lowers allocatable GPUs.

Run as ``python -m nvcre.sim.kubelet CONFIG.json`` (``nvcrectl sim up`` and the
``fleet`` pytest fixture do that); see :class:`KubeletConfig`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from aiohttp import web

from nvcre.sim.apiclient import ApiClient, ApiError, load_kubeconfig
from nvcre.sim.emulators.base import Effect, GroupHost, PodView, RunContext
from nvcre.sim.fabric import FabricModel
from nvcre.sim.faults import FaultModel, Scenario, parse_fault_flag, parse_scenario
from nvcre.sim.fleet import (
    DRA_DRIVER,
    FLEET_LABEL,
    GPU_HEALTH_CONDITION,
    Fleet,
    FleetSpec,
    build_fleet,
    resource_slice,
)
from nvcre.sim.logs import LogStore, make_app, server_ssl
from nvcre.sim.podenv import container_env, expand_k8s, fetch_files, pod_gpus, pod_requests_rdma
from nvcre.sim.podrunner import PodRunner, now_str

log = logging.getLogger("nvcre.sim.kubelet")

LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_S = 40
LEASE_RENEW_S = 10.0
# A kubelet with node Leases reports an unchanged node status every 5 minutes
# (nodeStatusReportFrequency), each node on its own timer: spread over the interval, not all
# at once (a burst of 1024 Node writes a minute made every watcher re-read every Node).
STATUS_HEARTBEAT_S = 300.0
POD_STATUS_RESYNC_S = 2.0
GROUND_TRUTH_NAMESPACE = "nvcre-sim"
# Leases and Events get connection pools of their own: one shared pool let a backlog of
# renewals (102 a second at 1024 nodes) and start-up Events queue ahead of pod status
# writes for over a minute on a loaded test host, while real kubelets each have their own
# connection and the API server interleaves them. Leases get as many connections as pods:
# with 16, a round of 1024 renewals took over 60 s behind an overloaded API server and
# nodes went NotReady; Events are best effort.
LEASE_CONNECTIONS = 64
EVENT_CONNECTIONS = 4
MPI_WAIT_S = 1200.0  # how long a launcher waits for its workers: 240 x 5 s, wall seconds at any time scale


@dataclass
class KubeletConfig:
    """Everything the kubelet process needs, written as JSON by whoever starts it."""

    kubeconfig: str
    state_dir: str
    nodes: int = 16
    platform: str = "aws"
    gpu: str = "h100"
    racks: int = 2
    rack_sizes: list[int] = field(default_factory=list)  # nodes per rack (unequal racks); empty: even split
    dra: bool = False
    name_prefix: str = "gpu-node"
    fleet_name: str = "sim"
    time_scale: float = 60.0
    # Seconds between a node's Lease renewals. Real kubelets renew every 10 s; one Python
    # process on a small test host cannot carry 4096 of them (400 writes a second), so a
    # very large simulated fleet renews less often and its control plane waits longer
    # before it calls a silent node NotReady (``ControlPlane(node_monitor_grace_s=)``).
    lease_renew_s: float = LEASE_RENEW_S
    scenario: dict[str, Any] = field(default_factory=dict)
    faults: list[str] = field(default_factory=list)  # --fault flags
    port: int = 0
    tls_cert: str | None = None
    tls_key: str | None = None
    client_ca: str | None = None

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=2))

    @classmethod
    def read(cls, path: Path) -> KubeletConfig:
        return cls(**json.loads(path.read_text()))

    def fleet_spec(self, kubelet_port: int) -> FleetSpec:
        """The fleet's shape; the kubelet and a test's rebuilt model read it the same way."""
        return FleetSpec(nodes=self.nodes, platform=self.platform, gpu=self.gpu, racks=self.racks, dra=self.dra,
                         rack_sizes=tuple(self.rack_sizes), name_prefix=self.name_prefix, fleet_name=self.fleet_name, kubelet_port=kubelet_port)

    def scenario_model(self) -> Scenario:
        return parse_scenario(self.scenario or {}, source="scenario")

    def fault_model(self) -> FaultModel:
        extra = tuple(parse_fault_flag(text) for text in self.faults)
        return FaultModel.from_scenario(self.scenario_model(), extra)


def _micro_time() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Kubelet:
    """The kubelet of a whole simulated fleet."""

    def __init__(self, config: KubeletConfig):
        self.config = config
        if not config.lease_renew_s > 0:
            raise ValueError(f"lease_renew_s must be a positive number of seconds, got {config.lease_renew_s!r}")
        self.lease_duration_s = max(LEASE_DURATION_S, int(4 * config.lease_renew_s))
        self.time_scale = max(config.time_scale, 1e-6)
        self.faults = config.fault_model()
        self.fabric = FabricModel(self.faults)
        self.logs = LogStore()
        self.fleet: Fleet | None = None
        self.facts: dict[str, Any] = {}
        self.node_uids: dict[str, str] = {}
        self.node_conditions: dict[str, list[dict[str, Any]]] = {}
        self.node_allocatable: dict[str, dict[str, str]] = {}
        self.pods: dict[str, dict[str, Any]] = {}
        self.runners: dict[str, PodRunner] = {}
        self.checkpoints: dict[str, int] = {}
        self.off_bus: set[str] = set()
        self.groups: dict[str, set[str]] = {}
        # torchrun groups: (namespace, rendezvous key) -> (members' uids, shared start)
        self.rendezvous_groups: dict[tuple[str, str], tuple[set[str], datetime]] = {}
        self.serial = 0
        self.tasks: list[asyncio.Task] = []
        self.api: ApiClient = None  # type: ignore[assignment]  # pods, nodes, reads
        self.lease_api: ApiClient = None  # type: ignore[assignment]
        self.event_api: ApiClient = None  # type: ignore[assignment]
        self._renewing: set[str] = set()  # nodes whose lease renewal is in flight
        self.lease_skips = 0
        self.registered_s: float | None = None
        self.port = config.port
        self._runner_site: web.AppRunner | None = None
        self.lease_failures = 0
        self._inflight: set[asyncio.Task] = set()

    # --- startup ---------------------------------------------------------------------
    async def start(self) -> None:
        state_dir = Path(self.config.state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        kubeconfig = load_kubeconfig(self.config.kubeconfig)
        self.api = ApiClient(kubeconfig)
        self.lease_api = ApiClient(kubeconfig, limit=LEASE_CONNECTIONS)
        self.event_api = ApiClient(kubeconfig, limit=EVENT_CONNECTIONS)
        await self._serve()
        self.fleet = build_fleet(self.config.fleet_spec(self.port), self.faults)
        self.facts = self.fleet.facts
        version = await self.api.get("/version", ok_missing=True)
        if version and version.get("gitVersion"):
            for node in self.fleet.nodes:
                node["status"]["nodeInfo"]["kubeletVersion"] = version["gitVersion"]
        begin = time.monotonic()
        await self._register_nodes()
        if self.fleet.resource_slices:
            await asyncio.gather(self._register_leases(), self._register_slices())
        else:
            await self._register_leases()
        self.registered_s = time.monotonic() - begin
        await self._publish_ground_truth(state_dir)
        self.tasks = [
            asyncio.create_task(self._lease_loop()),
            asyncio.create_task(self._status_loop()),
            asyncio.create_task(self._watch_pods()),
            asyncio.create_task(self._pod_status_resync()),
        ]
        for fault in self.faults.off_bus_faults():
            if fault.after_seconds is not None:
                self.tasks.append(asyncio.create_task(self._timed_off_bus(fault.node, fault.gpu, fault.after_seconds)))
        (state_dir / "kubelet.json").write_text(json.dumps({
            "pid": os.getpid(), "port": self.port, "nodes": self.fleet.names, "fleet": self.config.fleet_name,
            "registeredSeconds": round(self.registered_s, 3), "timeScale": self.time_scale,
        }, indent=2))
        log.info("registered %d nodes in %.2fs; kubelet API on 127.0.0.1:%d",
                 len(self.fleet.names), self.registered_s, self.port)

    async def _serve(self) -> None:
        app = make_app(self.logs, self._describe)
        self._runner_site = web.AppRunner(app, access_log=None)
        await self._runner_site.setup()
        ssl_context = None
        if self.config.tls_cert and self.config.tls_key:
            ssl_context = server_ssl(self.config.tls_cert, self.config.tls_key, self.config.client_ca)
        site = web.TCPSite(self._runner_site, "127.0.0.1", self.config.port, ssl_context=ssl_context)
        await site.start()
        server = site._server  # the bound socket, to learn the port when 0 was asked
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def _bounded(self, coros: list, limit: int = 48) -> list:
        semaphore = asyncio.Semaphore(limit)

        async def one(coro):
            async with semaphore:
                return await coro

        return await asyncio.gather(*(one(c) for c in coros))

    async def _register_nodes(self) -> None:
        assert self.fleet is not None

        async def register(node: dict[str, Any]) -> None:
            name = node["metadata"]["name"]
            try:
                created = await self.api.post("/api/v1/nodes", node)
            except ApiError as exc:
                if exc.status != 409:
                    raise
                created = await self.api.merge_patch(
                    f"/api/v1/nodes/{name}",
                    {"metadata": {"labels": node["metadata"]["labels"], "annotations": node["metadata"]["annotations"]},
                     "spec": node["spec"]},
                )
            self.node_uids[name] = created["metadata"]["uid"]
            self.node_conditions[name] = node["status"]["conditions"]
            self.node_allocatable[name] = dict(node["status"]["allocatable"])
            if not (created.get("status") or {}).get("conditions") or exc_status_needed(created, node):
                await self.api.merge_patch(f"/api/v1/nodes/{name}/status", {"status": node["status"]})

        def exc_status_needed(created: dict[str, Any], node: dict[str, Any]) -> bool:
            have = (created.get("status") or {}).get("allocatable") or {}
            return have != node["status"]["allocatable"]

        await self._bounded([register(n) for n in self.fleet.nodes])

    async def _register_leases(self) -> None:
        assert self.fleet is not None

        async def lease(name: str) -> None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": LEASE_NAMESPACE,
                             "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                                  "uid": self.node_uids[name]}]},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": self.lease_duration_s,
                         "renewTime": _micro_time()},
            }
            path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
            try:
                await self.api.post(path, body)
            except ApiError as exc:
                if exc.status != 409:
                    raise
                await self.api.merge_patch(f"{path}/{name}", {"metadata": {"ownerReferences": body["metadata"]["ownerReferences"]},
                                                              "spec": body["spec"]})

        await self._bounded([lease(n) for n in self.fleet.names])

    async def _register_slices(self) -> None:
        assert self.fleet is not None
        group = await self.api.get("/apis/resource.k8s.io", ok_missing=True)
        if not group:
            log.warning("resource.k8s.io is not served: DRA ResourceSlices not created")
            return
        version = group["preferredVersion"]["groupVersion"]

        async def create(fact) -> None:
            body = resource_slice(fact, self.config.fleet_name, version)
            body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": fact.name,
                                                    "uid": self.node_uids[fact.name]}]
            try:
                await self.api.post(f"/apis/{version}/resourceslices", body)
            except ApiError as exc:
                if exc.status != 409:
                    raise

        await self._bounded([create(f) for f in self.facts.values()])
        device_class = {
            "apiVersion": version, "kind": "DeviceClass",
            "metadata": {"name": DRA_DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRA_DRIVER}'"}}]},
        }
        try:
            await self.api.post(f"/apis/{version}/deviceclasses", device_class)
        except ApiError as exc:
            if exc.status != 409:
                log.warning("DeviceClass %s not created: %s", DRA_DRIVER, exc)

    async def _publish_ground_truth(self, state_dir: Path) -> None:
        assert self.fleet is not None
        truth = self.faults.ground_truth(self.fleet.names)
        truth["fleet"] = {"name": self.config.fleet_name, "nodes": len(self.fleet.names),
                          "platform": self.config.platform, "gpu": self.config.gpu, "racks": len(self.config.rack_sizes) or self.config.racks}
        (state_dir / "ground-truth.json").write_text(json.dumps(truth, indent=2))
        try:
            await self.api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": GROUND_TRUTH_NAMESPACE}})
        except ApiError as exc:
            if exc.status != 409:
                log.warning("ground truth namespace: %s", exc)
                return
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": f"ground-truth-{self.config.fleet_name}", "namespace": GROUND_TRUTH_NAMESPACE,
                             "labels": {FLEET_LABEL: self.config.fleet_name}},
                "data": {"ground-truth.json": json.dumps(truth, indent=2)}}
        path = f"/api/v1/namespaces/{GROUND_TRUTH_NAMESPACE}/configmaps"
        try:
            await self.api.post(path, body)
        except ApiError as exc:
            if exc.status == 409:
                await self.api.merge_patch(f"{path}/{body['metadata']['name']}", {"data": body["data"]})
            else:
                log.warning("ground truth ConfigMap: %s", exc)

    # --- heartbeats ------------------------------------------------------------------
    async def _lease_loop(self) -> None:
        """Renew every node's Lease each ``lease_renew_s``, spread over the interval. A node whose
        last renewal has not come back is skipped this round, as a kubelet's lease controller
        renews one at a time: renewals never pile up behind a slow API server."""
        assert self.fleet is not None
        names = self.fleet.names
        loop = asyncio.get_running_loop()
        every = self.config.lease_renew_s
        gap = every / max(1, len(names))
        while True:
            begin = loop.time()
            for index, name in enumerate(names):
                due = begin + index * gap
                delay = due - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                if name in self._renewing:
                    self.lease_skips += 1
                    continue
                self._renewing.add(name)
                task = asyncio.create_task(self._renew(name))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)
            delay = begin + every - loop.time()
            await asyncio.sleep(max(0.0, delay))

    async def _renew(self, name: str) -> None:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{name}"
        try:
            await self.lease_api.merge_patch(path, {"spec": {"renewTime": _micro_time()}}, decode=False)
            self.lease_failures = 0
        except Exception as exc:
            self.lease_failures += 1
            if self.lease_failures in (1, 10) or self.lease_failures % 1000 == 0:
                log.warning("lease renewal %s failed (%d in a row): %r", path, self.lease_failures, exc)
        finally:
            self._renewing.discard(name)

    async def _status_loop(self) -> None:
        """Each node's unchanged status once per STATUS_HEARTBEAT_S, the nodes spread over it."""
        assert self.fleet is not None
        names = self.fleet.names
        gap = STATUS_HEARTBEAT_S / max(1, len(names))
        while True:
            for name in names:
                await asyncio.sleep(gap)
                now = now_str()
                for cond in self.node_conditions[name]:
                    cond["lastHeartbeatTime"] = now
                task = asyncio.create_task(self._push_node(name))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)

    async def _pod_status_resync(self) -> None:
        """Pod statuses lost while the API server was away are written again (a kubelet's status sync)."""
        while True:
            await asyncio.sleep(POD_STATUS_RESYNC_S)
            await self._bounded([r.push() for r in list(self.runners.values()) if r.dirty and not r.deleting], limit=8)

    async def _push_node(self, name: str) -> None:
        body = {"status": {"conditions": self.node_conditions[name], "allocatable": self.node_allocatable[name]}}
        try:
            await self.api.merge_patch(f"/api/v1/nodes/{name}/status", body)
        except Exception as exc:
            log.warning("node status %s not written: %s", name, exc)

    # --- pods ------------------------------------------------------------------------
    async def _watch_pods(self) -> None:
        resource_version = ""
        failures = 0
        while True:
            try:
                if not resource_version:
                    listing = await self.api.get("/api/v1/pods")
                    resource_version = listing["metadata"]["resourceVersion"]
                    seen = set()
                    for pod in listing.get("items", []):
                        seen.add(pod["metadata"]["uid"])
                        await self._on_pod("ADDED", pod)
                    for uid in [u for u in self.pods if u not in seen]:
                        await self._on_pod("DELETED", self.pods[uid])
                async for event in self.api.watch("/api/v1/pods", resource_version):
                    kind, obj = event.get("type"), event.get("object", {})
                    if kind == "ERROR":
                        resource_version = ""
                        break
                    resource_version = obj.get("metadata", {}).get("resourceVersion", resource_version)
                    failures = 0
                    if kind != "BOOKMARK":
                        await self._on_pod(kind, obj)
            except asyncio.CancelledError:
                raise
            except ApiError as exc:
                resource_version = ""  # relist (410 or an outage), as a kubelet does: nothing is missed
                failures += 1
                log.warning("pod watch: %s", exc)
                await asyncio.sleep(0.5)
            except Exception as exc:  # the API server went away: relist when it is back
                resource_version = ""
                failures += 1
                log.warning("pod watch restarts: %s", exc)
                await asyncio.sleep(min(2.0, 0.25 * failures))

    async def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata", {})
        uid = meta.get("uid")
        if not uid:
            return
        if kind == "DELETED":
            self.pods.pop(uid, None)
            runner = self.runners.pop(uid, None)
            if runner is not None:
                for c in runner.init + runner.main:
                    c.stop.set()
                asyncio.get_running_loop().call_later(30, self.logs.forget, runner.ns, runner.name)
            return
        self.pods[uid] = pod
        node = pod.get("spec", {}).get("nodeName")
        if node not in self.facts:
            return
        runner = self.runners.get(uid)
        if meta.get("deletionTimestamp"):
            if runner is None:
                runner = PodRunner(self, pod, self._next_serial())
                self.runners[uid] = runner
            task = asyncio.create_task(runner.terminate())
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)
            return
        if runner is None:
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                return
            runner = PodRunner(self, pod, self._next_serial())
            self.runners[uid] = runner
            runner.start()
        else:
            runner.pod = pod

    def _next_serial(self) -> int:
        self.serial += 1
        return self.serial

    def _describe(self, ns: str, pod: str, container: str) -> str | None:
        for runner in self.runners.values():
            if runner.ns == ns and runner.name == pod:
                for c in runner.init + runner.main:
                    if c.name == container:
                        waiting = c.state.get("waiting", {})
                        return f'container "{container}" in pod "{pod}" is waiting to start: {waiting.get("reason", "ContainerCreating")}'
        return None

    # --- what a container sees -------------------------------------------------------
    async def fetch_files(self, pod: dict[str, Any]) -> dict[str, str]:
        return await fetch_files(self.api, pod)

    async def make_context(self, runner: PodRunner, c) -> RunContext:
        pod = runner.pod
        env = await container_env(self.api, pod, c.spec, runner.ip)
        command = [expand_k8s(str(t), env) for t in c.spec.get("command") or []]
        args = [expand_k8s(str(t), env) for t in c.spec.get("args") or []]
        view = PodView(
            name=runner.name,
            namespace=runner.ns,
            hostname=pod["spec"].get("hostname") or runner.name,
            uid=f"{runner.ns}/{runner.name}",
            restart_count=c.restart_count,
            gpus_requested=pod_gpus(pod),
            rdma_requested=pod_requests_rdma(pod),
        )
        return RunContext(
            command=command,
            args=args,
            env=env,
            pod=view,
            node=runner.node,
            faults=self.faults,
            fabric=self.fabric,
            seed=str(self.faults.seed),
            start=datetime.now(timezone.utc),
            time_scale=self.time_scale,
            checkpoints=dict(self.checkpoints),
            off_bus=frozenset(self.off_bus),
            read_file=runner.files.get,
            resolve_host=self.resolver(runner.ns),
        )

    def _host_index(self, namespace: str) -> dict[str, PodRunner]:
        """Running fleet pods of a namespace by every name an MPI host list may use."""
        index: dict[str, PodRunner] = {}
        for runner in self.runners.values():
            if runner.ns != namespace or runner.deleting or not any(c.started for c in runner.main):
                continue
            spec = runner.pod["spec"]
            hostname = spec.get("hostname") or runner.name
            index.setdefault(runner.name, runner)
            index.setdefault(runner.ip, runner)
            index[hostname] = runner
            if spec.get("subdomain"):
                index[f"{hostname}.{spec['subdomain']}"] = runner
        return index

    def _lookup(self, index: dict[str, PodRunner], name: str) -> PodRunner | None:
        name = name.strip()
        if name in index:
            return index[name]
        labels = name.split(".")
        return index.get(".".join(labels[:2])) or index.get(labels[0])

    def resolve_host(self, namespace: str, name: str, index: dict[str, PodRunner] | None = None) -> GroupHost | None:
        """The running fleet pod behind an MPI host name (hostname.subdomain[.ns...], pod name or IP)."""
        labels = name.strip().split(".")
        ns = labels[2] if len(labels) > 2 and labels[2] not in ("svc", "cluster") else namespace
        if index is None or ns != namespace:
            index = self._host_index(ns)
        runner = self._lookup(index, name)
        if runner is None:
            return None
        hostname = runner.pod["spec"].get("hostname") or runner.name
        return GroupHost(name=name, hostname=hostname, node=runner.node, rdma_requested=pod_requests_rdma(runner.pod))

    def resolver(self, namespace: str):
        """A host resolver for one container run (the index is built once, on first use)."""
        cache: dict[str, dict[str, PodRunner]] = {}

        def resolve(name: str) -> GroupHost | None:
            if "index" not in cache:
                cache["index"] = self._host_index(namespace)
            return self.resolve_host(namespace, name, cache["index"])

        return resolve

    async def wait_for_hosts(self, launcher: PodRunner, hosts: list[str], ctx: RunContext) -> None:
        """Like the launcher's ssh loop: wait (bounded) until every named host runs.

        The bound is wall time, not scaled: how long workers take to start is the control
        plane's scheduling and pod start-up, which the time scale does not compress (at
        600x a scaled 1200 s would be 2 s, while 1024 workers take a minute and more).
        """
        deadline = asyncio.get_running_loop().time() + MPI_WAIT_S
        while asyncio.get_running_loop().time() < deadline:
            index = self._host_index(launcher.ns)
            found = [self._lookup(index, h) for h in hosts]
            members = self.groups.setdefault(launcher.uid, set())
            members.update(r.uid for r in found if r is not None)
            if all(found):
                return
            await asyncio.sleep(0.2)

    def join_rendezvous(self, key: str, runner: PodRunner, now: datetime) -> datetime:
        """A torchrun worker joined its group: the time the group's training clock starts.

        Real torchrun ranks wait for one another at the rendezvous, so every rank's
        timeline starts together; the simulation gives all members the start time of
        the first member still running, so rank 0's start line precedes the last rank's
        iteration lines as it does on real hardware.
        """
        members, start = self.rendezvous_groups.setdefault((runner.ns, key), (set(), now))
        members.add(runner.uid)
        return start

    def leave_rendezvous(self, key: str, runner: PodRunner) -> None:
        """A worker ended; the group's clock is forgotten once no member is left."""
        entry = self.rendezvous_groups.get((runner.ns, key))
        if entry is not None:
            entry[0].discard(runner.uid)
            if not entry[0]:
                del self.rendezvous_groups[(runner.ns, key)]

    def abort_rendezvous(self, key: str, origin: PodRunner) -> None:
        """One torchrun worker died: the others of its group fail as NCCL times out."""
        for runner in list(self.runners.values()):
            if runner is not origin and runner.ns == origin.ns:
                if any(c.started and c.rendezvous == key for c in runner.main):
                    runner.abort_training(runner.node.index)

    def release_group(self, launcher: PodRunner, code: int) -> None:
        """The launcher ended: its sshd workers stop (exit 0)."""
        for uid in self.groups.pop(launcher.uid, set()):
            runner = self.runners.get(uid)
            if runner is not None and runner is not launcher:
                runner.stop_sshd(code)

    # --- events ----------------------------------------------------------------------
    def emit_event(self, involved: dict[str, Any], reason: str, message: str, *, node: str,
                   warning: bool = False) -> None:
        """Post a core/v1 Event from the kubelet of ``node`` without waiting for it."""
        now = now_str()
        namespace = involved.get("namespace") or "default"
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{involved['name']}.", "namespace": namespace},
            "involvedObject": involved, "reason": reason, "message": message,
            "type": "Warning" if warning else "Normal", "count": 1,
            "firstTimestamp": now, "lastTimestamp": now,
            "source": {"component": "kubelet", "host": node},
            "reportingComponent": "kubelet", "reportingInstance": node,
        }

        async def post() -> None:
            try:
                await self.event_api.post(f"/api/v1/namespaces/{namespace}/events", body, decode=False)
            except Exception as exc:
                log.debug("event %s not posted: %s", reason, exc)

        task = asyncio.create_task(post())
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    # --- effects of faults -----------------------------------------------------------
    async def apply_effect(self, effect: Effect, runner: PodRunner | None = None) -> None:
        if effect.kind == "checkpoint":
            self.checkpoints[effect.key] = max(self.checkpoints.get(effect.key, 0), effect.value)
        elif effect.kind == "gpu-off-bus":
            await self.gpu_off_bus(effect.node, effect.gpu)

    async def gpu_off_bus(self, node: str, gpu: int) -> None:
        """XID 79 on ``node``: the health agent reports it and the GPU leaves allocatable."""
        if node in self.off_bus or node not in self.facts:
            return
        self.off_bus.add(node)
        fact = self.facts[node]
        bus = fact.arch.pci_buses[gpu % len(fact.arch.pci_buses)]
        now = now_str()
        for cond in self.node_conditions[node]:
            if cond["type"] == GPU_HEALTH_CONDITION:
                cond.update({"status": "False", "reason": "GpuFellOffBus", "lastTransitionTime": now,
                             "lastHeartbeatTime": now,
                             "message": f"GPU {gpu} (PCI 0000:{bus}:00.0) has fallen off the bus: XID 79"})
        allocatable = self.node_allocatable[node]
        if "nvidia.com/gpu" in allocatable:
            allocatable["nvidia.com/gpu"] = str(max(0, int(allocatable["nvidia.com/gpu"]) - 1))
        await self._push_node(node)
        self.emit_event({"kind": "Node", "apiVersion": "v1", "name": node, "uid": self.node_uids.get(node, "")},
                        "GpuFellOffBus", f"GPU {gpu} (PCI 0000:{bus}:00.0) has fallen off the bus: XID 79",
                        node=node, warning=True)
        log.info("%s: GPU %d fell off the bus", node, gpu)

    async def _timed_off_bus(self, node: str, gpu: int, after: float) -> None:
        await asyncio.sleep(after / self.time_scale)
        await self.gpu_off_bus(node, gpu)

    # --- shutdown --------------------------------------------------------------------
    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for runner in list(self.runners.values()):
            if runner.task is not None:
                runner.task.cancel()
        if self._runner_site is not None:
            await self._runner_site.cleanup()
        for client in (self.api, self.lease_api, self.event_api):
            if client is not None:
                await client.close()


async def delete_fleet(kubeconfig: str, fleet_name: str) -> dict[str, int]:
    """Delete a fleet's Nodes, their pods (force), Leases, ResourceSlices and ground truth."""
    api = ApiClient(load_kubeconfig(kubeconfig))
    counts = {"nodes": 0, "pods": 0}
    try:
        selector = {"labelSelector": f"{FLEET_LABEL}={fleet_name}"}
        nodes = await api.get("/api/v1/nodes", params=selector)
        names = [n["metadata"]["name"] for n in nodes.get("items", [])]
        pods = await api.get("/api/v1/pods")
        doomed = [p for p in pods.get("items", []) if p.get("spec", {}).get("nodeName") in set(names)]
        force = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
        await asyncio.gather(*(api.delete(f"/api/v1/namespaces/{p['metadata']['namespace']}/pods/{p['metadata']['name']}", force)
                               for p in doomed))
        semaphore = asyncio.Semaphore(48)

        async def drop(path: str) -> None:
            async with semaphore:
                await api.delete(path)

        await asyncio.gather(*(drop(f"/api/v1/nodes/{n}") for n in names))
        await asyncio.gather(*(drop(f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{n}") for n in names))
        group = await api.get("/apis/resource.k8s.io", ok_missing=True)
        if group:
            version = group["preferredVersion"]["groupVersion"]
            await api.request("DELETE", f"/apis/{version}/resourceslices", params=selector, ok_missing=True)
        await api.delete(f"/api/v1/namespaces/{GROUND_TRUTH_NAMESPACE}/configmaps/ground-truth-{fleet_name}")
        counts = {"nodes": len(names), "pods": len(doomed)}
    finally:
        await api.close()
    return counts


async def _main(config: KubeletConfig) -> None:
    kubelet = Kubelet(config)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await kubelet.start()
    except Exception:
        await kubelet.stop()
        raise
    await stop.wait()
    log.info("stopping")
    await kubelet.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nvcre.sim.kubelet", description="Fake kubelet for a simulated GPU fleet")
    parser.add_argument("config", help="kubelet config JSON (written by nvcrectl sim up or the fleet fixture)")
    options = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("NVCRE_SIM_LOG", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    config = KubeletConfig.read(Path(options.config))
    try:
        asyncio.run(_main(config))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
