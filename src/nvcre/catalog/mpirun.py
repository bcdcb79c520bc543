"""The launcher's mpirun command line, from a resolved workload (catalog data in, argv out)."""

from __future__ import annotations

from nvcre.catalog.model import WorkloadSpec


def mpirun_argv(workload: WorkloadSpec, *, hostfile: str | None = None) -> tuple[list[str], list[str]]:
    """``(command, args)`` of the launcher: ``timeout <s> [prefix] mpirun`` and the rest.

    Every environment variable is forwarded with ``-x NAME=VALUE``: ranks start under
    sshd with a fresh environment, so a container env var would never reach them.
    """
    mpi = workload.mpi
    assert mpi is not None
    command = ["timeout", str(mpi.timeout_seconds), *mpi.prefix, mpi.mpirun]
    args = ["-N", str(workload.gpus_per_node), "--allow-run-as-root"]
    if hostfile:
        args += ["--hostfile", hostfile]
    args += ["--mca", "plm_rsh_args", "-o StrictHostKeyChecking=no -o ConnectionAttempts=10", *mpi.extra_args]
    for name, value in workload.env:
        args += ["-x", f"{name}={value}"]
    for name, _ in workload.env_refs:  # valueFrom: the launcher resolves it, mpirun forwards it by name
        args += ["-x", name]
    args += [mpi.binary, *mpi.binary_args]
    return command, args
