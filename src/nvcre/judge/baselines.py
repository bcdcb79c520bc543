"""The shipped baselines (``catalog/_lib/baselines.yaml``): expected figures with sources.

A baseline is data, not code: adding an architecture's figures is adding entries to the
file. Every number carries its source; a number nobody published is ``unknown`` (None
here) and is never replaced by a guess. Loaded and checked once per process.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from nvcre.catalog.template import CatalogError

BASELINES_FILE = Path(__file__).resolve().parent.parent / "catalog" / "_lib" / "baselines.yaml"
SCOPES = ("intra-node", "inter-node", "mnnvl")
UNKNOWN = "unknown"
_ENTRY_KEYS = {"arch", "fabric", "category", "scope", "nodes", "metric", "expected", "acceptance", "source",
               "acceptanceSource"}


@dataclass(frozen=True)
class Fabric:
    """A node's inter-node network. An RDMA fabric (InfiniBand or RoCE) is recognised by NICs
    per node on any platform that has no fabric of its own; a platform fabric (AWS EFA, GCP
    GPUDirect-TCPX) is the platform's, whatever its NIC count, so no IB/RoCE bar is borrowed."""

    name: str
    nics_per_node: int | None
    description: str
    platforms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Stage:
    name: str
    fraction: float
    why: str


@dataclass(frozen=True)
class Baseline:
    """One expected figure: what it applies to, the two numbers (None = unknown), the source."""

    arch: str
    fabric: str  # "any" or a Fabric name
    category: str
    scope: str
    metric: str
    expected: float | None
    acceptance: float | None
    source: str
    nodes: tuple[int, int] | None = None  # inter-node: the group sizes it holds for
    acceptance_source: str = ""  # the pass line's own source, short

    @property
    def cited(self) -> str:
        return self.acceptance_source or self.source

    @property
    def scope_text(self) -> str:
        if self.scope == "inter-node" and self.nodes:
            low, high = self.nodes
            return f"inter-node {low} nodes" if low == high else f"inter-node {low}-{high} nodes"
        return self.scope

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "arch": self.arch, "fabric": self.fabric, "category": self.category, "scope": self.scope,
            "metric": self.metric, "expected": self.expected if self.expected is not None else UNKNOWN,
            "acceptance": self.acceptance if self.acceptance is not None else UNKNOWN, "source": self.source,
        }
        if self.acceptance_source:
            out["acceptanceSource"] = self.acceptance_source
        if self.nodes:
            out["nodes"] = list(self.nodes)
        return out


@dataclass(frozen=True)
class BaselineSet:
    stages: dict[str, Stage]
    fabrics: dict[str, Fabric]
    entries: tuple[Baseline, ...]
    units: dict[str, str]

    def platform_fabric(self, platform: str | None) -> Fabric | None:
        """The fabric a platform brings with it (AWS: EFA), or None: an IB/RoCE platform."""
        return next((f for f in self.fabrics.values() if platform in f.platforms), None)

    def fabric_matches(self, entry: Baseline, platform: str | None, nics_per_node: int | None) -> bool:
        if entry.fabric == "any":
            return True
        fabric = self.fabrics.get(entry.fabric)
        if fabric is None:
            return False
        own = self.platform_fabric(platform)
        if own is not None or fabric.platforms:
            return own is fabric
        return nics_per_node is not None and fabric.nics_per_node == nics_per_node

    def find(self, *, arch: str, category: str, scope: str, metric: str, nodes: int | None,
             platform: str | None, nics_per_node: int | None) -> Baseline | None:
        """The entry for this hardware, platform fabric and scope, or None when the file has none."""
        for entry in self.entries:
            if (entry.arch, entry.category, entry.scope, entry.metric) != (arch, category, scope, metric):
                continue
            if entry.nodes and (nodes is None or not entry.nodes[0] <= nodes <= entry.nodes[1]):
                continue
            if self.fabric_matches(entry, platform, nics_per_node):
                return entry
        return None


def _number(where: str, value: Any) -> float | None:
    if value == UNKNOWN:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise CatalogError(f"{where}: must be a positive number or 'unknown', not {value!r}")
    return float(value)


