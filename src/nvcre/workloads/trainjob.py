"""The Kubeflow Trainer v2 adapter: a TrainingRuntime plus the TrainJob that uses it.

Each workload gets its own TrainingRuntime (``<name>-runtime``) carrying the pod
templates already pinned to the group, so nothing has to be patched in later. MPI
categories use the MPI policy (Trainer creates the ssh keys and the hostfile; the
launcher waits for the workers: JobSet ``dependsOn`` normally, an in-pod ssh barrier
under KAI Scheduler, which cannot admit an empty sub-group). Everything else uses the
torch policy.
"""

from __future__ import annotations

from typing import Any

from nvcre.catalog.mpirun import mpirun_argv
from nvcre.workloads import mpi
from nvcre.workloads.common import (
    LAUNCHER_RESOURCES,
    RANK_CONTAINER,
    RenderContext,
    shell_lines,
    wrap_with_pre_command,
)

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_API = f"{TRAINER_GROUP}/v1alpha1"
TRAINER_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
SSH_RAW = "/tmp/mpi-ssh-raw"


def _replicated_job(ctx: RenderContext, name: str, role: str, pod: dict[str, Any], *, trainer_step: bool,
                    depends_on: bool = False) -> dict[str, Any]:
    labels = ctx.template_labels(role)
    job_meta: dict[str, Any] = {"labels": dict(labels)}
    if trainer_step:
        job_meta["labels"][TRAINER_STEP_LABEL] = "trainer"
    pod_meta: dict[str, Any] = {"labels": labels}
    annotations = ctx.pod_annotations()
    if annotations and role != "launcher":
        pod_meta["annotations"] = annotations
    rj: dict[str, Any] = {
        "name": name,
        "replicas": 1,
        "template": {"metadata": job_meta,
                     "spec": {"backoffLimit": 0, "template": {"metadata": pod_meta, "spec": pod}}},
    }
    if depends_on:
        rj["dependsOn"] = [{"name": "node", "status": "Ready"}]
    return rj


def _node_pod(ctx: RenderContext, container: dict[str, Any], *, extra_volumes=(), extra_mounts=()) -> dict[str, Any]:
    """The shared rank pod; here the rank container also gets the security context
    (MPI workers run sshd, which needs SYS_CHROOT)."""
    pod = ctx.rank_pod(container, extra_volumes=extra_volumes, extra_mounts=extra_mounts)
    sec = ctx.security_context(("SYS_CHROOT",) if ctx.w.launch == "mpi" else ())
    if sec:
        container["securityContext"] = sec
    return pod


def _runtime(ctx: RenderContext, framework: str, ml_policy: dict[str, Any], jobset: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": TRAINER_API,
        "kind": "TrainingRuntime",
        "metadata": ctx.meta(f"{ctx.name}-runtime", labels={"trainer.kubeflow.org/framework": framework}),
        "spec": {"mlPolicy": ml_policy, "template": {"spec": jobset}},
    }


def _trainjob(ctx: RenderContext, trainer: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": TRAINER_API,
        "kind": "TrainJob",
        "metadata": ctx.meta(ctx.name, labels=ctx.submitted_labels(), annotations=ctx.workload_annotations()),
        "spec": {
            "runtimeRef": {"apiGroup": TRAINER_GROUP, "kind": "TrainingRuntime", "name": f"{ctx.name}-runtime"},
            "trainer": trainer,
        },
    }


