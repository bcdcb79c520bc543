"""Where each kind lives on the API server: group, version, plural, scope.

The client speaks raw REST paths so one code path serves core kinds, nvcre kinds
and optional third-party kinds (TrainJob) alike; this table is what turns an
``(apiVersion, kind)`` pair into such a path.
"""

from __future__ import annotations

from dataclasses import dataclass

NVCRE_GROUP = "nvcre.nvidia.com"
NVCRE_VERSION = "v1alpha1"
NVCRE_API_VERSION = f"{NVCRE_GROUP}/{NVCRE_VERSION}"


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
        root = f"/apis/{self.api_version}" if "/" in self.api_version else f"/api/{self.api_version}"
        if self.namespaced and namespace:
            return f"{root}/namespaces/{namespace}/{self.plural}"
        return f"{root}/{self.plural}"

    def item_path(self, name: str, namespace: str | None) -> str:
        return f"{self.collection_path(namespace)}/{name}"


_KNOWN = [
    Resource(NVCRE_API_VERSION, "Certification", "certifications"),
    Resource(NVCRE_API_VERSION, "Workflow", "workflows"),
    Resource(NVCRE_API_VERSION, "Job", "jobs"),
    Resource(NVCRE_API_VERSION, "WorkloadRun", "workloadruns"),
    Resource(NVCRE_API_VERSION, "GoodputMeasurement", "goodputmeasurements"),
    Resource(NVCRE_API_VERSION, "BandwidthMeasurement", "bandwidthmeasurements"),
    Resource(NVCRE_API_VERSION, "LogProfile", "logprofiles", namespaced=False),
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
