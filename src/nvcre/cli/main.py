"""Entry point of nvcrectl (and kubectl-nvcre).

Imports every command module so its commands register on the groups in
``nvcre.cli.apps``, then runs the app, turning a ``UserError`` into a one-line
message and its exit code instead of a traceback.
"""

from __future__ import annotations

import sys

from nvcre.errors import EXIT_FAILED, EXIT_USAGE, UserError
from nvcre.cli.apps import app

# Every command module, registered on its group (see nvcre.cli.commands).
from nvcre.cli import commands as _commands  # noqa: F401,E402


def main(argv: list[str] | None = None) -> int:
    """Run nvcrectl and return its exit code."""
    try:
        # Standalone mode lets click report usage errors (exit 2) and --help itself.
        app(args=argv, prog_name="nvcrectl", standalone_mode=True)
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
