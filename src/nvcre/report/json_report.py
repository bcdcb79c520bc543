"""The JSON report: the versioned schema tools read (``--results-file``, MCP, CI).

Keys are camelCase; display strings ("932.09 GB/s") sit beside the numbers behind
them (``busBWGBps``) so a script never parses a unit. The schema is documented in
``docs/report-schema.md`` and described by ``json_schema()``.
"""

from __future__ import annotations

import json

from nvcre.report.model import SCHEMA_VERSION, Report


def render_json(report: Report) -> str:
    return json.dumps(report.to_json_dict(), indent=2, ensure_ascii=False) + "\n"


def json_schema() -> dict:
    """JSON Schema of the report, generated from the model so it cannot drift."""
    schema = Report.model_json_schema(by_alias=True, mode="serialization")
    schema["$id"] = SCHEMA_VERSION
    schema["title"] = "nvcre report"
    return schema
