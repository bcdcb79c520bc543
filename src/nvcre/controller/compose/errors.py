"""Why a plan cannot be made, as the Failed reason the reconcilers write."""

from __future__ import annotations

from nvcre.controller.conditions import CertificationReason

class PlanError(Exception):
    """A decision cannot be made from the spec and the cluster; carries the Failed reason."""

    def __init__(self, reason: str, message: str, excluded: list[dict] | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.excluded = excluded or []  # {name, reason[, message]}: the nodes that could not run, for the status


def certification_reason_for(err: Exception) -> str:
    text = str(getattr(err, "message", err))
    if "unknown" in text.lower() and "categor" in text.lower():
        return CertificationReason.CATEGORY_NOT_FOUND
    return CertificationReason.VALIDATION_FAILED
