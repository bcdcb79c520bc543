"""What both workload adapters share: names, labels, pinning, tolerations, volumes,
the rank container and the DRA dependencies (ComputeDomain, ResourceClaimTemplates).

The adapters (``native``, ``trainjob``) only decide how pods are grouped into objects.
Everything a pod needs to run the category is built here, once, so the two adapters
cannot drift apart on GPU requests, NCCL env, /dev/shm or node pinning.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from nvcre.api.common import parse_duration
from nvcre.catalog.model import ResolvedCategory, WorkloadSpec
from nvcre.discovery.nodes import target_dict, tolerations_for
from nvcre.errors import UserError
from nvcre.workloads.placement import HOSTNAME_KEY, placement

MANAGED_BY = {"app.kubernetes.io/managed-by": "nvcre"}
LABEL_WORKLOAD = "nvcre.nvidia.com/workload"
LABEL_JOB = "nvcre.nvidia.com/job"
LABEL_GROUP = "nvcre.nvidia.com/group"
LABEL_ROLE = "nvcre.nvidia.com/role"
LABEL_CATEGORY = "nvcre.nvidia.com/category"
ANNOTATION_OVERRIDES = "nvcre.nvidia.com/applied-overrides"
ANNOTATION_PLATFORM = "nvcre.nvidia.com/detected-platform"
ANNOTATION_ARCH = "nvcre.nvidia.com/detected-gpu-architecture"
ANNOTATION_GROUP_NODES = "nvcre.nvidia.com/group-nodes"
GROUP_NODES_ANNOTATION_LIMIT = 64  # the annotation repeats the nvcre Job's spec.nodes: small groups only
MAX_BASE_NAME = 44  # the controller's workload-name limit; leaves room for "-worker-<index>" and "-compute-domain" within 63
RANK_CONTAINER = "node"  # Kubeflow Trainer finds the trainer container by this name
LAUNCHER_RESOURCES = {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "2", "memory": "1Gi"}}


def short_name(name: str, limit: int = MAX_BASE_NAME) -> str:
    """``name`` if it fits, else a prefix plus a 5-hex hash of the whole (deterministic)."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:5]
    return f"{name[: limit - 6].rstrip('-')}-{digest}"


