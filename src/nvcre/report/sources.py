"""Reading Kubernetes objects the way the report needs them: plain dicts, conditions,
times, environment variable names, the Workflow's orchestration status, and the
labels the controller stamps on what it creates.
"""

from __future__ import annotations

from typing import Any

from nvcre.api.conditions import phase_of  # noqa: F401 (the one phase reading)
from nvcre.report.model import Condition
from nvcre.timefmt import parse_datetime as parse_time  # noqa: F401 (the one RFC 3339 parser)
from nvcre.objpath import dig

LABEL_WORKFLOW = "nvcre.nvidia.com/workflow"
LABEL_GROUP = "nvcre.nvidia.com/group"
LABEL_CERTIFICATION = "nvcre.nvidia.com/certification"
LABEL_CATEGORY = "nvcre.nvidia.com/category"
LABEL_WORKLOAD_RUN = "nvcre.nvidia.com/workload-run"
ANNOTATION_TEST_SCALE = "nvcre.nvidia.com/requested-test-scale"
ANNOTATION_GROUP_NODES = "nvcre.nvidia.com/group-nodes"
BANDWIDTH_DOMAINS = {"communication"}


def plain(obj: Any) -> dict:
    """Accept an API model or a dict; return the dict the API server would hold."""
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(by_alias=True, exclude_none=True, mode="json")
    to_dict = getattr(obj, "to_dict", None)
    if to_dict is not None:
        return to_dict()
    raise TypeError(f"cannot read {type(obj).__name__} as a Kubernetes object")


def true_condition(conditions: list[dict], ctype: str) -> dict | None:
    for c in conditions or []:
        if c.get("type") == ctype and str(c.get("status")) == "True":
            return c
    return None


def to_condition(c: dict) -> Condition:
    return Condition(
        type=c.get("type", ""), status=str(c.get("status", "")), reason=c.get("reason") or "", message=c.get("message") or ""
    )




def env_names(env: Any) -> list[str]:
    names: list[str] = []
    for item in env or []:
        name = item.get("name") if isinstance(item, dict) else getattr(item, "name", None)
        if name and name not in names:
            names.append(name)
    return names


def workload_env(template: Any) -> list[dict]:
    """Every ``env`` entry of the rendered workload (containers, init containers, launcher):
    the variables the run really sets. Only their names reach the report."""
    found: list[dict] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "env" and isinstance(value, list):
                    found.extend(v for v in value if isinstance(v, dict) and v.get("name"))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(template)
    return found




def orchestration_status(wf: dict | None) -> dict:
    return dig(wf, "status", "orchestration") or {}


def groups_status(wf: dict | None) -> list[dict]:
    return orchestration_status(wf).get("groups") or []


def job_phase(job: dict | None) -> str | None:
    if not job:
        return None
    conds = dig(job.get("status"), "conditions") or []
    if true_condition(conds, "Failed"):
        return "Failed"
    if true_condition(conds, "Succeeded"):
        return "Failed" if true_condition(conds, "ValidationFailed") else "Succeeded"
    if true_condition(conds, "InProgress"):
        return "Running"
    return None


def first_key(row: dict, *keys: str) -> Any:
    for key in keys:
        if row.get(key) is not None:
            return row[key]
    return None


def transport_list(value: Any) -> list[str]:
    if not value:
        return []
    if isinstance(value, str):
        return sorted({t.strip() for t in value.split(",") if t.strip()})
    return sorted({str(t) for t in value if t})
