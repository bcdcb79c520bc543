"""Entry point of nvcrectl (and kubectl-nvcre).

Imports every command module so its commands register on the groups in
``nvcre.cli.apps``, then runs the app, turning a ``UserError`` into a one-line
message and its exit code instead of a traceback.
"""

from __future__ import annotations

import sys

from nvcre.errors import EXIT_FAILED, EXIT_USAGE, UserError
from nvcre.cli.apps import app

# Command modules: each registers its commands on a group when imported.
# Add a line here when you add a module under nvcre/cli/.
from nvcre.cli import version as _version  # noqa: F401,E402
from nvcre.cli import sim as _sim  # noqa: F401,E402
from nvcre.cli import render as _render  # noqa: F401,E402
from nvcre.cli import images as _images  # noqa: F401,E402
from nvcre.cli import catalog as _catalog  # noqa: F401,E402
from nvcre.cli import controller as _controller  # noqa: F401,E402
from nvcre.cli import mcp as _mcp  # noqa: F401,E402
from nvcre.cli import report as _report  # noqa: F401,E402
from nvcre.cli import run as _run  # noqa: F401,E402
from nvcre.cli import rbac as _rbac  # noqa: F401,E402
from nvcre.cli import cluster as _cluster  # noqa: F401,E402
from nvcre.cli import setup as _setup  # noqa: F401,E402
from nvcre.cli import listing as _listing  # noqa: F401,E402
from nvcre.cli import completion as _completion  # noqa: F401,E402


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