def _render_mpi(ctx: RenderContext) -> list[dict[str, Any]]:
    pre = shell_lines(ctx.w.pre_command)
    ssh_keys = {"name": "ssh-keys", "emptyDir": {}}
    worker = {"name": RANK_CONTAINER, "image": ctx.w.image,
              "command": ["/bin/bash", "-c", mpi.trainjob_worker_script(pre, SSH_RAW)],
              "readinessProbe": {"tcpSocket": {"port": 22}, "initialDelaySeconds": 5, "periodSeconds": 10}}
    node_pod = _node_pod(ctx, worker)
    kai = ctx.r.gang is not None and ctx.r.gang.is_kai
    fix = {"name": "fix-ssh-permissions", "image": ctx.w.image,
           "command": ["/bin/sh", "-c", mpi.copy_keys(SSH_RAW)],
           "volumeMounts": [{"name": "ssh-keys", "mountPath": "/root/.ssh"}]}
    launcher = {"name": RANK_CONTAINER, "image": ctx.w.image, "resources": LAUNCHER_RESOURCES,
                "volumeMounts": [{"name": "ssh-keys", "mountPath": "/root/.ssh"}]}
    launcher_pod = {"restartPolicy": "Never", **ctx.pod_spec_common(rank=False),
                    "initContainers": [fix], "containers": [launcher], "volumes": [ssh_keys]}
    jobset = {
        "network": {"publishNotReadyAddresses": True},
        "successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]},
        # JobSet admits dependsOn only on a later replicatedJob than the one it waits
        # for, so the workers come first and the launcher, gated on them, second.
        "replicatedJobs": [
            _replicated_job(ctx, "node", "worker", node_pod, trainer_step=False),
            _replicated_job(ctx, "launcher", "launcher", launcher_pod, trainer_step=True, depends_on=not kai),
        ],
    }
    policy = {"numNodes": 1, "mpi": {"mpiImplementation": "OpenMPI", "numProcPerNode": ctx.w.gpus_per_node,
                                     "sshAuthMountPath": SSH_RAW, "runLauncherAsNode": False}}
    command, args = mpirun_argv(ctx.w)
    if kai:
        command, args = ["/bin/bash", "-c", mpi.kai_launcher_script(pre), "nvcre-launcher"], [*command, *args]
    trainer: dict[str, Any] = {"image": ctx.w.image, "command": command, "args": args,
                               "numNodes": ctx.size, "numProcPerNode": ctx.w.gpus_per_node}
    env = ctx.env_list()
    if env:
        trainer["env"] = env
    return [*ctx.dependencies(), _runtime(ctx, "mpi", policy, jobset), _trainjob(ctx, trainer)]


def _render_torch(ctx: RenderContext) -> list[dict[str, Any]]:
    """torchrun, per-node and exec: the torch policy; Trainer sets the PET_* rendezvous env."""
    extra_volumes, extra_mounts = [], []
    if ctx.w.launch == "torchrun" and ctx.w.command[:2] == ("/bin/bash", "-c"):
        command = ["/bin/bash", "-c", shell_lines(ctx.w.pre_command) + ctx.w.command[2]]
        args = list(ctx.w.args)
    else:
        command, args = wrap_with_pre_command(ctx, ctx.w.command, ctx.w.args)
    if ctx.w.init_script:
        extra_volumes.append({"name": "workspace", "emptyDir": {}})
        extra_mounts.append({"name": "workspace", "mountPath": "/mnt/workspace"})
    container = {"name": RANK_CONTAINER, "image": ctx.w.image}
    pod = _node_pod(ctx, container, extra_volumes=extra_volumes, extra_mounts=extra_mounts)
    if ctx.w.launch == "torchrun":
        pod["terminationGracePeriodSeconds"] = 30
        pod["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"}}
    jobset = {"replicatedJobs": [_replicated_job(ctx, "node", "worker", pod, trainer_step=True)]}
    procs = ctx.w.gpus_per_node if ctx.w.launch == "torchrun" else 1
    policy = {"numNodes": ctx.size, "torch": {"numProcPerNode": procs}}
    trainer: dict[str, Any] = {"image": ctx.w.image, "command": command, "numNodes": ctx.size}
    if args:
        trainer["args"] = args
    env = ctx.env_list()
    if env:
        trainer["env"] = env
    return [*ctx.dependencies(), _runtime(ctx, "torch", policy, jobset), _trainjob(ctx, trainer)]


def render(ctx: RenderContext) -> list[dict[str, Any]]:
    if ctx.w.launch == "mpi":
        return _render_mpi(ctx)
    return _render_torch(ctx)
