"""Apply catalog layers (entry, then platform blocks, then GPU blocks) to a workload.

Each block is a ``when`` and typed patches (see ``data.PATCH_KEYS``). Lists add,
scalars replace, and environment variables have exactly one owner: a block that sets
a variable some earlier layer already set is a catalog bug unless it says so with
``replaceEnv``. That rule is what keeps every rendered environment free of duplicates
and makes "where does this value come from" answerable (``env_sources``).
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from nvcre.catalog.data import Block, Entry
from nvcre.catalog.template import CatalogError


def _value_match(spec: Any, value: Any) -> bool:
    """A ``when`` part for one value: absent, a plain string, or equals / in / notIn."""
    if spec is None:
        return True
    if isinstance(spec, str):
        return value == spec
    if "equals" in spec and value != spec["equals"]:
        return False
    if "in" in spec and value not in spec["in"]:
        return False
    if "notIn" in spec and value in spec["notIn"]:
        return False
    return True


def block_matches(when: Mapping[str, Any], ctx: Mapping[str, Any]) -> bool:
    """Whether a block's ``when`` holds for this resolution (all present parts AND)."""
    if not _value_match(when.get("gpuArchitecture"), ctx["gpuArchitecture"]):
        return False
    if not _value_match(when.get("platform"), ctx["platform"]):
        return False
    tags = when.get("tags")
    if tags is not None:
        if "any" in tags and not set(tags["any"]) & set(ctx["tags"]):
            return False
        if "all" in tags and not set(tags["all"]) <= set(ctx["tags"]):
            return False
    if "launch" in when and ctx["launch"] not in when["launch"]:
        return False
    if "variants" in when and ctx["variant"] not in when["variants"]:
        return False
    if "mnnvl" in when and bool(when["mnnvl"]) != ctx["mnnvl"]:
        return False
    return _value_match(when.get("gpusPerNode"), ctx["gpusPerNode"])


