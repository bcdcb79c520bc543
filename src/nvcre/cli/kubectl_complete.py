"""``kubectl_complete-nvcre``: what kubectl's plugin completion runs for ``kubectl nvcre <TAB>``.

Its own module: it needs the whole command tree (``nvcre.cli.commands``), and the
``completion`` command module is part of that tree.
"""

from __future__ import annotations

import sys

from nvcre.cli import commands
from nvcre.cli.completion import NO_FILE_COMPLETION, kubectl_candidates


def kubectl_complete() -> int:
    """Entry point of `kubectl_complete-nvcre` (called by kubectl's own completion)."""
    commands.load_all()
    for value in kubectl_candidates(sys.argv[1:]):
        print(value)
    print(NO_FILE_COMPLETION)
    return 0
