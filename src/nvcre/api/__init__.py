"""Typed models for every kind in nvcre.nvidia.com/v1alpha1 (pydantic v2).

Import kinds from here; parse user manifests with ``nvcre.api.load.parse_object``
/ ``load_file`` (clear ManifestErrors), generate CRDs with ``nvcre.api.crd``.
"""

from nvcre.api.certification import Certification, CertificationCategory, CertificationSpec, CertificationStatus
from nvcre.api.common import API_GROUP, API_VERSION, GROUP_VERSION, Condition, FailedNode, ObjectMeta, TargetSpec
from nvcre.api.job import Job, JobSpec, JobStatus
from nvcre.api.logprofile import LogProfile, LogProfileSpec
from nvcre.api.nodereadiness import NodeReadiness, NodeReadinessSpec, NodeReadinessStatus
from nvcre.api.measurement import (
    BandwidthMeasurement,
    BandwidthMeasurementSpec,
    BandwidthMeasurementStatus,
    GoodputMeasurement,
    GoodputMeasurementSpec,
    GoodputMeasurementStatus,
)
from nvcre.api.reportexport import ReportExport, ReportExportPolicy
from nvcre.api.options import CategoryOptions, EnvVar, WorkloadMetadata, merge_options
from nvcre.api.workflow import Workflow, WorkflowSpec, WorkflowStatus
from nvcre.api.workloadrun import WorkloadRun, WorkloadRunSpec, WorkloadRunStatus

KINDS = {
    cls.__name__: cls
    for cls in (
        Certification,
        Workflow,
        Job,
        WorkloadRun,
        GoodputMeasurement,
        BandwidthMeasurement,
        LogProfile,
        ReportExportPolicy,
        ReportExport,
        NodeReadiness,
    )
}
"""Every kind by name, in the order the docs list them."""

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "GROUP_VERSION",
    "KINDS",
    "BandwidthMeasurement",
    "BandwidthMeasurementSpec",
    "BandwidthMeasurementStatus",
    "CategoryOptions",
    "Certification",
    "CertificationCategory",
    "CertificationSpec",
    "CertificationStatus",
    "Condition",
    "EnvVar",
    "FailedNode",
    "GoodputMeasurement",
    "GoodputMeasurementSpec",
    "GoodputMeasurementStatus",
    "Job",
    "JobSpec",
    "JobStatus",
    "LogProfile",
    "LogProfileSpec",
    "ObjectMeta",
    "ReportExport",
    "ReportExportPolicy",
    "TargetSpec",
    "WorkloadMetadata",
    "WorkloadRun",
    "WorkloadRunSpec",
    "WorkloadRunStatus",
    "Workflow",
    "WorkflowSpec",
    "WorkflowStatus",
    "merge_options",
]
