"""The report: one model built from statuses, rendered as text, JSON, JUnit, Markdown or HTML."""

from nvcre.report.build import RunObjects, build_report
from nvcre.report.model import SCHEMA_VERSION, Report

__all__ = ["RunObjects", "build_report", "Report", "SCHEMA_VERSION"]
