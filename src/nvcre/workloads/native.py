"""The native adapter: nothing but core Kubernetes (batch/v1 Jobs, a headless Service,
a ConfigMap and a Secret), so a cluster without Kubeflow Trainer or JobSet can be certified.

- ``mpi``: a worker Job (Indexed, one pod per node, running sshd) and a launcher Job whose
  pod waits until every worker answers ssh, runs mpirun (its log holds the nccl-tests
  output), then releases the workers.
- ``torchrun``: one Indexed Job; rank = completion index, rank 0 is the rendezvous host.
- ``per-node`` / ``exec``: one Indexed Job, one pod per node.
"""

from __future__ import annotations

from typing import Any

from nvcre.catalog.mpirun import mpirun_argv
from nvcre.workloads import mpi, pairwise
from nvcre.workloads.common import (
    LAUNCHER_RESOURCES,
    LABEL_ROLE,
    LABEL_WORKLOAD,
    RANK_CONTAINER,
    RenderContext,
    shell_lines,
    wrap_with_pre_command,
)

MASTER_PORT = "29500"
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def _job(ctx: RenderContext, name: str, role: str, pod: dict[str, Any], count: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"completionMode": "Indexed"} if count > 1 or role != "launcher" else {}
    deadline = ctx.deadline_seconds()
    if ctx.pairwise:  # one run of the workload per round-robin step, one step after another
        deadline = pairwise.job_seconds(deadline, ctx.size)
    spec |= {
        "completions": count,
        "parallelism": count,
        "backoffLimit": 0,
        "activeDeadlineSeconds": deadline,
        "template": {
            "metadata": {"labels": ctx.template_labels(role)},
            "spec": pod,
        },
    }
    annotations = ctx.pod_annotations()
    if annotations and role != "launcher":
        spec["template"]["metadata"]["annotations"] = annotations
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": ctx.meta(name, labels={**ctx.submitted_labels(), LABEL_ROLE: role},
                             annotations=ctx.workload_annotations()),
        "spec": spec,
    }


def _rank_container(ctx: RenderContext, command: list[str], args: list[str], *, extra_caps=()) -> dict[str, Any]:
    container: dict[str, Any] = {"name": RANK_CONTAINER, "image": ctx.w.image, "command": command}
    if args:
        container["args"] = args
    env = ctx.env_list()
    if env:
        container["env"] = env
    sec = ctx.security_context(extra_caps)
    if sec:
        container["securityContext"] = sec
    return container


def _service(ctx: RenderContext) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": ctx.meta(ctx.name),
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                 "selector": {LABEL_WORKLOAD: ctx.name, LABEL_ROLE: "worker"}},
    }


