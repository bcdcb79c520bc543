"""NodeReadiness: what one node proved, kept across runs (our extension).

Written by the controller, in its own namespace, as each Workflow of a Certification
ends; it survives the deletion of the run's namespace and never touches the Node. One
object per node, bounded in size (nvcre.judge.ledger); ``nvcrectl nodes`` lists them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from nvcre.api.common import ApiModel, NodeName, Timestamp
from nvcre.api.kinds import AGE, CrdInfo, KubeObject, PrinterColumn

Text = Annotated[str, StringConstraints(max_length=256)]
ReadinessResultValue = Literal["Passed", "Failed", "NotJudged"]


class LastPass(ApiModel):
    value: float
    run: Text | None = None
    time: Timestamp | None = None


class ReadinessResult(ApiModel):
    """One category and scope: its outcome, the figure, the bar, what produced it, where it ran."""

    category: Annotated[str, StringConstraints(max_length=128)]
    scope: Text = Field(description="The shape it was measured in, e.g. '4 nodes x 8 GPUs, inter-node'.")
    result: ReadinessResultValue
    time: Timestamp
    run: Text = Field(description="namespace/certification that produced it.")
    workflow: Text | None = None
    stage: Annotated[str, StringConstraints(max_length=32)] | None = None
    value: float | None = Field(None, description="The figure measured; absent when not attributable to this node.")
    bar: Text | None = Field(None, description="The threshold applied.")
    reason: Text | None = None
    gpu_hours: float | None = Field(None, alias="gpuHours")
    environment: Annotated[dict[str, Annotated[str, StringConstraints(max_length=128)]], Field(max_length=8)] | None = Field(
        None, description="image, driver, cuda, nccl (as loaded, from NCCL INFO lines), transport."
    )
    last_pass: LastPass | None = Field(None, description="The last passing figure for this key (regression reference).")


class NodeReadinessSpec(ApiModel):
    node_name: NodeName = Field(description="The Node this record is about.")


class NodeReadinessStatus(ApiModel):
    node: NodeName | None = None
    stage_cleared: Annotated[str, StringConstraints(max_length=32)] | None = Field(
        None, description="Highest stage every latest result passed at (the lowest of their stages); absent: not cleared."
    )
    last_result: ReadinessResultValue | None = None
    last_run: Text | None = None
    last_run_time: Timestamp | None = None
    results: Annotated[list[ReadinessResult], Field(max_length=32)] | None = None
    history: Annotated[list[ReadinessResult], Field(max_length=16)] | None = None


class NodeReadiness(KubeObject):
    """What one node proved, per category and scope, with a bounded history."""

    kind: Literal["NodeReadiness"] = "NodeReadiness"
    spec: NodeReadinessSpec
    status: NodeReadinessStatus | None = None

    crd = CrdInfo(
        plural="nodereadinesses",
        singular="nodereadiness",
        short_names=("nr", "nodeready"),
        columns=(
            PrinterColumn("Node", ".spec.nodeName"),
            PrinterColumn("Stage", ".status.stageCleared", description="Highest stage cleared"),
            PrinterColumn("Last-Result", ".status.lastResult"),
            PrinterColumn("Last-Run", ".status.lastRun"),
            AGE,
        ),
    )
