"""Pick a renderer by name: the formats ``-o`` accepts, in one place."""

from __future__ import annotations

from typing import Callable

from nvcre.errors import EXIT_FAILED, EXIT_NOT_JUDGED, EXIT_OK, UserError
from nvcre.report.html import render_html
from nvcre.report.json_report import render_json
from nvcre.report.junit import render_junit
from nvcre.report.markdown import render_markdown
from nvcre.report.model import Report
from nvcre.report.text import render_text


def render_yaml(report: Report) -> str:
    """The JSON report's document as YAML (same keys, same values)."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(report.to_json_dict(), Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False)


RENDERERS: dict[str, Callable[[Report], str]] = {
    "text": render_text,
    "json": render_json,
    "yaml": render_yaml,
    "junit": render_junit,
    "markdown": render_markdown,
    "html": render_html,
}

# Exit codes a report's result maps to (the table in docs/user-guide.md): PASSED 0,
# FAILED 1, INCOMPLETE and RUNNING 4 (no verdict yet), and NOT JUDGED 4 (nothing judged
# a category: no thresholds, no stage, no baseline), so a script tells a bad cluster
# from a run that has not finished or that nothing judged; never a quiet success.
RESULT_EXIT = {"PASSED": EXIT_OK, "FAILED": EXIT_FAILED, "INCOMPLETE": EXIT_NOT_JUDGED, "RUNNING": EXIT_NOT_JUDGED,
               "NOT JUDGED": EXIT_NOT_JUDGED}


def render(report: Report, fmt: str) -> str:
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise UserError(f"-o/--output: unknown format {fmt!r}; choose one of {', '.join(RENDERERS)}") from None
    return renderer(report)
