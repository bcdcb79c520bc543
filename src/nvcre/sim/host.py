"""What a simulated pod needs of the node agent that runs it: the kubelet's side of the seam.

``PodRunner`` (one pod) is given a ``PodHost`` (the kubelet process) and uses nothing
else of it, so the two modules meet here instead of importing each other.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol


class PodHost(Protocol):
    time_scale: float
    api: Any  # nvcre.sim.apiclient.ApiClient
    logs: Any  # nvcre.sim.logs.LogStore
    facts: dict[str, Any]  # node name -> NodeFacts

    async def fetch_files(self, pod: dict[str, Any]) -> dict[str, str]: ...

    async def make_context(self, runner: Any, c: Any) -> Any: ...

    async def wait_for_hosts(self, launcher: Any, hosts: list[str], ctx: Any) -> None: ...

    def join_rendezvous(self, key: str, runner: Any, now: datetime) -> datetime: ...

    def leave_rendezvous(self, key: str, runner: Any) -> None: ...

    def abort_rendezvous(self, key: str, origin: Any) -> None: ...

    def release_group(self, launcher: Any, code: int) -> None: ...

    def emit_event(self, involved: dict[str, Any], reason: str, message: str, *, node: str, warning: bool = False) -> None: ...

    async def apply_effect(self, effect: Any, runner: Any | None = None) -> None: ...
