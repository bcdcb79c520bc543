"""Where the controller composes the pure cores, one module per job:

* ``discovery``  — the nodes a target selects, GPU architecture, capacity, platform;
* ``adapter``    — which workload adapter a Workflow renders with;
* ``bodies``     — the Workflow a Certification category or a WorkloadRun becomes;
* ``resolution`` — a category resolved for this platform (and what to read for it);
* ``errors``     — PlanError and the Failed reason an error maps to.

The reconcilers stay short because every "what should this look like" question is
answered from plain data. The Workflow's plan lives in ``plan.py`` and a group's Job in
``group_job.py``. Nothing here writes to the API server; reads are limited to the
objects the answer depends on (the Workflow's source object and the cached Nodes).
This package re-exports the names the reconcilers use as ``compose.<name>``.
"""

from __future__ import annotations

from nvcre.controller.compose.adapter import adapter_of, choose_adapter
from nvcre.controller.compose.bodies import (
    ADAPTER_ANNOTATION,
    CATEGORY_INDEX,
    build_workflow,
    is_diagnose,
    workflow_for_category,
    workflow_for_run,
)
from nvcre.controller.compose.discovery import GPU_PRESENT, INCLUDE_CORDONED, Discovery, discover, gpu_nodes, include_cordoned
from nvcre.controller.compose.errors import PlanError, certification_reason_for
from nvcre.controller.compose.resolution import (
    platform_detections,
    resolve_certification_category,
    resolve_for_workflow,
)

__all__ = [
    "ADAPTER_ANNOTATION", "CATEGORY_INDEX", "GPU_PRESENT", "INCLUDE_CORDONED", "Discovery", "PlanError", "adapter_of",
    "build_workflow", "certification_reason_for", "choose_adapter", "discover", "gpu_nodes", "include_cordoned",
    "is_diagnose", "platform_detections", "resolve_certification_category", "resolve_for_workflow", "workflow_for_category",
    "workflow_for_run",
]
