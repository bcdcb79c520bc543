"""What the controller creates from a Job's spec: namespaced workload kinds, nothing else.

Defence in depth behind the chart's admission policy (docs/security.md): whatever a Job's
``spec.workload`` holds, the controller creates only the kinds its adapters render, all
namespaced, always in the Job's own namespace. A cluster-scoped object, an RBAC object or
any other kind is refused before anything is created, and the Job fails with
WorkloadCreationError naming the object, instead of retrying forever.
"""

from __future__ import annotations

from collections.abc import Iterable

from nvcre.kube.resources import InvalidName, check_name
from nvcre.objpath import dig

TRAINER_API = "trainer.kubeflow.org/v1alpha1"

# (apiVersion, kind) the native and trainjob adapters render; every one is namespaced.
CREATABLE: frozenset[tuple[str, str]] = frozenset({
    ("batch/v1", "Job"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "PersistentVolumeClaim"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
    ("resource.nvidia.com/v1beta1", "ComputeDomain"),
    (TRAINER_API, "TrainJob"),
    (TRAINER_API, "TrainingRuntime"),
})


def refusal(objects: Iterable[dict]) -> str | None:
    """Why these objects must not be created (the first offender), or None when all may be."""
    for index, obj in enumerate(objects):
        if not isinstance(obj, dict):
            return f"spec.workload.native.objects[{index}] is not an object"
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        name = dig(obj, "metadata", "name") if isinstance(obj.get("metadata"), dict) else None
        if not isinstance(api_version, str) or not isinstance(kind, str) or not isinstance(name, str) or not name:
            return f"spec.workload.native.objects[{index}] ({api_version} {kind}) needs apiVersion, kind and metadata.name"
        if (api_version, kind) not in CREATABLE:
            allowed = ", ".join(sorted(f"{k} ({v})" for v, k in CREATABLE))
            return (f"spec.workload.native.objects[{index}] ({api_version} {kind} {name}): the controller creates only "
                    f"namespaced workload kinds from a spec ({allowed}); cluster-scoped, RBAC and other kinds are refused")
        try:
            check_name(name, kind)
        except InvalidName as err:
            return f"spec.workload.native.objects[{index}].metadata.name: {err.message}"
    return None
