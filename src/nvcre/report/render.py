"""Pick a renderer by name: the formats ``-o`` accepts, in one place."""

from __future__ import annotations

from typing import Callable

from nvcre.errors import EXIT_NOT_JUDGED, UserError
from nvcre.report.html import render_html
from nvcre.report.json_report import render_json
from nvcre.report.junit import render_junit
from nvcre.report.markdown import render_markdown
from nvcre.report.model import Report
from nvcre.report.text import render_text

RENDERERS: dict[str, Callable[[Report], str]] = {
    "text": render_text,
    "json": render_json,
    "junit": render_junit,
    "markdown": render_markdown,
    "html": render_html,
}

# Exit codes a report's result maps to: PASSED and INCOMPLETE succeed, FAILED fails,
# RUNNING is "not finished" (3) so a script can tell it from a failure; NOT JUDGED
# (nothing judged a category: no thresholds, no stage, no baseline) is never a success.
RESULT_EXIT = {"PASSED": 0, "INCOMPLETE": 0, "FAILED": 1, "RUNNING": 3, "NOT JUDGED": EXIT_NOT_JUDGED}


def render(report: Report, fmt: str) -> str:
    try:
        renderer = RENDERERS[fmt]
    except KeyError:
        raise UserError(f"-o/--output: unknown format {fmt!r}; choose one of {', '.join(RENDERERS)}") from None
    return renderer(report)
