"""Where nvcrectl writes what: the document on stdout, everything else on stderr.

A script pipes ``-o json|yaml|junit|markdown|html|name`` into a parser, so those
formats put nothing but the document on stdout; progress, hints and "created" lines
go to stderr. Listing commands share one set of formats (``LIST_FORMATS``) and one
writer (``write_rows``). This module imports only the standard library so every
command can use it without slowing ``nvcrectl --help``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nvcre.errors import UserError

REPORT_FORMATS = ("text", "json", "yaml", "junit", "markdown", "html")
MACHINE_FORMATS = frozenset({"json", "yaml", "junit", "markdown", "html", "name"})
LIST_FORMATS = ("table", "wide", "json", "yaml", "name")

EXIT_CODE_TABLE = (
    (0, "passed (or the command did what it was asked)"),
    (1, "failed: the verdict is FAILED"),
    (2, "usage or bad input: a flag, a file, a manifest field"),
    (3, "cannot reach or authenticate to the cluster"),
    (4, "incomplete or not judged: still running, or nothing judged the measurements"),
    (5, "timed out waiting for a result (the run keeps going)"),
)


def exit_code_help() -> str:
    """The exit-code table as it appears at the end of ``nvcrectl --help``."""
    rows = "\n".join(f"  {code}  {meaning}" for code, meaning in EXIT_CODE_TABLE)
    return "Exit codes:\n\n\b\n" + rows


def info(message: str) -> None:
    """A progress line or hint: always stderr, flushed so it interleaves correctly."""
    print(message, file=sys.stderr, flush=True)


def check_format(output: str, allowed: Sequence[str], flag: str = "-o/--output") -> str:
    if output not in allowed:
        raise UserError(f"{flag}: unknown format {output!r}; choose one of {', '.join(allowed)}")
    return output


def terminal_width(default: int = 80) -> int:
    """Columns of the terminal stdout goes to; $COLUMNS wins; ``default`` for a pipe."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    if sys.stdout.isatty():
        return shutil.get_terminal_size((default, 24)).columns
    return default


def dump_yaml(data: Any) -> str:
    """YAML with the C dumper when it is installed (same bytes, several times faster)."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False)


def write_document(data: Any, output: str) -> None:
    """A JSON or YAML document, alone on stdout."""
    text = json.dumps(data, indent=2) + "\n" if output == "json" else dump_yaml(data)
    sys.stdout.write(text)
    sys.stdout.flush()


def write_rows(
    items: Sequence[Mapping[str, Any]],
    output: str,
    *,
    columns: Sequence[tuple[str, Callable[[Mapping[str, Any]], str]]],
    wide_columns: Sequence[tuple[str, Callable[[Mapping[str, Any]], str]]] = (),
    name: Callable[[Mapping[str, Any]], str],
    document: Callable[[Sequence[Mapping[str, Any]]], Any] | None = None,
) -> None:
    """A listing in one of ``LIST_FORMATS``: kubectl-style columns, or a document, or names.

    ``table`` fits the terminal (the last column wraps under itself), ``wide`` adds
    ``wide_columns`` and never cuts; ``name`` prints one name a line for ``xargs``.
    """
    check_format(output, LIST_FORMATS)
    if output == "name":
        sys.stdout.write("".join(name(item) + "\n" for item in items))
    elif output in ("json", "yaml"):
        write_document(document(items) if document else {"items": list(items)}, output)
    else:
        cols = list(columns) + (list(wide_columns) if output == "wide" else [])
        sys.stdout.write(format_table([h for h, _ in cols], [[f(i) for _, f in cols] for i in items],
                                      width=None if output == "wide" else terminal_width()))
    sys.stdout.flush()


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, width: int | None) -> str:
    """Left-aligned columns two spaces apart; with ``width`` the last column wraps to fit.

    Words are never split: an identifier cut mid-word ("communication/nccl-all-red" /
    "uce") cannot be copied. When the other columns leave too little room for the last
    column's longest word, each row's last cell goes on the lines below it, indented.
    """
    import textwrap

    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    lead = sum(w + 2 for w in widths[:-1])
    last = widths[-1] if widths else 0
    longest_word = max((len(word) for r in [headers, *rows] for word in (r[-1].split() if r else [])), default=0)
    stacked = width is not None and len(headers) > 1 and lead + longest_word > width
    if width is not None and lead + last > width:
        last = width - STACK_INDENT if stacked else max(20, width - lead)
    lines = []
    for row in [list(headers)] + [list(r) for r in rows]:
        head = "".join(cell.ljust(w + 2) for cell, w in zip(row[:-1], widths[:-1]))
        fits = width is None or len(row[-1]) <= last
        parts = [row[-1]] if fits else textwrap.wrap(row[-1], last, break_on_hyphens=False, break_long_words=False)
        parts = parts or [""]
        if stacked:
            lines.append(head.rstrip())
            lines += [(" " * STACK_INDENT + p).rstrip() for p in parts if p]
            continue
        lines.append((head + parts[0]).rstrip())
        lines += [(" " * lead + p).rstrip() for p in parts[1:]]
    return "\n".join(lines) + "\n"


STACK_INDENT = 4
