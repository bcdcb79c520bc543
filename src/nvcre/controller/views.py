"""Typed views of the status dicts the reconcilers read and write.

The API server hands out plain dicts and the status writes send them back, so the
reconcilers keep dicts (no conversion per pass: a 4096-node status stays a dict); these
TypedDicts name their shape for readers and the type checker. They are checked against
the ``nvcre.api`` models, the schema the CRDs are generated from: every key here is a
field of the model (``tests/unit/controller/test_views.py``), and the statuses the
reconcilers write validate against the models (``test_object_sizes.py``).
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from nvcre.objpath import dig


class FailedNode(TypedDict, total=False):
    name: str
    reason: str
    message: str


class ObjectRef(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    namespace: str


class Condition(TypedDict, total=False):
    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str
    observedGeneration: int


class JobStatusView(TypedDict, total=False):
    conditions: list[Condition]
    phase: str
    failedNodes: list[FailedNode]
    failedNodeCount: int
    workloadRef: ObjectRef
    workloadStartTime: str
    schedulingBlockedSince: str
    schedulingResumedTime: str
    restartCount: int
    failureLog: dict[str, Any]
    nodesRan: list[str]
    measurements: dict[str, Any]


class GroupView(TypedDict, total=False):
    name: str
    nodes: list[str]
    phase: str
    retries: int
    jobRef: ObjectRef
    startTime: str
    completionTime: str
    bandwidth: list[dict[str, Any]]
    transport: str


class OrchestrationStatusView(TypedDict, total=False):
    groups: list[GroupView]
    currentIteration: int
    completedIterations: int
    totalNodes: int
    totalGroups: int
    nodesPerJob: int
    testScale: str
    placement: str
    iterationHistory: list[dict[str, Any]]
    isolation: dict[str, Any]
    diagnose: dict[str, Any]
    exercisedNodes: list[str]


class WorkflowStatusView(TypedDict, total=False):
    conditions: list[Condition]
    phase: str
    orchestration: OrchestrationStatusView
    failedNodes: list[FailedNode]
    failedNodeCount: int
    failedGroups: list[dict[str, Any]]
    summary: dict[str, str]
    bandwidth: list[dict[str, Any]]
    transport: list[str]
    startTime: str
    completionTime: str
    failedNodesRef: dict[str, str]
    succeededNodesRef: dict[str, str]


class CategoryView(TypedDict, total=False):
    domain: str
    variant: str
    status: str
    workflowRef: dict[str, str]
    succeededNodesRef: dict[str, str]
    failedNodesRef: dict[str, str]
    startTime: str
    completionTime: str
    testScale: str
    nodesPerJob: int
    jobs: int
    failedNodeCount: int
    validationFailed: bool
    message: str
    statusDetail: str


class CertificationStatusView(TypedDict, total=False):
    conditions: list[Condition]
    phase: str
    summary: dict[str, Any]
    platform: str
    gpuArchitecture: str
    totalNodes: int
    excludedNodes: list[dict[str, str]]
    categoryStatuses: list[CategoryView]
    failedNodes: list[FailedNode]


def certification_status(cert: dict | None) -> CertificationStatusView:
    return cast(CertificationStatusView, dig(cert, "status") or {})


def job_status(job: dict | None) -> JobStatusView:
    """The Job's status as a view (an empty one when absent); the same dict, not a copy."""
    return cast(JobStatusView, dig(job, "status") or {})


def workflow_status(wf: dict | None) -> WorkflowStatusView:
    return cast(WorkflowStatusView, dig(wf, "status") or {})


def orchestration(wf: dict | None) -> OrchestrationStatusView:
    return cast(OrchestrationStatusView, dig(wf, "status", "orchestration") or {})
