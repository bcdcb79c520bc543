"""Gang scheduling: opt every workload pod into a gang-aware scheduler.

Shared by Certification, Workflow and WorkloadRun. Without a gang scheduler a
partially placed multi-node job can hold GPUs while its peers never arrive.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, StringConstraints, field_validator, model_validator

from nvcre.api.common import QUALIFIED_NAME_PATTERN, ApiModel, FieldProblem, cel

DEFAULT_QUEUE = "default-queue"
DEFAULT_QUEUE_LABEL_KEY = "kai.scheduler/queue"
QUEUE_PATTERN = r"^$|^[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?$"
# "" is allowed and means DEFAULT_QUEUE_LABEL_KEY (the reference defaults an empty key).
QUEUE_LABEL_KEY_PATTERN = "^$|" + QUALIFIED_NAME_PATTERN


class GangSchedulerSpec(ApiModel):
    """Which gang scheduler places the workload pods, and the queue they go to."""

    scheduler_name: Annotated[str, StringConstraints(min_length=1, max_length=253)] = Field(
        description="Scheduler for every workload pod, e.g. kai-scheduler or runai-scheduler."
    )
    queue: Annotated[str, StringConstraints(max_length=63, pattern=QUEUE_PATTERN)] = Field(
        DEFAULT_QUEUE, description="Queue written under queueLabelKey on the workload object and its templates."
    )
    queue_label_key: Annotated[str, StringConstraints(max_length=317, pattern=QUEUE_LABEL_KEY_PATTERN)] = Field(
        DEFAULT_QUEUE_LABEL_KEY,
        description="Label key that carries the queue (kai.scheduler/queue; runai/queue on Run:ai). "
        "Empty means the default, as in the reference.",
    )

    @field_validator("queue_label_key", mode="after")
    @classmethod
    def _empty_is_default(cls, value: str) -> str:
        return value or DEFAULT_QUEUE_LABEL_KEY

    @classmethod
    def cel_rules(cls) -> list[dict[str, str]]:
        return [
            cel(
                "!self.queueLabelKey.contains('/') || self.queueLabelKey.matches('^[^/]{1,253}/')",
                "queueLabelKey prefix must be at most 253 characters",
                field_path=".queueLabelKey",
            ),
            cel(
                "self.queueLabelKey != 'app.kubernetes.io/managed-by' && !self.queueLabelKey.startsWith('nvcre.nvidia.com/')",
                "queueLabelKey must not be app.kubernetes.io/managed-by or under nvcre.nvidia.com/",
                field_path=".queueLabelKey",
            ),
        ]

    @model_validator(mode="after")
    def _check_key(self) -> "GangSchedulerSpec":
        key = self.queue_label_key
        if "/" in key and len(key.split("/")[0]) > 253:
            raise FieldProblem("queueLabelKey", "queueLabelKey prefix must be at most 253 characters")
        if key == "app.kubernetes.io/managed-by" or key.startswith("nvcre.nvidia.com/"):
            raise FieldProblem("queueLabelKey", "queueLabelKey must not be app.kubernetes.io/managed-by or under nvcre.nvidia.com/")
        if not re.fullmatch(QUALIFIED_NAME_PATTERN, key):  # pragma: no cover - the field pattern already checks
            raise FieldProblem("queueLabelKey", "queueLabelKey must be a qualified label key")
        return self
