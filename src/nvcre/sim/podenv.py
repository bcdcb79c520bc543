"""What a container sees: its environment and the files its volumes mount.

The kubelet resolves ``env``/``envFrom`` (values, fieldRefs, ConfigMap and Secret
references) and reads ConfigMap/Secret volumes so the emulators can follow a
script file or an MPI hostfile the pod mounts. ``$(VAR)`` is expanded the way
Kubernetes does in command, args and env values.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from nvcre.sim.apiclient import ApiClient
from nvcre.sim.platforms import is_rdma_resource

_K8S_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand_k8s(text: str, env: dict[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion in command, args and env values (``$$`` escapes)."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _K8S_VAR.sub(sub, text)


def _requests(container: dict[str, Any]) -> dict[str, str]:
    resources = container.get("resources") or {}
    merged = dict(resources.get("requests") or {})
    merged.update(resources.get("limits") or {})
    return merged


def pod_requests_rdma(pod: dict[str, Any]) -> bool:
    """Whether a pod gets RDMA NICs: an RDMA extended resource or /dev/infiniband mounted."""
    spec = pod.get("spec", {})
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if any(is_rdma_resource(name) for name in _requests(c)):
            return True
    for volume in spec.get("volumes") or []:
        if (volume.get("hostPath") or {}).get("path", "").startswith("/dev/infiniband"):
            return True
    return bool(spec.get("resourceClaims"))


def pod_gpus(pod: dict[str, Any]) -> int:
    total = 0
    for c in pod.get("spec", {}).get("containers") or []:
        value = _requests(c).get("nvidia.com/gpu")
        if value and str(value).isdigit():
            total += int(value)
    return total


async def fetch_files(api: ApiClient, pod: dict[str, Any]) -> dict[str, str]:
    """Files from ConfigMap/Secret volumes, by the path each container mounts them at."""
    ns = pod["metadata"]["namespace"]
    volumes: dict[str, dict[str, str]] = {}
    for volume in pod["spec"].get("volumes") or []:
        sources = []
        if "configMap" in volume:
            sources.append(("configmaps", volume["configMap"]))
        if "secret" in volume:
            sources.append(("secrets", {**volume["secret"], "name": volume["secret"].get("secretName")}))
        for projected in (volume.get("projected") or {}).get("sources") or []:
            if "configMap" in projected:
                sources.append(("configmaps", projected["configMap"]))
            if "secret" in projected:
                sources.append(("secrets", projected["secret"]))
        files: dict[str, str] = {}
        for kind, ref in sources:
            obj = await api.get(f"/api/v1/namespaces/{ns}/{kind}/{ref.get('name')}", ok_missing=True)
            if not obj:
                continue
            data = dict(obj.get("data") or {})
            if kind == "secrets":
                data = {k: base64.b64decode(v).decode(errors="replace") for k, v in data.items()}
            items = ref.get("items")
            if items:
                for item in items:
                    if item.get("key") in data:
                        files[item.get("path", item["key"])] = data[item["key"]]
            else:
                files.update(data)
        volumes[volume["name"]] = files
    out: dict[str, str] = {}
    for c in (pod["spec"].get("containers") or []) + (pod["spec"].get("initContainers") or []):
        for mount in c.get("volumeMounts") or []:
            files = volumes.get(mount.get("name"), {})
            base = mount["mountPath"].rstrip("/")
            sub = mount.get("subPath")
            for key, text in files.items():
                if sub:
                    if key == sub:
                        out[base] = text
                else:
                    out[f"{base}/{key}"] = text
    return out

async def container_env(api: ApiClient, pod: dict[str, Any], container: dict[str, Any], ip: str) -> dict[str, str]:
    """The environment a container sees: envFrom, env values, valueFrom references."""
    meta, spec = pod["metadata"], pod["spec"]
    ns = meta["namespace"]
    env: dict[str, str] = {"HOSTNAME": spec.get("hostname") or meta["name"]}

    async def fetch(kind: str, name: str) -> dict[str, str]:
        obj = await api.get(f"/api/v1/namespaces/{ns}/{kind}/{name}", ok_missing=True) or {}
        data = dict(obj.get("data") or {})
        if kind == "secrets":
            data = {k: base64.b64decode(v).decode(errors="replace") for k, v in data.items()}
        return data

    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        if "configMapRef" in source:
            data = await fetch("configmaps", source["configMapRef"]["name"])
        elif "secretRef" in source:
            data = await fetch("secrets", source["secretRef"]["name"])
        else:
            data = {}
        env.update({prefix + k: v for k, v in data.items()})
    for item in container.get("env") or []:
        name = item["name"]
        if "value" in item:
            env[name] = expand_k8s(str(item["value"]), env)
            continue
        ref = item.get("valueFrom") or {}
        if "fieldRef" in ref:
            env[name] = field_ref(pod, ref["fieldRef"].get("fieldPath", ""), ip)
        elif "configMapKeyRef" in ref:
            env[name] = (await fetch("configmaps", ref["configMapKeyRef"]["name"])).get(ref["configMapKeyRef"]["key"], "")
        elif "secretKeyRef" in ref:
            env[name] = (await fetch("secrets", ref["secretKeyRef"]["name"])).get(ref["secretKeyRef"]["key"], "")
        elif "resourceFieldRef" in ref:
            env[name] = str(_requests(container).get(ref["resourceFieldRef"].get("resource", "").split(".", 1)[-1], ""))
        else:
            env[name] = ""
    return env

def field_ref(pod: dict[str, Any], path: str, ip: str) -> str:
    """A downward-API fieldRef value."""
    meta, spec = pod["metadata"], pod["spec"]
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", ""),
        "status.podIP": ip,
        "status.hostIP": "127.0.0.1",
    }
    if path in simple:
        return simple[path]
    match = re.match(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if match:
        return (meta.get(match.group(1)) or {}).get(match.group(2), "")
    return ""
