"""Load the catalog files once: entries, override fragments and hardware defaults.

The catalog is data: ``entries/<domain>/<variant>.yaml`` (one category each),
``overrides/platform/<platform>.yaml`` and ``overrides/gpu/<arch>.yaml`` (ordered
blocks, each a ``when`` plus typed patches) and ``_lib/`` (shared data). Adding a
category, a platform or an architecture is adding a file here. Everything is parsed
and checked once per process (cached), so resolving a category costs no file I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from nvcre.catalog.template import CatalogError

CATALOG_DIR = Path(__file__).resolve().parent
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: parsing is ~10x faster

ENTRY_KEYS = {
    "summary", "tags", "launch", "op", "image", "mpi", "command", "args", "env", "tolerations",
    "capabilities", "privileged", "hostNetwork", "restartPolicy", "defaults", "testScales",
    "measurement", "thresholds", "aliases", "script", "model", "minGPUs", "parallelism",
    "resources", "labels",
}
LAUNCHES = ("mpi", "torchrun", "per-node", "exec")

# Typed patches a block may carry, and what each does (see docs/catalog.md).
PATCH_KEYS = {
    "image", "ncclBinary", "mpi", "command", "preCommand", "env", "replaceEnv", "resources",
    "removeResources", "podResources", "podAnnotations", "tolerations", "capabilities",
    "hostPaths", "sidecars", "claims", "computeDomain", "privileged", "dcgmHost", "topologyKey", "configFiles",
}
WHEN_KEYS = {"gpuArchitecture", "platform", "tags", "launch", "variants", "mnnvl", "gpusPerNode"}
MPI_PATCH_KEYS = {"mpirun", "prefix", "args"}


@dataclass(frozen=True)
class Entry:
    """One catalog category as read from its file."""

    domain: str
    variant: str
    source: str  # e.g. "entries/communication/nccl-all-reduce.yaml"
    data: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.domain}/{self.variant}"

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(self.data.get("tags") or ())

    @property
    def launch(self) -> str:
        return self.data["launch"]


@dataclass(frozen=True)
class Block:
    """One override block: applies its patches when ``when`` matches."""

    source: str  # "platform/aws" or "gpu/gb200"
    id: str
    when: dict[str, Any]
    patch: dict[str, Any]

    @property
    def name(self) -> str:
        return f"{self.source}#{self.id}"


@dataclass(frozen=True)
class Catalog:
    entries: dict[tuple[str, str], Entry]
    aliases: dict[tuple[str, str], tuple[str, str]]
    platform_blocks: dict[str, tuple[Block, ...]]
    gpu_blocks: dict[str, tuple[Block, ...]]
    gpu_defaults: dict[str, Any]
    megatron: dict[str, Any]
    workloadrun: dict[str, Any] = field(default_factory=dict)

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(sorted(self.platform_blocks))

    @property
    def architectures(self) -> tuple[str, ...]:
        return tuple(sorted(self.gpu_defaults["architectures"]))

    def lookup(self, domain: str, variant: str) -> Entry | None:
        key = (domain, variant)
        key = self.aliases.get(key, key)
        return self.entries.get(key)

    def canonical(self, domain: str, variant: str) -> tuple[str, str] | None:
        """The entry's own (domain, variant) for a name or an alias; None when unknown.
        Objects and reports carry this name, whichever spelling the user wrote."""
        entry = self.lookup(domain, variant)
        return (entry.domain, entry.variant) if entry is not None else None

    def sorted_entries(self) -> list[Entry]:
        return [self.entries[k] for k in sorted(self.entries)]


def _read(path: Path) -> Any:
    try:
        return yaml.load(path.read_text(), Loader=_Loader)
    except yaml.YAMLError as err:
        raise CatalogError(f"{path.relative_to(CATALOG_DIR)}: not valid YAML: {err}") from err


def _check_keys(where: str, data: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise CatalogError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")


def _load_entry(path: Path) -> Entry:
    rel = str(path.relative_to(CATALOG_DIR))
    data = _read(path)
    if not isinstance(data, dict):
        raise CatalogError(f"{rel}: an entry must be a mapping")
    _check_keys(rel, data, ENTRY_KEYS)
    if data.get("launch") not in LAUNCHES:
        raise CatalogError(f"{rel}: launch must be one of {', '.join(LAUNCHES)}")
    for required in ("summary", "image", "defaults"):
        if required not in data:
            raise CatalogError(f"{rel}: missing {required}")
    if data["launch"] == "mpi" and not isinstance(data.get("mpi"), dict):
        raise CatalogError(f"{rel}: an mpi entry needs an mpi block")
    if data["launch"] == "per-node" and not data.get("command"):
        raise CatalogError(f"{rel}: a per-node entry needs a command")
    return Entry(domain=path.parent.name, variant=path.stem, source=rel, data=data)


def _load_blocks(path: Path, kind: str) -> tuple[str, tuple[Block, ...]]:
    rel = str(path.relative_to(CATALOG_DIR))
    data = _read(path)
    owner_key = "platform" if kind == "platform" else "gpuArchitecture"
    if not isinstance(data, dict) or data.get(owner_key) != path.stem:
        raise CatalogError(f"{rel}: must be a mapping with {owner_key}: {path.stem}")
    _check_keys(rel, data, {owner_key, "blocks"})
    blocks: list[Block] = []
    seen: set[str] = set()
    for index, raw in enumerate(data.get("blocks") or []):
        where = f"{rel} blocks[{index}]"
        if not isinstance(raw, dict) or not raw.get("id"):
            raise CatalogError(f"{where}: a block needs an id")
        if raw["id"] in seen:
            raise CatalogError(f"{where}: duplicate block id {raw['id']!r}")
        seen.add(raw["id"])
        when = raw.get("when") or {}
        _check_keys(f"{where}.when", when, WHEN_KEYS)
        patch = {k: v for k, v in raw.items() if k not in ("id", "when")}
        _check_keys(where, patch, PATCH_KEYS)
        if not patch:
            raise CatalogError(f"{where}: a block must patch something")
        if "mpi" in patch:
            _check_keys(f"{where}.mpi", patch["mpi"], MPI_PATCH_KEYS)
        if "configFiles" in patch:
            patch["configFiles"] = [_load_config_files(f"{where}.configFiles[{i}]", cf) for i, cf in enumerate(patch["configFiles"])]
        blocks.append(Block(source=f"{kind}/{path.stem}", id=raw["id"], when=when, patch=patch))
    return path.stem, tuple(blocks)


CONFIG_FILE_KEYS = {"name", "mountPath", "files"}


def _load_config_files(where: str, raw: Any) -> dict[str, Any]:
    """A ``configFiles`` item: files under ``_lib/`` shipped in a ConfigMap ``<workload>-<name>``
    and mounted read-only at ``mountPath`` (e.g. an NCCL topology file). Read once here."""
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: must be a mapping with name, mountPath and files")
    _check_keys(where, raw, CONFIG_FILE_KEYS)
    if not raw.get("name") or not str(raw.get("mountPath", "")).startswith("/") or not raw.get("files"):
        raise CatalogError(f"{where}: needs a name, an absolute mountPath and files {{key: _lib path}}")
    data = {}
    for key, rel in raw["files"].items():
        path = (CATALOG_DIR / "_lib" / str(rel)).resolve()
        if CATALOG_DIR / "_lib" not in path.parents or not path.is_file():
            raise CatalogError(f"{where}.files.{key}: no file _lib/{rel}")
        data[str(key)] = path.read_text(encoding="utf-8")
    return {"name": str(raw["name"]), "mountPath": str(raw["mountPath"]), "data": data}


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """Parse and check every catalog file (once per process)."""
    entries: dict[tuple[str, str], Entry] = {}
    aliases: dict[tuple[str, str], tuple[str, str]] = {}
    for path in sorted((CATALOG_DIR / "entries").glob("*/*.yaml")):
        if path.parent.name.startswith("_"):
            continue
        entry = _load_entry(path)
        entries[(entry.domain, entry.variant)] = entry
        for alias in entry.data.get("aliases") or ():
            aliases[(entry.domain, alias)] = (entry.domain, entry.variant)
    platform_blocks = dict(_load_blocks(p, "platform") for p in sorted((CATALOG_DIR / "overrides/platform").glob("*.yaml")))
    gpu_blocks = dict(_load_blocks(p, "gpu") for p in sorted((CATALOG_DIR / "overrides/gpu").glob("*.yaml")))
    gpu_defaults = _read(CATALOG_DIR / "_lib/gpu-defaults.yaml")
    unknown_gpu = sorted(set(gpu_blocks) - set(gpu_defaults["architectures"]))
    if unknown_gpu:
        raise CatalogError(f"overrides/gpu: no hardware defaults for {', '.join(unknown_gpu)} in _lib/gpu-defaults.yaml")
    return Catalog(
        entries=entries,
        aliases=aliases,
        platform_blocks=platform_blocks,
        gpu_blocks=gpu_blocks,
        gpu_defaults=gpu_defaults,
        megatron=_read(CATALOG_DIR / "_lib/megatron.yaml"),
        workloadrun=_read(CATALOG_DIR / "_lib/workloadrun.yaml"),
    )
