"""The local control plane's command lines: the node-monitor grace period is the controller
manager's default unless a test bed that renews Leases less often asks for a longer one."""

from __future__ import annotations

from pathlib import Path

from nvcre.testbed.certs import CertPair, ControlPlanePKI
from nvcre.testbed.components import Layout, controller_manager_argv


def _argv(**kw) -> list[str]:
    pair = CertPair(Path("c.crt"), Path("c.key"))
    pki = ControlPlanePKI(*([pair] * 8))
    at = Layout(Path("/bin"), Path("/work"), {"controller_manager": 10257})
    return controller_manager_argv(at, Path("kc"), pki, **kw)


def test_the_default_grace_period_is_the_controller_managers_own():
    assert not [a for a in _argv() if a.startswith("--node-monitor-grace-period")]


def test_a_longer_grace_period_is_passed_in_whole_seconds():
    assert "--node-monitor-grace-period=200s" in _argv(node_monitor_grace_s=200)
