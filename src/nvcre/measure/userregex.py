"""User regexes (LogProfile patterns) compiled with RE2: linear-time matching, Go syntax.

A LogProfile's regexes come from whoever may create LogProfiles and run against pod
logs inside the controller, so they must not be able to freeze it. RE2 guarantees
matching time linear in the input and refuses what cannot be matched that way
(backreferences, lookaround, possessive quantifiers); it is also the engine Go's
``regexp`` package follows, so a profile written for the reference means the same
here. Every caller (the API model, the CLI, the controller's loader) compiles
through ``compile_user_regex``, so admission and matching cannot disagree.
"""

from __future__ import annotations

import re2

MAX_PATTERN_LEN = 4096
# RE2's memory budget for one compiled program; a pattern over it is refused.
MAX_PROGRAM_BYTES = 1 << 20

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = MAX_PROGRAM_BYTES


class UserRegexError(ValueError):
    """Why a user regex was refused (the text says what RE2 could not express)."""


def compile_user_regex(text: str):
    """An RE2 pattern object (``search``/``groupindex`` like ``re``), or UserRegexError."""
    if not isinstance(text, str) or not text:
        raise UserRegexError("the regex is empty")
    if len(text) > MAX_PATTERN_LEN:
        raise UserRegexError(f"the regex is longer than {MAX_PATTERN_LEN} characters")
    if "\x00" in text:
        raise UserRegexError("the regex contains a NUL character")
    try:
        return re2.compile(text, _OPTIONS)
    except re2.error as err:
        raise UserRegexError(f"RE2 cannot compile it: {_reason(err)}{_hint(text)}") from None
    except (TypeError, ValueError, OverflowError, MemoryError) as err:
        raise UserRegexError(f"RE2 cannot compile it: {err}") from None


def _reason(err: Exception) -> str:
    detail = err.args[0] if err.args else err
    if isinstance(detail, bytes):
        detail = detail.decode("utf-8", errors="replace")
    return str(detail)


def _hint(text: str) -> str:
    """A pointer for the Python-only spellings people carry over."""
    if "(?=" in text or "(?!" in text or "(?<=" in text or "(?<!" in text:
        return " (lookahead and lookbehind are not RE2; match the context as a group instead)"
    if "(?P=" in text or any(f"\\{d}" in text for d in "123456789"):
        return " (backreferences are not RE2)"
    if "\\Z" in text:
        return " (write \\z for end of text)"
    if "(?x" in text:
        return " (verbose mode is not RE2)"
    return ""
