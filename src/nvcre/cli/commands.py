"""Every command module of nvcrectl: importing one registers its commands on a group
in ``nvcre.cli.apps``. Add a line here when you add a module under nvcre/cli/.

Kept apart from ``main`` so shell completion can load the whole command tree without
importing the entry point (no import cycle).
"""

from nvcre.cli import version as _version  # noqa: F401
from nvcre.cli import sim as _sim  # noqa: F401
from nvcre.cli import render as _render  # noqa: F401
from nvcre.cli import images as _images  # noqa: F401
from nvcre.cli import catalog as _catalog  # noqa: F401
from nvcre.cli import controller as _controller  # noqa: F401
from nvcre.cli import mcp as _mcp  # noqa: F401
from nvcre.cli import report as _report  # noqa: F401
from nvcre.cli import run as _run  # noqa: F401
from nvcre.cli import rbac as _rbac  # noqa: F401
from nvcre.cli import cluster as _cluster  # noqa: F401
from nvcre.cli import setup as _setup  # noqa: F401
from nvcre.cli import listing as _listing  # noqa: F401
from nvcre.cli import baselines as _baselines  # noqa: F401
from nvcre.cli import nodes as _nodes  # noqa: F401
from nvcre.cli import completion as _completion  # noqa: F401
from nvcre.cli import workloadrun_ops as _workloadrun_ops  # noqa: F401
from nvcre.cli import workflow_render as _workflow_render  # noqa: F401
from nvcre.cli import example as _example  # noqa: F401
