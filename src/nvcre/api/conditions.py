"""Condition types and reasons per tier: the documented vocabulary of every status.

Each tier (Certification, Workflow, Job, WorkloadRun) has exactly one of the
exclusive types True at a time; the others are False with reason NotApplicable.
ValidationFailed (a threshold was missed) and HardwareFailed (a node health check
fired) sit beside them, because a run can succeed and still miss its target.
Measurements have only Measuring and Complete. Reasons are the reference's, so
tools written against it read our statuses unchanged.
"""

from __future__ import annotations

# ---- condition types ----------------------------------------------------------
IN_PROGRESS = "InProgress"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
EXCLUSIVE_TYPES = (IN_PROGRESS, SUCCEEDED, FAILED)
"""Exactly one is True at every tier; writing one sets the other two False."""

VALIDATION_FAILED = "ValidationFailed"
"""Additive: True when a measurement missed its threshold (Job, Workflow, WorkloadRun)."""
HARDWARE_FAILED = "HardwareFailed"
"""Additive: True when a node health check fired while the workload ran (Job)."""
HEALTH_CHECK_ERROR = "NodeHealthMonitorError"
"""Additive: True when a node health detector could not be evaluated on some node (Job).
Such a detector cannot fire there, so the run says so instead of staying silent."""

MEASURING = "Measuring"
COMPLETE = "Complete"
MEASUREMENT_TYPES = (MEASURING, COMPLETE)

NOT_APPLICABLE = "NotApplicable"


def phase_of(conditions: list[dict] | None) -> str | None:
    """The exclusive phase whose condition is True (Failed wins if a writer broke exclusivity).

    The one reading of a phase from raw conditions, for the controller and the report alike.
    """
    for ctype in (FAILED, SUCCEEDED, IN_PROGRESS):
        for cond in conditions or []:
            if cond.get("type") == ctype and str(cond.get("status")) == "True":
                return ctype
    return None
"""Reason on the exclusive types that are not the current phase."""


class CertificationReasons:
    """Reasons on a Certification's exclusive conditions."""

    WAITING_FOR_NODES = "WaitingForNodes"  # InProgress: no schedulable target node yet (retried 5 minutes)
    WORKFLOW_CREATED = "WorkflowCreated"  # InProgress: "Created Workflow for category D/V (i of N)"
    WORKFLOW_RUNNING = "WorkflowRunning"  # InProgress: a category's Workflow is running or advancing
    ALL_WORKFLOWS_SUCCEEDED = "AllWorkflowsSucceeded"  # Succeeded
    WORKFLOW_FAILED = "WorkflowFailed"  # Failed: one or more categories failed, or a Workflow create was refused
    CATEGORY_NOT_FOUND = "CategoryNotFound"  # Failed: domain/variant not in the catalog (checked before anything runs)
    WORKFLOW_NAME_COLLISION = "WorkflowNameCollision"  # Failed: a foreign object holds the Workflow's name
    WORKFLOW_VALIDATION_FAILED = "WorkflowValidationFailed"  # Failed: build/resolution error (no GPU arch, no nodes, ...)

    IN_PROGRESS = (WAITING_FOR_NODES, WORKFLOW_CREATED, WORKFLOW_RUNNING)
    SUCCEEDED = (ALL_WORKFLOWS_SUCCEEDED,)
    FAILED = (WORKFLOW_FAILED, CATEGORY_NOT_FOUND, WORKFLOW_NAME_COLLISION, WORKFLOW_VALIDATION_FAILED)