@dataclass
class RenderContext:
    """One render: the resolved category plus where and on which nodes it runs."""

    r: ResolvedCategory
    name: str
    namespace: str
    nodes: list[str]
    owner: Mapping[str, Any] | None
    target: dict[str, Any]
    job: str
    group: str | None
    adapter: str
    size: int = 0
    pairwise: bool = False  # the launcher runs the per-pair bandwidth check (workloads.pairwise)
    claim_templates: dict[str, str] = field(default_factory=dict)  # claim name -> template name
    # name -> labels of the Nodes that exist now (the controller's cache); None offline.
    # Lets a large Pinned group be placed by its exceptions (workloads.placement).
    fleet: Mapping[str, Mapping[str, str]] | None = None

    @classmethod
    def build(cls, r: ResolvedCategory, *, name: str, namespace: str, nodes: list[str], owner: Any, target: Any,
              job: str | None, group: str | None, adapter: str, pairwise: bool = False,
              fleet: Mapping[str, Mapping[str, str]] | None = None) -> "RenderContext":
        base = short_name(name)
        ctx = cls(r=r, name=base, namespace=namespace, nodes=list(nodes), owner=owner, target=target_dict(target),
                  job=job or base, group=group, adapter=adapter, pairwise=pairwise, fleet=fleet)
        if r.placement == "Unpinned":
            ctx.size = r.nodes_per_job or len(nodes)
            if ctx.size < 1:
                raise UserError("placement Unpinned needs nodesPerJob (numNodes) to size the workload")
        else:
            ctx.size = len(nodes)
        if r.workload.compute_domain:
            ctx.claim_templates["compute-domain-channel"] = f"{base}-channel"
        for claim in r.workload.claims:
            ctx.claim_templates[claim["name"]] = f"{base}-{claim['name']}"
        return ctx

    @property
    def w(self) -> WorkloadSpec:
        return self.r.workload

    # -- metadata ------------------------------------------------------------
    def base_labels(self) -> dict[str, str]:
        labels = {**MANAGED_BY, LABEL_WORKLOAD: self.name, LABEL_JOB: self.job,
                  LABEL_CATEGORY: f"{self.r.domain}.{self.r.variant}"}
        if self.group:
            labels[LABEL_GROUP] = self.group
        return labels

    def meta(self, name: str, *, labels: Mapping[str, str] | None = None,
             annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": self.namespace, "labels": {**self.base_labels(), **(labels or {})}}
        if annotations:
            meta["annotations"] = dict(annotations)
        if self.owner:
            meta["ownerReferences"] = [dict(self.owner)]
        return meta

    def workload_annotations(self) -> dict[str, str]:
        """What rendered the submitted object: overrides, platform, architecture, and the
        group's nodes while the list is short (the nvcre Job's spec.nodes always has it)."""
        notes = {
            ANNOTATION_PLATFORM: self.r.platform,
            ANNOTATION_ARCH: self.r.gpu_arch,
            ANNOTATION_OVERRIDES: ",".join(self.r.applied_overrides) or "none",
        }
        if self.r.placement != "Unpinned" and len(self.nodes) <= GROUP_NODES_ANNOTATION_LIMIT:
            notes[ANNOTATION_GROUP_NODES] = ",".join(self.nodes)
        return notes

    def submitted_labels(self) -> dict[str, str]:
        """Labels of a submitted object: ours plus the workloadMetadata labels (queue included)."""
        return {**self.r.labels, **self.base_labels()}

    def template_labels(self, role: str) -> dict[str, str]:
        labels = {**self.base_labels(), LABEL_ROLE: role}
        if self.r.gang is not None:
            labels[self.r.gang.queue_label_key] = self.r.gang.queue
        return labels

    def deadline_seconds(self) -> int:
        """A backstop so a forgotten workload cannot hold GPUs forever: twice timeoutPerJob
        (the controller enforces the real timeout, which excludes time spent unscheduled)."""
        try:
            return int(parse_duration(self.r.timeout_per_job)) * 2
        except ValueError:
            return 2 * 24 * 3600

    # -- placement -----------------------------------------------------------
    def affinity(self) -> dict[str, Any] | None:
        """Required node affinity: the target's nodeSelector and matchExpressions ANDed into
        every term; when Pinned, the group's nodes (``workloads.placement``: the hostnames,
        or for a large group with known Nodes its shortest exact form, one term per part)."""
        base: list[dict[str, Any]] = []
        for key in sorted(self.target.get("nodeSelector") or {}):
            base.append({"key": key, "operator": "In", "values": [self.target["nodeSelector"][key]]})
        for expr in self.target.get("matchExpressions") or []:
            item = {"key": expr["key"], "operator": expr["operator"]}
            if expr.get("values"):
                item["values"] = list(expr["values"])
            base.append(item)
        if self.r.placement != "Unpinned":
            placed = placement(self.nodes, self.fleet, base=base)
            terms = [[req.to_dict() for req in term] + base for term in placed.terms]
        elif self.target.get("nodeNames"):
            terms = [[{"key": HOSTNAME_KEY, "operator": "In", "values": sorted(self.target["nodeNames"])}] + base]
        else:
            terms = [base] if base else []
        if not terms:
            return None
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": term} for term in terms]}}}

    def tolerations(self) -> list[dict[str, Any]]:
        """Taint selectors give exact tolerations; otherwise a Pinned MPI or per-node workload
        tolerates every taint (its nodes are named explicitly); otherwise only the named
        tolerations the catalog adds (GPU and arm64 taints)."""
        named = [dict(t) for t in self.w.tolerations]
        if self.target.get("taintSelectors"):
            return tolerations_for(self.target) + [t for t in named if t not in tolerations_for(self.target)]
        if self.r.placement != "Unpinned" and (self.w.launch == "mpi" or self.w.blanket_toleration):
            return [{"operator": "Exists"}]
        return named

    # -- the rank pod ----------------------------------------------------------
    def env_list(self) -> list[dict[str, str]]:
        return [{"name": n, "value": v} for n, v in self.w.env] + [
            {"name": n, "valueFrom": dict(ref)} for n, ref in self.w.env_refs]

    def rank_resources(self) -> dict[str, Any]:
        limits = dict(self.w.pod_resources.get("limits") or {})
        requests = dict(self.w.pod_resources.get("requests") or {})
        for name, amount in self.w.resources.items():
            limits[name] = amount
            requests[name] = amount
        out: dict[str, Any] = {}
        if limits:
            out["limits"] = limits
        if requests:
            out["requests"] = requests
        claims = [{"name": n} for n in self.claim_templates]
        if claims:
            out["claims"] = claims
        return out

    def security_context(self, extra_caps: Sequence[str] = ()) -> dict[str, Any] | None:
        caps = list(self.w.capabilities) + [c for c in extra_caps if c not in self.w.capabilities]
        ctx: dict[str, Any] = {}
        if self.w.privileged:
            ctx["privileged"] = True
        elif self.w.privileged is False:
            ctx["privileged"] = False
        if caps:
            ctx["capabilities"] = {"add": caps}
        return ctx or None

    def rank_volumes(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(pod volumes, rank container mounts): /dev/shm, host paths, user volumes."""
        volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
        mounts = [{"name": "dshm", "mountPath": "/dev/shm"}]
        for hp in self.w.host_paths:
            source = {"path": hp["path"]}
            if hp.get("type"):
                source["type"] = hp["type"]
            volumes.append({"name": hp["name"], "hostPath": source})
            mounts.append({"name": hp["name"], "mountPath": hp["mountPath"]})
        config = self.config_volume()
        if config:
            volumes.append(config[0])
            mounts.append(config[1])
        for cf in self.w.config_files:  # catalog data files, e.g. the NCCL topology at /etc/nccl
            volumes.append({"name": cf["name"], "configMap": {"name": f"{self.name}-{cf['name']}"}})
            mounts.append({"name": cf["name"], "mountPath": cf["mountPath"], "readOnly": True})
        volumes.extend(dict(v) for v in self.w.volumes)
        mounts.extend(dict(m) for m in self.w.volume_mounts)
        return volumes, mounts

    def config_volume(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """A WorkloadRun's config files at /config (mode 0755, so scripts can run)."""
        if not self.w.config:
            return None
        name = self.w.config.get("configMapRef") or f"{self.name}-config"
        return ({"name": "config-volume", "configMap": {"name": name, "defaultMode": 0o755}},
                {"name": "config-volume", "mountPath": "/config", "readOnly": True})

    def sidecar_containers(self) -> list[dict[str, Any]]:
        """Native sidecars (init containers that keep running), e.g. GCP's TCPXO daemon."""
        out = []
        paths = {hp["name"]: hp["mountPath"] for hp in self.w.host_paths}
        for sc in self.w.sidecars:
            container: dict[str, Any] = {"name": sc["name"], "image": sc["image"], "restartPolicy": "Always"}
            if sc.get("command"):
                container["command"] = list(sc["command"])
            if sc.get("args"):
                container["args"] = list(sc["args"])
            if sc.get("env"):
                container["env"] = [{"name": k, "value": str(v)} for k, v in sc["env"].items()]
            if sc.get("capabilities"):
                container["securityContext"] = {"capabilities": {"add": list(sc["capabilities"])}}
            mounts = [{"name": m, "mountPath": paths[m]} for m in sc.get("mounts") or [] if m in paths]
            if mounts:
                container["volumeMounts"] = mounts
            out.append(container)
        return out

    def pod_claims(self) -> list[dict[str, str]]:
        return [{"name": claim, "resourceClaimTemplateName": tpl} for claim, tpl in self.claim_templates.items()]

    def pod_spec_common(self, *, rank: bool) -> dict[str, Any]:
        """Pod-level fields every workload pod carries (scheduler, pull secrets, placement)."""
        spec: dict[str, Any] = {}
        if self.r.gang is not None:
            spec["schedulerName"] = self.r.gang.scheduler_name
        if self.w.image_pull_secrets:
            spec["imagePullSecrets"] = [{"name": s} for s in self.w.image_pull_secrets]
        affinity = self.affinity()
        if affinity:
            spec["affinity"] = affinity
        tolerations = self.tolerations()
        if tolerations:
            spec["tolerations"] = tolerations
        if rank and self.w.host_network:
            spec["hostNetwork"] = True
            spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        return spec

    def rank_pod(self, container: dict[str, Any], *, extra_volumes: Sequence[dict[str, Any]] = (),
                 extra_mounts: Sequence[dict[str, Any]] = (), subdomain: str | None = None) -> dict[str, Any]:
        """The pod spec around a rank container (volumes, mounts, GPU resources, init and
        sidecar containers, DRA claims), the same for both adapters. Mounts and resources
        are set on ``container`` in place."""
        volumes, mounts = self.rank_volumes()
        checkpoint = self.checkpoint_volume()
        if checkpoint:
            volumes.append(checkpoint[0])
            mounts.append(checkpoint[1])
        volumes.extend(extra_volumes)
        mounts.extend(extra_mounts)
        container["volumeMounts"] = mounts
        resources = self.rank_resources()
        if resources:
            container["resources"] = resources
        pod: dict[str, Any] = {"restartPolicy": "Never", **self.pod_spec_common(rank=True)}
        if subdomain:
            pod["subdomain"] = subdomain
        inits = self.sidecar_containers() + [dict(c) for c in self.w.init_containers]
        if self.w.init_script:
            inits.append({"name": "megatron-source", "image": self.w.image,
                          "command": ["/bin/bash", "-c", self.w.init_script],
                          "volumeMounts": [m for m in mounts if m["name"] == "workspace"]})
        if inits:
            pod["initContainers"] = inits
        pod["containers"] = [container]
        pod["volumes"] = volumes
        claims = self.pod_claims()
        if claims:
            pod["resourceClaims"] = claims
        return pod

    def pod_annotations(self) -> dict[str, str] | None:
        return dict(self.w.pod_annotations) or None

    # -- dependencies ------------------------------------------------------------
    def dependencies(self) -> list[dict[str, Any]]:
        """ComputeDomain (MNNVL) and DRA ResourceClaimTemplates, sized to this group."""
        out: list[dict[str, Any]] = []
        if self.w.compute_domain:
            out.append({
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "ComputeDomain",
                "metadata": self.meta(f"{self.name}-compute-domain"),
                "spec": {"numNodes": self.size,
                         "channel": {"resourceClaimTemplate": {"name": f"{self.name}-channel"}, "allocationMode": "Single"}},
            })
        for claim in self.w.claims:
            out.append({
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": self.meta(self.claim_templates[claim["name"]]),
                "spec": {"spec": {"devices": {"requests": [{
                    "name": claim["name"],
                    "exactly": {"deviceClassName": claim["deviceClass"], "allocationMode": "ExactCount",
                                "count": int(claim["count"])},
                }]}}},
            })
        for cf in self.w.config_files:
            out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": self.meta(f"{self.name}-{cf['name']}"),
                        "data": dict(cf["data"])})
        if self.w.config and self.w.config.get("inline"):
            out.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": self.meta(f"{self.name}-config"),
                        "data": dict(self.w.config["inline"])})
        if self.w.checkpoint:
            pvc_spec: dict[str, Any] = {"accessModes": ["ReadWriteMany"],
                                        "resources": {"requests": {"storage": self.w.checkpoint["storageSize"]}}}
            if self.w.checkpoint.get("storageClassName"):
                pvc_spec["storageClassName"] = self.w.checkpoint["storageClassName"]
            out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": self.meta(f"{self.name}-checkpoint"), "spec": pvc_spec})
        return out

    def checkpoint_volume(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        if not self.w.checkpoint:
            return None
        return ({"name": "checkpoints", "persistentVolumeClaim": {"claimName": f"{self.name}-checkpoint"}},
                {"name": "checkpoints", "mountPath": "/mnt/checkpoints"})


def shell_lines(lines: Sequence[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def wrap_with_pre_command(ctx: RenderContext, command: Sequence[str], args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Run the platform's pre-command lines, then the real command with its argv intact
    (``sh -c '<lines>; exec "$@"' <command...>``), so the pod still shows what runs."""
    if not ctx.w.pre_command:
        return list(command), list(args)
    script = shell_lines(ctx.w.pre_command) + 'exec "$@"\n'
    return ["/bin/sh", "-c", script, "nvcre-run"], [*command, *args]
