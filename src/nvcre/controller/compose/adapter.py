"""Adapter choice: which workload adapter (native MPI or Kubeflow Trainer) a Workflow renders with."""

from __future__ import annotations

from nvcre.controller.context import Context
from nvcre.controller.compose.bodies import ADAPTER_ANNOTATION
from nvcre.objpath import dig

def choose_adapter(ctx: Context) -> str:
    """native unless Kubeflow Trainer's TrainJob is installed (or the setting forces one)."""
    if ctx.settings.adapter in ("native", "trainjob"):
        return ctx.settings.adapter
    try:
        return "trainjob" if ctx.kube.kind_installed("trainer.kubeflow.org/v1alpha1", "TrainJob") else "native"
    except Exception:
        return "native"


def adapter_of(wf: dict) -> str:
    """The adapter a Workflow's Jobs render with: its template's, else its annotation's."""
    template = dig(wf, "spec", "jobTemplate", "spec") or {}
    chosen = dig(template, "workload", "native", "adapter")
    return chosen or dig(wf["metadata"].get("annotations"), ADAPTER_ANNOTATION) or "native"