class WorkflowReasons:
    """Reasons on a Workflow's conditions."""

    GROUPS_PARTITIONED = "GroupsPartitioned"  # InProgress: "Discovered N nodes, partitioned into G groups"
    JOB_CREATED = "JobCreated"  # InProgress: Jobs launched for an iteration
    JOB_RUNNING = "JobRunning"  # InProgress: polling Jobs
    JOB_SCHEDULING_BLOCKED = "JobSchedulingBlocked"  # InProgress: a group's pods are unschedulable
    ITERATION_COMPLETED = "IterationCompleted"  # InProgress: next iteration or diagnose round starting
    NAMESPACE_PERMISSIONS_MISSING = "NamespacePermissionsMissing"  # InProgress: no write access in the namespace yet
    ISOLATING_FAULTS = "IsolatingFaults"  # InProgress: a child diagnose narrows failed groups down to nodes
    JOB_COMPLETED = "JobCompleted"  # Succeeded
    ITERATIONS_FAILED = "IterationsFailed"  # Failed: groups failed (also diagnose-confirmed faults)
    JOB_HARDWARE_FAILED = "JobHardwareFailed"  # Failed: as above with hardware failures (takes precedence)
    JOB_VALIDATION_FAILED = "JobValidationFailed"  # Failed: only threshold misses; also the ValidationFailed reason
    NODE_DISCOVERY_ERROR = "NodeDiscoveryError"  # Failed: discovery failed or found no target nodes
    HETEROGENEOUS_PLATFORM = "HeterogeneousPlatform"  # Failed: target nodes on different platforms
    OVERRIDE_ERROR = "OverrideError"  # Failed: an override could not be applied
    CHECKPOINT_PVC_MISSING = "CheckpointPVCMissing"  # Failed: checkpoint PVC not among the dependencies
    PARTITION_ERROR = "PartitionError"  # Failed: no capable nodes, or size larger than the nodes found
    DEPENDENCY_CREATION_ERROR = "DependencyCreationError"  # Failed: a dependency could not be created
    DEPENDENCY_NAME_COLLISION = "DependencyNameCollision"  # Failed: foreign object holds a dependency's name
    JOB_NAME_COLLISION = "JobNameCollision"  # Failed: foreign object holds a Job's name
    GANG_SCHEDULING_CONFLICT = "GangSchedulingConflict"  # Failed: template disagrees with spec.gangScheduler

    IN_PROGRESS = (
        GROUPS_PARTITIONED,
        JOB_CREATED,
        JOB_RUNNING,
        JOB_SCHEDULING_BLOCKED,
        ITERATION_COMPLETED,
        NAMESPACE_PERMISSIONS_MISSING,
        ISOLATING_FAULTS,
    )
    SUCCEEDED = (JOB_COMPLETED,)
    FAILED = (
        ITERATIONS_FAILED,
        JOB_HARDWARE_FAILED,
        JOB_VALIDATION_FAILED,
        NODE_DISCOVERY_ERROR,
        HETEROGENEOUS_PLATFORM,
        OVERRIDE_ERROR,
        CHECKPOINT_PVC_MISSING,
        PARTITION_ERROR,
        DEPENDENCY_CREATION_ERROR,
        DEPENDENCY_NAME_COLLISION,
        JOB_NAME_COLLISION,
        GANG_SCHEDULING_CONFLICT,
    )
    VALIDATION_FAILED = (JOB_VALIDATION_FAILED,)


class JobReasons:
    """Reasons on a Job's conditions."""

    WORKLOAD_CREATED = "WorkloadCreated"  # InProgress
    WORKLOAD_ADOPTED = "WorkloadAdopted"  # InProgress: took back a workload whose ref write was lost
    WORKLOAD_PENDING = "WorkloadPending"  # InProgress: suspended/queued; clocks do not run
    WORKLOAD_RUNNING = "WorkloadRunning"  # InProgress: first observation stamps workloadStartTime
    WORKLOAD_SCHEDULING_BLOCKED = "WorkloadSchedulingBlocked"  # InProgress: pods unschedulable past the grace
    WORKLOAD_RESTARTING = "WorkloadRestarting"  # InProgress: restarting from checkpoint
    WORKLOAD_COMPLETED = "WorkloadCompleted"  # Succeeded
    WORKLOAD_FAILED = "WorkloadFailed"  # Failed: workload failed or was deleted
    WORKLOAD_STALLED = "WorkloadStalled"  # Failed: no training step within the budget
    WORKLOAD_STARTUP_STALLED = "WorkloadStartupStalled"  # Failed: a container never started (image pull, mounts)
    WORKLOAD_PLACED_OFF_GROUP = "WorkloadPlacedOffGroup"  # Failed: a rank landed outside the pinned group; nobody blamed
    WORKLOAD_CREATION_ERROR = "WorkloadCreationError"  # Failed: the workload could not be built
    JOB_TIMED_OUT = "JobTimedOut"  # Failed: exceeded timeoutPerJob (written by the Workflow)
    HARDWARE_FAILURE_DETECTED = "HardwareFailureDetected"  # HardwareFailed=True
    DETECTOR_EVALUATION_FAILED = "DetectorEvaluationFailed"  # NodeHealthMonitorError=True: an error on some node
    DETECTOR_INVALID = "DetectorInvalid"  # NodeHealthMonitorError=True: the expression does not compile
    THRESHOLD_VIOLATED = "ThresholdViolated"  # ValidationFailed=True: a measured value missed its expression
    INVALID_THRESHOLD_EXPRESSION = "InvalidThresholdExpression"  # ValidationFailed=True
    UNKNOWN_THRESHOLD_KEY = "UnknownThresholdKey"  # ValidationFailed=True (checked before waiting)
    MEASUREMENT_TIMEOUT = "MeasurementTimeout"  # ValidationFailed=True: no data within measurementTimeout
    THRESHOLDS_MET = "ThresholdsMet"  # ValidationFailed=False

    IN_PROGRESS = (
        WORKLOAD_CREATED,
        WORKLOAD_ADOPTED,
        WORKLOAD_PENDING,
        WORKLOAD_RUNNING,
        WORKLOAD_SCHEDULING_BLOCKED,
        WORKLOAD_RESTARTING,
    )
    SUCCEEDED = (WORKLOAD_COMPLETED,)
    FAILED = (WORKLOAD_FAILED, WORKLOAD_STALLED, WORKLOAD_STARTUP_STALLED, WORKLOAD_CREATION_ERROR, JOB_TIMED_OUT,
              WORKLOAD_SCHEDULING_BLOCKED, WORKLOAD_PLACED_OFF_GROUP)
    HARDWARE_FAILED = (HARDWARE_FAILURE_DETECTED,)
    VALIDATION_FAILED = (THRESHOLD_VIOLATED, INVALID_THRESHOLD_EXPRESSION, UNKNOWN_THRESHOLD_KEY, MEASUREMENT_TIMEOUT)
    VALIDATION_PASSED = (THRESHOLDS_MET,)


