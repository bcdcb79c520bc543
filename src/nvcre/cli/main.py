"""Entry point of nvcrectl (and kubectl-nvcre).

Imports the command modules the invoked group needs (``nvcre.cli.commands``), which
register their commands on the groups in ``nvcre.cli.apps``, then runs the app,
turning a ``UserError`` into a one-line message and its exit code instead of a
traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from nvcre.cli import apps, commands
from nvcre.errors import EXIT_FAILED, EXIT_USAGE, UserError


def __getattr__(name: str) -> Any:
    """``from nvcre.cli.main import app`` gives the app with every command registered."""
    if name == "app":
        commands.load_all()
        return apps.app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """Run nvcrectl and return its exit code."""
    args = sys.argv[1:] if argv is None else argv
    try:
        if os.environ.get("_NVCRECTL_COMPLETE"):  # the shell asks for candidates: whole tree
            commands.load_all()
        else:
            commands.load(args)
        # Standalone mode lets click report usage errors (exit 2) and --help itself.
        apps.app(args=argv, prog_name="nvcrectl", standalone_mode=True)
    except UserError as err:
        print(f"error: {err.message}", file=sys.stderr)
        return err.exit_code
    except SystemExit as done:
        code = done.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - a bug must still not print a traceback
        return unexpected(err)
    return 0


def unexpected(err: BaseException) -> int:
    """A failure nobody foresaw: one line, exit 1; NVCRE_DEBUG=1 shows the traceback."""
    import os
    import traceback

    if os.environ.get("NVCRE_DEBUG"):
        traceback.print_exc()
    print(f"error: unexpected {type(err).__name__}: {err} (set NVCRE_DEBUG=1 for the traceback; please report it)",
          file=sys.stderr)
    return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