def _fabrics(raw_fabrics: Any, where: str) -> dict[str, Fabric]:
    """Each fabric is an RDMA fabric (nicsPerNode) or a platform's own (platforms), not both."""
    from nvcre.discovery.platform import PLATFORMS

    if not isinstance(raw_fabrics, dict):
        raise CatalogError(f"{where}: fabrics must be a mapping of name to fabric")
    fabrics: dict[str, Fabric] = {}
    claimed: dict[str, str] = {}
    for name, raw in raw_fabrics.items():
        at = f"{where}: fabrics.{name}"
        raw = raw if isinstance(raw, dict) else {}
        nics, platforms = raw.get("nicsPerNode"), raw.get("platforms")
        if (nics is None) == (platforms is None):
            raise CatalogError(f"{at}: set nicsPerNode (an IB/RoCE fabric) or platforms (a platform's own fabric)")
        if nics is not None and (isinstance(nics, bool) or not isinstance(nics, int) or nics < 1):
            raise CatalogError(f"{at}.nicsPerNode: must be a whole number of NICs, at least 1")
        if platforms is not None:
            if not isinstance(platforms, list) or not platforms:
                raise CatalogError(f"{at}.platforms: must be a non-empty list of platforms")
            for platform in platforms:
                if platform not in PLATFORMS:
                    raise CatalogError(f"{at}.platforms: {platform!r} is not one of {', '.join(PLATFORMS)}")
                if platform in claimed:
                    raise CatalogError(f"{at}.platforms: {platform} is already the platform of fabric {claimed[platform]}")
                claimed[platform] = name
        fabrics[name] = Fabric(name, nics, str(raw.get("description") or ""), tuple(platforms or ()))
    return fabrics


def parse_baselines(data: Any, where: str = "_lib/baselines.yaml") -> BaselineSet:
    """Check and type the file's content; a mistake names the entry and the key."""
    if not isinstance(data, dict):
        raise CatalogError(f"{where}: must be a mapping with stages, fabrics and baselines")
    stages: dict[str, Stage] = {}
    for name, raw in (data.get("stages") or {}).items():
        fraction = raw.get("fraction") if isinstance(raw, dict) else None
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise CatalogError(f"{where}: stages.{name}.fraction must be a number in (0, 1]")
        stages[name] = Stage(name, float(fraction), str(raw.get("why") or ""))
    fabrics = _fabrics(data.get("fabrics") or {}, where)
    entries: list[Baseline] = []
    seen: set[tuple] = set()
    for index, raw in enumerate(data.get("baselines") or []):
        at = f"{where}: baselines[{index}]"
        if not isinstance(raw, dict):
            raise CatalogError(f"{at}: must be a mapping")
        unknown = sorted(set(raw) - _ENTRY_KEYS)
        if unknown:
            raise CatalogError(f"{at}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_ENTRY_KEYS))}")
        for key in ("arch", "fabric", "category", "scope", "metric", "source"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise CatalogError(f"{at}.{key}: required (a non-empty string)")
        if raw["scope"] not in SCOPES:
            raise CatalogError(f"{at}.scope: {raw['scope']!r} is not one of {', '.join(SCOPES)}")
        if raw["fabric"] != "any" and raw["fabric"] not in fabrics:
            raise CatalogError(f"{at}.fabric: {raw['fabric']!r} is not 'any' or a name under fabrics")
        nodes = raw.get("nodes")
        if raw["scope"] == "inter-node":
            if not (isinstance(nodes, list) and len(nodes) == 2 and all(isinstance(n, int) and n >= 1 for n in nodes)
                    and nodes[0] <= nodes[1]):
                raise CatalogError(f"{at}.nodes: an inter-node entry needs [min, max] group sizes")
        elif nodes is not None:
            raise CatalogError(f"{at}.nodes: only inter-node entries have group sizes")
        entry = Baseline(
            arch=raw["arch"], fabric=raw["fabric"], category=raw["category"], scope=raw["scope"], metric=raw["metric"],
            expected=_number(f"{at}.expected", raw.get("expected", UNKNOWN)),
            acceptance=_number(f"{at}.acceptance", raw.get("acceptance", UNKNOWN)),
            source=raw["source"].strip(), nodes=tuple(nodes) if nodes else None,
            acceptance_source=str(raw.get("acceptanceSource") or "").strip(),
        )
        if entry.acceptance is not None and not entry.acceptance_source:
            raise CatalogError(f"{at}.acceptanceSource: an acceptance line needs its own source")
        key = (entry.arch, entry.fabric, entry.category, entry.scope, entry.metric, entry.nodes)
        if key in seen:
            raise CatalogError(f"{at}: duplicate entry for {entry.arch}/{entry.fabric} {entry.category} {entry.scope_text}")
        seen.add(key)
        entries.append(entry)
    return BaselineSet(stages, fabrics, tuple(entries), dict(data.get("units") or {}))


@lru_cache(maxsize=1)
def load_baselines() -> BaselineSet:
    try:
        data = yaml.safe_load(BASELINES_FILE.read_text())
    except yaml.YAMLError as err:
        raise CatalogError(f"_lib/baselines.yaml: not valid YAML: {err}") from err
    return parse_baselines(data)