class WorkloadRunReasons:
    """Reasons on a WorkloadRun's conditions (mirrored from its Workflow)."""

    WORKFLOW_CREATED = "WorkflowCreated"  # InProgress
    WORKFLOW_SUCCEEDED = "WorkflowSucceeded"  # Succeeded
    WORKFLOW_FAILED = "WorkflowFailed"  # Failed: with the Workflow's message
    WORKFLOW_VALIDATION_FAILED = "WorkflowValidationFailed"  # Failed: the Workflow failed on thresholds only
    WORKFLOW_DELETED = "WorkflowDeleted"  # Failed
    BUILD_FAILED = "BuildFailed"  # Failed: the run could not be built (reserved volume name, no framework, ...)
    THRESHOLD_VIOLATION = "ThresholdViolation"  # ValidationFailed=True, mirrors the Workflow

    IN_PROGRESS = (WORKFLOW_CREATED,)
    SUCCEEDED = (WORKFLOW_SUCCEEDED,)
    FAILED = (WORKFLOW_FAILED, WORKFLOW_VALIDATION_FAILED, WORKFLOW_DELETED, BUILD_FAILED)
    VALIDATION_FAILED = (THRESHOLD_VIOLATION,)


class MeasurementReasons:
    """Reasons on Complete for Bandwidth/GoodputMeasurement."""

    JOB_SUCCEEDED = "JobSucceeded"  # final results; thresholds read them
    NO_DATA_COLLECTED = "NoDataCollected"
    LOGS_UNAVAILABLE = "LogsUnavailable"  # provisional results; not judged
    JOB_FAILED = "JobFailed"
    FINAL_READ_PENDING = "FinalReadPending"  # Measuring=False while the final read is retried


class FailedNodeReasons:
    """FailedNode.reason values. Note the Job condition says ThresholdViolated; a node says ThresholdViolation."""

    WORKLOAD_FAILED = "WorkloadFailed"
    THRESHOLD_VIOLATION = "ThresholdViolation"
    HARDWARE_FAILURE_DETECTED = "HardwareFailureDetected"
    ALL = (WORKLOAD_FAILED, THRESHOLD_VIOLATION, HARDWARE_FAILURE_DETECTED)


class ExclusionReasons:
    """ExcludedNode.reason values the controllers write (our extension)."""

    CORDONED = "Cordoned"
    HETEROGENEOUS_GPU = "HeterogeneousGPU"  # not the majority GPU architecture
    INSUFFICIENT_GPU_CAPACITY = "InsufficientGPUCapacity"  # allocatable GPUs below gpusPerNode
    NOT_READY = "NotReady"


REASONS_BY_TIER = {
    "Certification": CertificationReasons,
    "Workflow": WorkflowReasons,
    "Job": JobReasons,
    "WorkloadRun": WorkloadRunReasons,
}
"""Tier name -> its reasons class (each has IN_PROGRESS, SUCCEEDED and FAILED tuples)."""
