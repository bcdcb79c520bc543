"""What makes a top-level kind: apiVersion, kind, metadata, spec, status, and its CRD facts.

Each kind class declares its CRD facts (plural, short names, scope, printer
columns, immutability rules) next to its model, so ``crd.py`` generates the
CRD from one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field

from nvcre.api.common import GROUP_VERSION, ApiModel, ObjectMeta


@dataclass(frozen=True)
class PrinterColumn:
    """One ``kubectl get`` column."""

    name: str
    json_path: str
    type: str = "string"
    description: str = ""
    priority: int = 0

    def to_k8s(self) -> dict[str, Any]:
        column: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description:
            column["description"] = self.description
        if self.priority:
            column["priority"] = self.priority
        return column


AGE = PrinterColumn("Age", ".metadata.creationTimestamp", "date")
#: The phase column of the four kinds that run something (Certification, Workflow, Job, WorkloadRun).
RUN_PHASE = PrinterColumn("Phase", ".status.phase", description="Pending, InProgress, Succeeded or Failed")
#: Nodes a Workflow, Job or WorkloadRun found faulty.
FAILED_NODES = PrinterColumn("Failed-Nodes", ".status.failedNodeCount", "integer")


@dataclass(frozen=True)
class CrdInfo:
    """The CRD-level facts about a kind."""

    plural: str
    singular: str
    short_names: tuple[str, ...]
    scope: str = "Namespaced"
    has_status: bool = True
    columns: tuple[PrinterColumn, ...] = ()
    spec_rules: tuple[dict[str, str], ...] = field(default_factory=tuple)
    categories: tuple[str, ...] = ("nvcre",)


class KubeObject(ApiModel):
    """Fields every top-level object has. Subclasses narrow ``kind`` and type spec/status."""

    api_version: str = Field(GROUP_VERSION, description="nvcre.nvidia.com/v1alpha1")
    kind: str
    metadata: ObjectMeta

    crd: ClassVar[CrdInfo]

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace
