"""The fabric model: how fast a group of GPUs runs a collective.

A ring (or tree) collective moves in lockstep, so the group is bounded by its
slowest member: the slowest node's NVLink inside a node, the slowest node's network
across nodes (NIC count x per-NIC rate x any degraded-NIC factor), a bad link
between two members, and a degraded rack uplink when the group leaves the rack.
nccl-tests reports ``algbw = size / time`` and ``busbw = algbw x factor`` with the
factor of the collective (``shared/reference/peers-and-limits.md`` 5.1); the model
produces the time, from a latency term that dominates small messages and the bus
bandwidth that dominates large ones.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable

from nvcre.sim.faults import FaultModel
from nvcre.sim.fleet import NodeFacts
from nvcre.sim.hardware import SOCKET_GBS

#: Share of the NICs' NCCL rate a ring all-reduce achieves: 8 x 48.5 x 0.99 = 384 GB/s on
#: 8x NDR, the low end of the published 384-392 ceiling (nccl-tests #267). A healthy fleet
#: then clears the ~370 acceptance line with a margin, as real ones do, instead of sitting on it.
NET_EFFICIENCY = 0.99
SOCKET_EFFICIENCY = 0.9
#: Local device copy rate a single rank reaches (busbw is 0 with one rank).
LOCAL_COPY_GBS = 680.0


@dataclass(frozen=True)
class Collective:
    """One nccl-tests collective: its binary, bus factor and how it prints."""

    name: str
    redop: str  # printed in the redop column ("none" when there is no reduction)
    root: int  # printed in the root column
    per_rank_count: bool  # count column is per rank (all_gather, reduce_scatter, alltoall)
    factor: Callable[[int], float]

    def bus_factor(self, nranks: int) -> float:
        return self.factor(max(1, nranks))


def _ring(n: int) -> float:
    return 2.0 * (n - 1) / n


def _gather(n: int) -> float:
    return (n - 1) / n


COLLECTIVES: dict[str, Collective] = {
    c.name: c
    for c in (
        Collective("all_reduce", "sum", -1, False, _ring),
        Collective("all_gather", "none", -1, True, _gather),
        Collective("reduce_scatter", "sum", -1, True, _gather),
        Collective("alltoall", "none", -1, True, _gather),
        Collective("sendrecv", "sum", -1, False, lambda n: 1.0),
        Collective("broadcast", "none", 0, False, lambda n: 1.0),
        Collective("reduce", "sum", 0, False, lambda n: 1.0),
    )
}


@dataclass(frozen=True)
class Member:
    """One node of a group and how many ranks (GPUs) it contributes."""

    node: NodeFacts
    ranks: int


@dataclass(frozen=True)
class Path:
    """The modelled bottleneck of one group under one transport."""

    ring_gbs: float  # peak bus bandwidth of ring collectives
    alltoall_gbs: float
    sendrecv_gbs: float
    latency_us: float
    transport: str  # IB or Socket (what NCCL's "Using network" line says)
    medium: str  # NVLink, MNNVL, IB, Socket, loopback
    bottleneck: str  # who bounds the group, for humans and tests

    def peak_bus_gbs(self, op: str) -> float:
        if op == "alltoall":
            return self.alltoall_gbs
        if op == "sendrecv":
            return self.sendrecv_gbs
        return self.ring_gbs


class FabricModel:
    """Answers "how fast does this group run?" from the hardware and the fault model."""

    def __init__(self, faults: FaultModel | None = None, *, socket_gbs: float = SOCKET_GBS):
        self.faults = faults or FaultModel()
        self.socket_gbs = socket_gbs

    # --- per node -----------------------------------------------------------------
    def nvlink_gbs(self, node: NodeFacts) -> float:
        return node.arch.nvlink_busbw * self.faults.gpu_factor(node.name)

    def network_gbs(self, node: NodeFacts, transport: str) -> tuple[float, str]:
        """Raw network bandwidth of one node under a transport, and why."""
        if transport == "Socket" or node.arch.nic_count == 0:
            return self.socket_gbs, "sockets"
        factor = self.faults.nic_factor(node.name)
        rate = node.arch.nic_count * node.arch.nic_gbs * factor
        why = f"{node.arch.nic_count}x{node.arch.nic_gbs:g} GB/s NICs"
        if factor < 1.0:
            why += f", degraded NIC x{factor:g}"
        return rate, why

    # --- per group ----------------------------------------------------------------
    def path(self, members: list[Member], *, transport: str = "IB", mnnvl: bool = True,
             loopback: bool = False) -> Path:
        """The bottleneck of a group.

        ``loopback`` is set when P2P and SHM are disabled (nccl-loopback): even the
        ranks of one node then talk through the network.
        """
        if not members:
            raise ValueError("a group needs at least one member")
        nodes = [m.node for m in members]
        nranks = sum(m.ranks for m in members)
        log_n = math.log2(max(2, nranks))
        candidates: list[tuple[float, str]] = []
        for m in members:
            if m.ranks > 1 and not loopback:
                candidates.append((self.nvlink_gbs(m.node), f"{m.node.name} NVLink"))

        multi_node = len({n.name for n in nodes}) > 1
        cliques = {n.clique for n in nodes}
        use_mnnvl = multi_node and mnnvl and None not in cliques and len(cliques) == 1 and not loopback
        if not multi_node and not loopback:
            ring = min(candidates)[0] if candidates else LOCAL_COPY_GBS
            bottleneck = min(candidates)[1] if candidates else "local copy"
            return Path(
                ring_gbs=ring,
                alltoall_gbs=ring * 0.85,
                sendrecv_gbs=ring * 0.8,
                latency_us=8.0 + 1.5 * log_n,
                transport=transport,
                medium="NVLink",
                bottleneck=bottleneck,
            )
        if use_mnnvl:
            rate = min(((n.arch.mnnvl_busbw or 0.0) * self.faults.gpu_factor(n.name), n.name) for n in nodes)
            return Path(
                ring_gbs=rate[0],
                alltoall_gbs=rate[0] * 0.75,
                sendrecv_gbs=rate[0] * 0.8,
                latency_us=12.0 + 2.0 * log_n,
                transport=transport,
                medium="MNNVL",
                bottleneck=f"{rate[1]} NVLink domain",
            )

        racks = {n.rack for n in nodes}
        per_node: dict[str, float] = {}
        per_rail: list[tuple[float, str]] = []
        for node in nodes:
            rate, why = self.network_gbs(node, transport)
            if len(racks) > 1:
                rack_factor = self.faults.rack_factor(node.rack)
                if rack_factor < 1.0:
                    rate *= rack_factor
                    why += f", {node.rack} uplink x{rack_factor:g}"
            per_node[node.name] = rate
            candidates.append((rate, f"{node.name} network ({why})"))
            rails = max(1, node.arch.nic_count) if transport == "IB" else 1
            per_rail.append((rate / rails, node.name))
        for link in self.faults.bad_links():
            a, b = link.nodes
            if a in per_node and b in per_node:
                rate = min(per_node[a], per_node[b]) * link.factor
                candidates.append((rate, f"link {a}<->{b} x{link.factor:g}"))
        bound, bottleneck = min(candidates)
        efficiency = NET_EFFICIENCY if transport == "IB" else SOCKET_EFFICIENCY
        network_floor = min(rate for rate, who in candidates if not who.endswith("NVLink"))
        rails_used = 1.6 if transport == "IB" else 0.8
        slowest_rail = min(per_rail)[0]
        return Path(
            ring_gbs=bound * efficiency,
            alltoall_gbs=min(network_floor, slowest_rail * rails_used) * efficiency,
            sendrecv_gbs=slowest_rail * efficiency,
            latency_us=(18.0 + 3.0 * log_n) if transport == "IB" else (55.0 + 12.0 * log_n),
            transport=transport,
            medium="loopback" if not multi_node else transport,
            bottleneck=bottleneck,
        )

    # --- pairwise check -------------------------------------------------------------
    def pairwise(self, members: list[Member], *, transport: str = "IB", mnnvl: bool = True
                 ) -> dict[tuple[str, str], float]:
        """Peak bus bandwidth of every pair of ``members``, as a pairwise mesh check measures it
        (a two-node collective per pair, pairs in a round-robin schedule): each pair runs alone,
        so it is bounded only by its two ends' networks, the link between them and (across
        racks) the racks' uplinks — the same model and faults as a group of those two nodes.
        The diagnose planner's per-pair evidence."""
        out: dict[tuple[str, str], float] = {}
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                path = self.path([a, b], transport=transport, mnnvl=mnnvl)
                out[(a.node.name, b.node.name)] = path.ring_gbs
        return out

    @staticmethod
    def round_robin(names: list[str]) -> list[list[tuple[str, str]]]:
        """The pairwise schedule: n - 1 steps (n even; one node sits out per step when odd),
        each a set of disjoint pairs, every pair exactly once (the circle method)."""
        ring = list(names) + ([None] if len(names) % 2 else [])
        steps = []
        for _ in range(max(0, len(ring) - 1)):
            half = len(ring) // 2
            pairs = [(ring[k], ring[-1 - k]) for k in range(half)]
            steps.append([(x, y) for x, y in pairs if x is not None and y is not None])
            ring = [ring[0], ring[-1], *ring[1:-1]]
        return steps

    # --- per message size ---------------------------------------------------------
    @staticmethod
    def op_time_us(op: str, size_bytes: int, nranks: int, path: Path) -> float:
        """Modelled time of one collective call, noise-free."""
        collective = COLLECTIVES[op]
        factor = collective.bus_factor(nranks)
        bus = path.peak_bus_gbs(op)
        alg = bus / factor if factor > 0 else LOCAL_COPY_GBS
        return path.latency_us + size_bytes / (alg * 1e3)

    @classmethod
    def expected(cls, op: str, size_bytes: int, nranks: int, path: Path) -> tuple[float, float, float]:
        """(time us, algbw GB/s, busbw GB/s) without noise."""
        t = cls.op_time_us(op, size_bytes, nranks, path)
        algbw = size_bytes / (t * 1e3)
        return t, algbw, algbw * COLLECTIVES[op].bus_factor(nranks)


class Noise:
    """Seeded multiplicative noise: a per-run offset and per-measurement jitter."""

    def __init__(self, sigma: float, seed: int | str):
        self.sigma = sigma
        self.rng = random.Random(str(seed))
        self.run_factor = self._draw(sigma / 2)

    def _draw(self, sigma: float) -> float:
        if sigma <= 0:
            return 1.0
        value = self.rng.gauss(0.0, sigma)
        return 1.0 + max(-4 * sigma, min(4 * sigma, value))

    def time(self, value: float) -> float:
        """A measured time: slower or faster than the model by a little."""
        return value * self.run_factor * self._draw(self.sigma)