def _render_mpi(ctx: RenderContext) -> list[dict[str, Any]]:
    name = ctx.name
    worker_job = f"{name}-worker"
    hosts = [f"{worker_job}-{i}.{name}.{ctx.namespace}.svc" for i in range(ctx.size)]
    # No key material here: the rendered objects travel in the nvcre Job's spec and through
    # `render`. The controller generates the key pair when it creates this Secret.
    secret = mpi.ssh_secret_request(ctx.meta(f"{name}-ssh", annotations={mpi.SSH_KEY_ANNOTATION: f"nvcre-{name}"}))
    hostfile = {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": ctx.meta(f"{name}-hostfile"),
        "data": {"hostfile": "".join(f"{h} slots={ctx.w.gpus_per_node}\n" for h in hosts)},
    }
    ssh_volume = {"name": "mpi-ssh", "secret": {"secretName": f"{name}-ssh", "defaultMode": 0o400}}
    ssh_mount = {"name": "mpi-ssh", "mountPath": mpi.SSH_SECRET_MOUNT, "readOnly": True}
    run_volume = {"name": "nvcre-run", "emptyDir": {}}
    run_mount = {"name": "nvcre-run", "mountPath": mpi.DONE_DIR}
    pre = shell_lines(ctx.w.pre_command)

    worker = _rank_container(ctx, ["/bin/bash", "-c", mpi.native_worker_script(pre)], [], extra_caps=("SYS_CHROOT",))
    worker.pop("env", None)  # ranks get the environment from mpirun -x, not from sshd's container
    worker["ports"] = [{"name": "ssh", "containerPort": 22}]
    worker["readinessProbe"] = {"tcpSocket": {"port": 22}, "initialDelaySeconds": 5, "periodSeconds": 10}
    worker_pod = ctx.rank_pod(worker, extra_volumes=[ssh_volume, run_volume], extra_mounts=[ssh_mount, run_mount],
                           subdomain=name)

    if ctx.pairwise:  # every pair of the hosts in turn: the script names the two hosts per run
        command, args = [], pairwise.launcher_args(mpi.HOSTFILE, *mpirun_argv(ctx.w))
    else:
        command, args = mpirun_argv(ctx.w, hostfile=mpi.HOSTFILE)
    launcher = {
        "name": "launcher",
        "image": ctx.w.image,
        "command": ["/bin/bash", "-c", mpi.native_launcher_script(pre), "nvcre-launcher"],
        "args": [*command, *args],
        "env": ctx.env_list(),
        "resources": LAUNCHER_RESOURCES,
        "volumeMounts": [ssh_mount, {"name": "hostfile", "mountPath": mpi.HOSTFILE_DIR, "readOnly": True}],
    }
    if not launcher["env"]:
        launcher.pop("env")
    launcher_volumes = [ssh_volume, {"name": "hostfile", "configMap": {"name": f"{name}-hostfile"}}]
    config = ctx.config_volume()
    if config:  # mpirun runs here, so the launcher sees /config too
        launcher_volumes.append(config[0])
        launcher["volumeMounts"].append(config[1])
    launcher_pod: dict[str, Any] = {"restartPolicy": "Never", **ctx.pod_spec_common(rank=False),
                                    "containers": [launcher], "volumes": launcher_volumes}
    return [
        *ctx.dependencies(),
        secret,
        hostfile,
        _service(ctx),
        _job(ctx, worker_job, "worker", worker_pod, ctx.size),
        _job(ctx, f"{name}-launcher", "launcher", launcher_pod, 1),
    ]


def _render_indexed(ctx: RenderContext) -> list[dict[str, Any]]:
    """torchrun, per-node and exec: one Indexed Job, one pod per node."""
    name = ctx.name
    extra_env: list[dict[str, Any]] = []
    extra_volumes, extra_mounts = [], []
    if ctx.w.launch == "torchrun":
        command = list(ctx.w.command)
        if ctx.w.pre_command and command[:2] == ["/bin/bash", "-c"]:
            command = ["/bin/bash", "-c", shell_lines(ctx.w.pre_command) + command[2]]
            args = list(ctx.w.args)
        else:
            command, args = wrap_with_pre_command(ctx, command, ctx.w.args)
        extra_env = [
            {"name": "PET_NNODES", "value": str(ctx.size)},
            {"name": "PET_NPROC_PER_NODE", "value": str(ctx.w.gpus_per_node)},
            {"name": "PET_MASTER_ADDR", "value": f"{name}-0.{name}.{ctx.namespace}.svc"},
            {"name": "PET_MASTER_PORT", "value": MASTER_PORT},
            {"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": COMPLETION_INDEX}}},
        ]
        if ctx.w.init_script:
            extra_volumes.append({"name": "workspace", "emptyDir": {}})
            extra_mounts.append({"name": "workspace", "mountPath": "/mnt/workspace"})
    else:
        command, args = wrap_with_pre_command(ctx, ctx.w.command, ctx.w.args)
    container = _rank_container(ctx, command, args)
    if extra_env:
        container["env"] = container.get("env", []) + extra_env
    pod = ctx.rank_pod(container, extra_volumes=extra_volumes, extra_mounts=extra_mounts,
                    subdomain=name if ctx.w.launch == "torchrun" else None)
    if ctx.w.launch == "torchrun":
        pod["terminationGracePeriodSeconds"] = 30
        pod["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"}}
    if ctx.size > 1 or ctx.r.placement == "Unpinned":
        pod["topologySpreadConstraints"] = [{
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {LABEL_WORKLOAD: name}},
        }]
    objects = [*ctx.dependencies()]
    if ctx.w.launch == "torchrun":
        service = _service(ctx)
        service["spec"]["selector"] = {LABEL_WORKLOAD: name, LABEL_ROLE: "worker"}
        objects.append(service)
    objects.append(_job(ctx, name, "worker", pod, ctx.size))
    return objects


def render(ctx: RenderContext) -> list[dict[str, Any]]:
    if ctx.w.launch == "mpi":
        return _render_mpi(ctx)
    return _render_indexed(ctx)