class WorkloadDraft:
    """The mutable workload while layers apply; values may still hold ``{{holes}}``."""

    def __init__(self, entry: Entry | None, launch: str, image: str) -> None:
        self.launch = launch
        self.image = image
        self.command: list[str] = []
        self.args: list[str] = []
        self.mpi: dict[str, Any] | None = None
        self.env: dict[str, str] = {}
        self.env_sources: dict[str, str] = {}
        self.weak_env: set[str] = set()  # defaults any layer may replace (WorkloadRun base env)
        self.resources: dict[str, Any] = {"nvidia.com/gpu": "{{gpusPerNode}}"}
        self.pod_resources: dict[str, dict[str, str]] = {}
        self.capabilities: list[str] = []
        self.privileged: bool | None = None
        self.host_network = False
        self.restart_policy = "Never"
        self.pod_annotations: dict[str, str] = {}
        self.tolerations: list[dict[str, Any]] = []
        self.blanket_toleration = False
        self.host_paths: list[dict[str, Any]] = []
        self.sidecars: list[dict[str, Any]] = []
        self.config_files: list[dict[str, Any]] = []
        self.claims: list[dict[str, Any]] = []
        self.compute_domain = False
        self.pre_command: list[str] = []
        self.topology_key: str | None = None
        self.var_overrides: dict[str, str] = {}
        self.applied: list[str] = []
        if entry is not None:
            self._from_entry(entry)

    # -- the entry itself -------------------------------------------------
    def _from_entry(self, entry: Entry) -> None:
        data = entry.data
        if data.get("mpi"):
            mpi = data["mpi"]
            self.mpi = {
                "mpirun": mpi["mpirun"],
                "timeoutSeconds": int(mpi.get("timeoutSeconds", 3600)),
                "prefix": [],
                "args": [],
                "binary": mpi["binary"],
                "binaryArgs": [str(a) for a in mpi.get("args") or []],
            }
        self.command = [str(c) for c in data.get("command") or []]
        self.args = [str(a) for a in data.get("args") or []]
        self.set_env(data.get("env") or {}, entry.source)
        for tol in data.get("tolerations") or []:
            if tol == {"operator": "Exists"}:
                self.blanket_toleration = True
            else:
                self.tolerations.append(dict(tol))
        self.capabilities.extend(data.get("capabilities") or [])
        if "privileged" in data:
            self.privileged = bool(data["privileged"])
        self.host_network = bool(data.get("hostNetwork", False))
        self.restart_policy = data.get("restartPolicy", "Never")
        if data.get("resources"):
            self.pod_resources = copy.deepcopy(data["resources"])

    # -- env with one owner per variable ---------------------------------
    def set_env(self, values: Mapping[str, Any], source: str, *, replace: bool = False, weak: bool = False) -> None:
        for name, value in values.items():
            owner = self.env_sources.get(name)
            if owner is not None and not replace and name not in self.weak_env:
                raise CatalogError(
                    f"{source}: sets {name}, which {owner} already sets; each variable has one owner "
                    "(use replaceEnv to replace an earlier layer's value on purpose)"
                )
            self.env[name] = "" if value is None else str(value)
            self.env_sources[name] = source
            if weak:
                self.weak_env.add(name)
            else:
                self.weak_env.discard(name)

    # -- one block ---------------------------------------------------------
    def apply(self, block: Block) -> None:
        p = block.patch
        src = block.name
        if "image" in p:
            self.image = p["image"]
        if "ncclBinary" in p:
            if self.mpi is not None:
                self.mpi["binary"] = p["ncclBinary"]
            elif self.command:
                self.command[0] = p["ncclBinary"]
        if "mpi" in p and self.mpi is not None:
            mpi = p["mpi"]
            if "mpirun" in mpi:
                self.mpi["mpirun"] = mpi["mpirun"]
            self.mpi["prefix"].extend(str(a) for a in mpi.get("prefix") or [])
            self.mpi["args"].extend(str(a) for a in mpi.get("args") or [])
        if "command" in p:
            self.command = [str(c) for c in p["command"]]
        self.pre_command.extend(p.get("preCommand") or [])
        if "env" in p:
            self.set_env(p["env"], src)
        if "replaceEnv" in p:
            self.set_env(p["replaceEnv"], src, replace=True)
        for name, value in (p.get("resources") or {}).items():
            self.resources[name] = value
        for name in p.get("removeResources") or []:
            self.resources.pop(name, None)
        if "podResources" in p:
            self.pod_resources = copy.deepcopy(p["podResources"])
        self.pod_annotations.update(p.get("podAnnotations") or {})
        for tol in p.get("tolerations") or []:
            if tol not in self.tolerations:
                self.tolerations.append(dict(tol))
        for cap in p.get("capabilities") or []:
            if cap not in self.capabilities:
                self.capabilities.append(cap)
        self.host_paths.extend(copy.deepcopy(p.get("hostPaths") or []))
        self.sidecars.extend(copy.deepcopy(p.get("sidecars") or []))
        for cf in p.get("configFiles") or []:
            self.config_files = [c for c in self.config_files if c["name"] != cf["name"]] + [dict(cf)]
        for claim in p.get("claims") or []:
            self.claims = [c for c in self.claims if c["name"] != claim["name"]] + [dict(claim)]
        if p.get("computeDomain"):
            self.compute_domain = True
        if "privileged" in p:
            self.privileged = bool(p["privileged"])
        if "dcgmHost" in p:
            self.var_overrides["dcgmHost"] = p["dcgmHost"]
        # A GPU fragment's topology key is the generic one (the NVLink clique); a platform
        # that names its own rack label (Nscale's accelerator domain) keeps it.
        if "topologyKey" in p and not (block.source.startswith("gpu/") and self.topology_key):
            self.topology_key = p["topologyKey"]
        self.applied.append(src)
