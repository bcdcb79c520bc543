"""The typed views name only fields the API models (the CRD schema) have."""

from __future__ import annotations

import pytest

from nvcre.api.certification import CategoryStatus, CertificationStatus
from nvcre.api.common import FailedNode
from nvcre.api.job import JobStatus
from nvcre.api.workflow import GroupStatus, OrchestrationStatus, WorkflowStatus
from nvcre.controller import views


def _aliases(model) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


@pytest.mark.parametrize("view,model", [
    (views.JobStatusView, JobStatus),
    (views.WorkflowStatusView, WorkflowStatus),
    (views.OrchestrationStatusView, OrchestrationStatus),
    (views.GroupView, GroupStatus),
    (views.FailedNode, FailedNode),
    (views.CertificationStatusView, CertificationStatus),
    (views.CategoryView, CategoryStatus),
])
def test_view_keys_are_model_fields(view, model):
    assert set(view.__annotations__) <= _aliases(model), set(view.__annotations__) - _aliases(model)


def test_views_are_the_objects_own_dicts():
    job = {"status": {"failedNodes": []}}
    assert views.job_status(job) is job["status"] and views.job_status(None) == {}
    wf = {"status": {"orchestration": {"groups": []}}}
    assert views.orchestration(wf) is wf["status"]["orchestration"]
