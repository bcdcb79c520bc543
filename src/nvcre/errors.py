"""Errors a user can cause, with the message and exit code the CLI shows for them.

Every layer raises these for bad input so the CLI never prints a traceback for a
user's mistake: it prints ``error: <message>`` and exits with ``exit_code``.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1  # the certification (or run) failed
EXIT_USAGE = 2  # bad input: a flag, a file, a manifest field
EXIT_CLUSTER = 3  # cannot reach or authenticate to the cluster
EXIT_NOT_JUDGED = 4  # incomplete, or nothing judged the measurements (no thresholds, no stage)
EXIT_TIMEOUT = 5  # timed out waiting for a result


class UserError(Exception):
    """A mistake in what the user gave us (flags, files, manifests)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class ManifestError(UserError):
    """A manifest field holds something that is not allowed.

    ``field`` is the dotted path of the offending field (``spec.categories[0].variant``),
    ``source`` the file or object it came from, when known.
    """

    def __init__(self, field: str, message: str, *, source: str | None = None) -> None:
        self.field = field
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{field}: {message}")
