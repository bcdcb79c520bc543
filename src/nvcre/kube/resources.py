"""Where each kind lives on the API server: group, version, plural, scope.

The client speaks raw REST paths so one code path serves core kinds, nvcre kinds
and optional third-party kinds (TrainJob) alike; this table is what turns an
``(apiVersion, kind)`` pair into such a path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

from nvcre.errors import UserError

NVCRE_GROUP = "nvcre.nvidia.com"
NVCRE_VERSION = "v1alpha1"
NVCRE_API_VERSION = f"{NVCRE_GROUP}/{NVCRE_VERSION}"


DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# RBAC names are path segments (``system:controller:x``), not DNS subdomains.
_PATH_SEGMENT_KINDS = frozenset({"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"})


class InvalidName(UserError, ValueError):
    """A name or namespace that cannot be an object's: refused before any request is sent."""


def check_namespace(namespace: str) -> str:
    """``namespace`` if it is a DNS label (what the API server allows), else InvalidName."""
    if not isinstance(namespace, str) or len(namespace) > 63 or not DNS_LABEL.fullmatch(namespace):
        raise InvalidName(f"namespace {namespace!r} is not a valid namespace name (a DNS label: lower-case letters, "
                          "digits and '-', starting and ending with a letter or digit, at most 63 characters)")
    return namespace


def check_name(name: str, kind: str = "") -> str:
    """``name`` if the API server could hold an object of ``kind`` under it, else InvalidName."""
    what = f"{kind} name" if kind else "name"
    if not isinstance(name, str) or not name:
        raise InvalidName(f"{what} must not be empty")
    if kind in _PATH_SEGMENT_KINDS:
        if len(name) > 253 or name in (".", "..") or "/" in name or "%" in name:
            raise InvalidName(f"{what} {name!r} is not a valid path segment name (no '/', '%', '.' or '..')")
        return name
    if len(name) > 253 or not DNS_SUBDOMAIN.fullmatch(name):
        raise InvalidName(f"{what} {name!r} is not a valid object name (a DNS subdomain: lower-case letters, digits, "
                          "'-' and '.', starting and ending with a letter or digit, at most 253 characters)")
    return name


def _api_root(api_version: str) -> str:
    """/api/<v> or /apis/<group>/<v>, for a group that is a DNS subdomain and a DNS-label version."""
    group, _, version = api_version.rpartition("/")
    if not DNS_LABEL.fullmatch(version) or (group and not DNS_SUBDOMAIN.fullmatch(group)) or api_version.count("/") > 1:
        raise InvalidName(f"apiVersion {api_version!r} is not group/version or version")
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


@dataclass(frozen=True)
class Resource:
    """One REST resource: enough to build its collection and item paths."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def group(self) -> str:
        return self.api_version.split("/")[0] if "/" in self.api_version else ""

    def collection_path(self, namespace: str | None) -> str:
        """The collection URL path; a namespace must be a DNS label and is escaped anyway."""
        root = _api_root(self.api_version)
        if not DNS_LABEL.fullmatch(self.plural):
            raise InvalidName(f"kind {self.kind!r} does not name a resource (letters and digits only)")
        if self.namespaced and namespace:
            return f"{root}/namespaces/{quote(check_namespace(namespace), safe='')}/{quote(self.plural, safe='')}"
        return f"{root}/{quote(self.plural, safe='')}"

    def item_path(self, name: str, namespace: str | None) -> str:
        """The item URL path: the name is validated for the kind and escaped, so no value can
        reach another path (``../``, ``%2F``, ``kube-system/secrets/x``) or the collection."""
        return f"{self.collection_path(namespace)}/{quote(check_name(name, self.kind), safe='')}"


_KNOWN = [
    Resource(NVCRE_API_VERSION, "Certification", "certifications"),
    Resource(NVCRE_API_VERSION, "Workflow", "workflows"),
    Resource(NVCRE_API_VERSION, "Job", "jobs"),
    Resource(NVCRE_API_VERSION, "WorkloadRun", "workloadruns"),
    Resource(NVCRE_API_VERSION, "GoodputMeasurement", "goodputmeasurements"),
    Resource(NVCRE_API_VERSION, "BandwidthMeasurement", "bandwidthmeasurements"),
    Resource(NVCRE_API_VERSION, "LogProfile", "logprofiles", namespaced=False),
    Resource(NVCRE_API_VERSION, "ReportExportPolicy", "reportexportpolicies"),
    Resource(NVCRE_API_VERSION, "ReportExport", "reportexports"),
    Resource(NVCRE_API_VERSION, "NodeReadiness", "nodereadinesses"),
    Resource("v1", "Node", "nodes", namespaced=False),
    Resource("v1", "Namespace", "namespaces", namespaced=False),
    Resource("v1", "Pod", "pods"),
    Resource("v1", "Service", "services"),
    Resource("v1", "ConfigMap", "configmaps"),
    Resource("v1", "Secret", "secrets"),
    Resource("v1", "ServiceAccount", "serviceaccounts"),
    Resource("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    Resource("v1", "Event", "events"),
    Resource("batch/v1", "Job", "jobs"),
    Resource("apps/v1", "Deployment", "deployments"),
    Resource("rbac.authorization.k8s.io/v1", "Role", "roles"),
    Resource("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings"),
    Resource("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False),
    Resource("resource.k8s.io/v1", "ResourceSlice", "resourceslices", namespaced=False),
    Resource("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates"),
    Resource("resource.nvidia.com/v1beta1", "ComputeDomain", "computedomains"),
    Resource("trainer.kubeflow.org/v1alpha1", "TrainJob", "trainjobs"),
    Resource("trainer.kubeflow.org/v1alpha1", "TrainingRuntime", "trainingruntimes"),
    Resource("trainer.kubeflow.org/v1alpha1", "ClusterTrainingRuntime", "clustertrainingruntimes", namespaced=False),
]
_BY_KEY = {(r.api_version, r.kind): r for r in _KNOWN}


def resource_for(api_version: str, kind: str) -> Resource:
    """The REST resource of a kind; unknown kinds get the conventional lower-case plural."""
    found = _BY_KEY.get((api_version, kind))
    if found is not None:
        return found
    plural = kind.lower()
    plural = plural[:-1] + "ies" if plural.endswith("y") else plural + ("es" if plural.endswith("s") else "s")
    return Resource(api_version, kind, plural)


def nvcre(kind: str) -> Resource:
    """The REST resource of one of our own kinds."""
    return resource_for(NVCRE_API_VERSION, kind)
