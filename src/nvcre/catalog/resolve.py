"""Resolve a catalog category (or a WorkloadRun) for a platform and GPU architecture,
and render it into Kubernetes objects.

Order: the catalog entry, then the platform fragment's matching blocks, then the GPU
architecture fragment's; then the user's options (image, pull secrets, env merged by
name, workload labels, the gang scheduler). The result records which blocks applied.

Public API (used by the controller and the CLI)::

    resolve_category(category, global_options, *, platform, gpu_arch, ...) -> ResolvedCategory
    resolve_workloadrun(run, *, platform, gpu_arch, ...) -> ResolvedCategory
    render_workload(resolved, *, name, namespace, nodes, adapter="native", ...) -> list[dict]
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from nvcre.api.rules import RESERVED_MOUNT_PATHS, RESERVED_VOLUME_NAMES, check_config_key
from nvcre.api.certification import CertificationCategory
from nvcre.api.options import CategoryOptions, merge_options
from nvcre.catalog.data import Entry, load_catalog
from nvcre.catalog.layers import WorkloadDraft, block_matches
from nvcre.catalog.model import GangScheduling, Measurement, MpiSpec, ResolvedCategory, WorkloadSpec
from nvcre.catalog.mpirun import mpirun_argv
from nvcre.catalog.template import CatalogError, fill, fill_all
from nvcre.catalog.hardware import hardware_defaults
from nvcre.discovery.gke import DEFAULT_TCPXO, GkeNetworks, TcpxoProfile, detect_gke_networks
from nvcre.discovery.gpu import UNKNOWN, parse_product
from nvcre.discovery.nodes import UNSCHEDULABLE_TAINT, target_dict
from nvcre.discovery.platform import PLATFORMS
from nvcre.errors import ManifestError, UserError

TRAINER_ARGS_CAP = 128  # Kubeflow Trainer refuses a TrainJob whose trainer.args is longer
MAX_WORKLOAD_LABELS = 32
NODE_HEALTH_DEFAULT = "node.spec.unschedulable == true"
ADAPTERS = ("native", "trainjob")  # the adapter names (nvcre.workloads.render has the registry)


def valid_categories() -> list[str]:
    return [e.key for e in load_catalog().sorted_entries()]


def canonical_category(category: Mapping[str, Any]) -> dict[str, Any]:
    """A spec category with its variant spelled as the catalog entry names it (an alias
    such as ``nccl-all-to-all`` becomes ``nccl-alltoall``); unknown ones unchanged."""
    found = load_catalog().canonical(str(category.get("domain", "")), str(category.get("variant", "")))
    if found is None or (category.get("domain"), category.get("variant")) == found:
        return category
    return {**category, "domain": found[0], "variant": found[1]}


def _gang(spec: Any) -> GangScheduling | None:
    if spec is None:
        return None
    get = spec.get if isinstance(spec, Mapping) else lambda k, d=None: getattr(spec, _snake(k), d)
    name = get("schedulerName")
    if not name:
        return None
    return GangScheduling(
        scheduler_name=name,
        queue=get("queue") or "default-queue",
        queue_label_key=get("queueLabelKey") or "kai.scheduler/queue",
    )


def _snake(camel: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in camel)


def _check_context(platform: str, gpu_arch: str) -> tuple[str, str]:
    plat = (platform or "").strip().lower()
    if plat not in PLATFORMS:
        raise UserError(f"unknown platform {platform!r}; valid: {', '.join(PLATFORMS)}")
    arch = parse_product(gpu_arch) or (gpu_arch or "").strip().lower()
    if not arch or arch == UNKNOWN:
        raise UserError(
            "cannot determine the GPU architecture: no target node has the nvidia.com/gpu.product label; "
            "give it with --gpu-arch or label the nodes"
        )
    return plat, arch


def _as_category(category: Any, index: int | None) -> CertificationCategory:
    if isinstance(category, CertificationCategory):
        return category
    try:
        return CertificationCategory.model_validate(category)
    except Exception as err:  # pydantic's ValidationError; name the category
        where = f"spec.categories[{index}]" if index is not None else "category"
        raise ManifestError(where, str(err).splitlines()[0]) from err


def _as_options(global_options: Any) -> Any:
    """Global options from a spec given as a dict (camelCase) or as a model."""
    if global_options is None or not isinstance(global_options, Mapping):
        return global_options
    aliases = {f.alias or n: n for n, f in CategoryOptions.model_fields.items()}
    picked = {k: v for k, v in global_options.items() if k in aliases}
    try:
        return CategoryOptions.model_validate(picked)
    except Exception as err:
        raise ManifestError("spec", str(err).splitlines()[0]) from err


def _lookup(domain: str, variant: str, index: int | None, source: str | None) -> Entry:
    entry = load_catalog().lookup(domain, variant)
    if entry is None:
        where = f"spec.categories[{index}].variant" if index is not None else "variant"
        raise ManifestError(
            where,
            f"unknown category {domain}/{variant}; valid categories: {', '.join(valid_categories())}",
            source=source,
        )
    return entry


def _context(entry_tags: Iterable[str], launch: str, variant: str, platform: str, arch: str, mnnvl: bool, gpus: int) -> dict[str, Any]:
    return {
        "tags": tuple(entry_tags),
        "launch": launch,
        "variant": variant,
        "platform": platform,
        "gpuArchitecture": arch,
        "mnnvl": mnnvl,
        "gpusPerNode": gpus,
    }


def _tcpxo_values(plat: str, arch: str, entry_image: str, networks: GkeNetworks | None,
                  tcpxo: TcpxoProfile | None) -> tuple[dict[str, Any], list[tuple[str, str, str]]]:
    """Holes of the GCP H100 (TCPXO) fragment and the events its detections raise.

    Without detections (offline render) the defaults apply silently: networks vpc1..vpc8
    and the v1.0.15 plugin profile (CUDA 12 images)."""
    nets = networks or detect_gke_networks([])
    profile = tcpxo or DEFAULT_TCPXO
    values = {
        "gkeInterfaces": nets.interfaces_annotation(),
        "tcpxoDaemon": profile.daemon,
        "tcpxoImage": profile.nccl_image or entry_image,
    }
    events: list[tuple[str, str, str]] = []
    if plat == "gcp" and arch == "h100":
        if networks is not None and networks.message:
            events.append(("Warning", "GKENetworkDetection", networks.message))
        if tcpxo is not None and tcpxo.message:
            events.append(("Warning", "TCPXOPluginDetection", tcpxo.message))
    return values, events


def _apply_fragments(draft: WorkloadDraft, ctx: Mapping[str, Any]) -> None:
    catalog = load_catalog()
    for block in catalog.platform_blocks.get(ctx["platform"], ()):
        if block_matches(block.when, ctx):
            draft.apply(block)
    for block in catalog.gpu_blocks.get(ctx["gpuArchitecture"], ()):
        if block_matches(block.when, ctx):
            draft.apply(block)


def _freeze(draft: WorkloadDraft, values: Mapping[str, Any], *, where: str, gpus: int) -> WorkloadSpec:
    """Fill every hole and drop what renders empty (a NIC count of 0 is an opt-out)."""
    resources: dict[str, str] = {}
    for name, amount in draft.resources.items():
        key = fill(str(name), values, where=where)
        value = fill(str(amount), values, where=where)
        if key and value not in ("", "0"):
            resources[key] = value
    claims = []
    for claim in fill_all(draft.claims, values, where=where):
        if str(claim.get("count")) not in ("", "0"):
            claims.append(claim)
    annotations = {k: v for k, v in fill_all(draft.pod_annotations, values, where=where).items() if v != ""}
    mpi = None
    if draft.mpi is not None:
        m = draft.mpi
        mpi = MpiSpec(
            mpirun=fill(m["mpirun"], values, where=where),
            timeout_seconds=int(m["timeoutSeconds"]),
            prefix=tuple(fill_all(m["prefix"], values, where=where)),
            extra_args=tuple(fill_all(m["args"], values, where=where)),
            binary=fill(m["binary"], values, where=where),
            binary_args=tuple(fill_all(m["binaryArgs"], values, where=where)),
        )
    env = tuple((name, fill(value, values, where=f"{where} env {name}")) for name, value in draft.env.items())
    return WorkloadSpec(
        launch=draft.launch,
        image=fill(draft.image, values, where=where),
        command=tuple(fill_all(draft.command, values, where=where)),
        args=tuple(fill_all(draft.args, values, where=where)),
        mpi=mpi,
        env=env,
        gpus_per_node=gpus,
        resources=resources,
        pod_resources=fill_all(draft.pod_resources, values, where=where),
        capabilities=tuple(draft.capabilities),
        privileged=draft.privileged,
        host_network=draft.host_network,
        restart_policy=draft.restart_policy,
        pod_annotations=annotations,
        tolerations=tuple(draft.tolerations),
        blanket_toleration=draft.blanket_toleration,
        host_paths=tuple(fill_all(draft.host_paths, values, where=where)),
        sidecars=tuple(fill_all(draft.sidecars, values, where=where)),
        claims=tuple(claims),
        compute_domain=draft.compute_domain,
        pre_command=tuple(fill_all(draft.pre_command, values, where=where)),
        config_files=tuple(draft.config_files),
        init_script=None,
        checkpoint=None,
    )


def _merge_user_env(
    env: list[tuple[str, str]], sources: dict[str, str], user: Iterable[Any] | None, source: str
) -> list[tuple[str, str]]:
    """User variables replace catalog ones by name (in place) or are appended."""
    merged = dict(env)
    for var in user or []:
        name = var["name"] if isinstance(var, Mapping) else var.name
        value = var.get("value", "") if isinstance(var, Mapping) else (var.value or "")
        merged[name] = value
        sources[name] = source
    return list(merged.items())


def _labels(entry_labels: Mapping[str, str] | None, opts: CategoryOptions, gang: GangScheduling | None, where: str) -> dict[str, str]:
    labels = dict(entry_labels or {})
    if opts.workload_metadata is not None and opts.workload_metadata.labels:
        labels.update(opts.workload_metadata.labels)
    if gang is not None:
        have = labels.get(gang.queue_label_key)
        if have is not None and have != gang.queue:
            raise ManifestError(
                f"{where}.workloadMetadata.labels[{gang.queue_label_key}]",
                f'conflicting label value "{have}", expected "{gang.queue}" (the gang scheduler queue); '
                "remove the label or set gangScheduler.queue to the same value",
            )
        labels[gang.queue_label_key] = gang.queue
    if len(labels) > MAX_WORKLOAD_LABELS:
        raise ManifestError(
            f"{where}.workloadMetadata.labels",
            f"{len(labels)} labels after merging catalog, global, category and gang-queue labels; "
            f"at most {MAX_WORKLOAD_LABELS} are allowed",
        )
    return labels


def _pod_resources(draft: WorkloadDraft, opts: CategoryOptions) -> None:
    """The user's training ``resources`` option wins value by value."""
    if not draft.pod_resources or opts.resources is None:
        return
    for part in ("limits", "requests"):
        amounts = getattr(opts.resources, part)
        if amounts is None:
            continue
        for name in ("cpu", "memory"):
            value = getattr(amounts, name)
            if value is not None:
                draft.pod_resources.setdefault(part, {})[name] = str(value)


def resolve_category(
    category: Any,
    global_options: Any = None,
    *,
    platform: str,
    gpu_arch: str,
    env: Sequence[Any] | None = None,
    gang_scheduler: Any = None,
    nic_resource_name: str | None = None,
    target: Any = None,
    index: int | None = None,
    source: str | None = None,
    gke_networks: GkeNetworks | None = None,
    tcpxo: TcpxoProfile | None = None,
) -> ResolvedCategory:
    """Everything one category needs to run on ``platform`` / ``gpu_arch``.

    ``category`` is a CertificationCategory (or its dict); ``global_options`` the
    Certification spec (its inline options) or a CategoryOptions. ``env`` is an extra
    last env layer (e.g. the controller forcing ``NCCL_MNNVL_ENABLE=0`` in a diagnose
    round). ``nic_resource_name`` is the detected on-prem NIC resource, if any;
    ``gke_networks`` / ``tcpxo`` what ``nvcre.discovery.gke`` read on GCP H100 nodes.
    ``index`` names ``spec.categories[index]`` in errors.
    """
    cat = _as_category(category, index)
    entry = _lookup(cat.domain, cat.variant, index, source)
    plat, arch = _check_context(platform, gpu_arch)
    where = f"spec.categories[{index}].options" if index is not None else "options"
    opts = merge_options(_as_options(global_options), cat.options)
    data = entry.data
    defaults = data.get("defaults") or {}

    hw = hardware_defaults(arch, plat)
    gpus = opts.gpus_per_node or hw.gpus_per_node
    mlnx = opts.mlnx_per_node if opts.mlnx_per_node is not None else hw.mlnx_per_node
    mnnvl = opts.enable_mnnvl if opts.enable_mnnvl is not None else hw.mnnvl
    nic = opts.nic_resource_name or nic_resource_name or ""
    warnings = [w for w in [hw.warning()] if w]

    scales = data.get("testScales") or [defaults.get("testScale", "full-scale")]
    requested_scale = opts.test_scale
    test_scale = requested_scale if requested_scale in scales else defaults.get("testScale", "full-scale")
    diagnose = test_scale == "diagnose"

    parallel = (data.get("parallelism") or {})
    config_arch = "gb200" if arch == "gb300" else arch
    tp_pp = parallel.get(config_arch) or parallel.get("default") or {"tp": 1, "pp": 1}
    max_steps = opts.max_steps if opts.max_steps is not None else int(defaults.get("maxSteps", 50))
    checkpoint_on = bool(opts.enable_checkpoint)
    save_interval = opts.save_interval or int(defaults.get("saveInterval", 250))
    megatron = load_catalog().megatron
    values: dict[str, Any] = {
        "gpusPerNode": gpus,
        "mlnxPerNode": mlnx,
        "nicResourceName": nic,
        "mnnvl": "1" if mnnvl else "0",
        "op": data.get("op", ""),
        "maxBytes": opts.max_bytes or defaults.get("maxBytes", "16G"),
        "numIterations": opts.num_iterations or (defaults.get("diagnoseIterations", 5) if diagnose else defaults.get("numIterations", 100)),
        "numCycles": opts.num_cycles or (defaults.get("diagnoseCycles", 1) if diagnose else defaults.get("numCycles", 10)),
        "dcgmHost": opts.dcgm_host or defaults.get("dcgmHost", ""),
        # -1 (unlimited) becomes the largest count Megatron accepts.
        "maxSteps": 2_147_483_647 if max_steps == -1 else max_steps,
        "exitDurationMins": opts.exit_duration_mins or defaults.get("exitDurationMins", 30),
        "enableCheckpoint": "true" if checkpoint_on else "false",
        "saveInterval": save_interval,
        "saveRetainInterval": opts.save_retain_interval or defaults.get("saveRetainInterval", 1000),
        "tp": tp_pp.get("tp", 1),
        "pp": tp_pp.get("pp", 1),
        "sourceRepo": opts.source_repo or megatron["sourceRepo"],
        "branch": megatron["branch"],
        "checkpointArgs": (
            f"--save /mnt/checkpoints --load /mnt/checkpoints --save-interval {save_interval}" if checkpoint_on else ""
        ),
        **{k: v for k, v in (data.get("model") or {}).items()},
    }

    tcpxo_values, events = _tcpxo_values(plat, arch, data["image"], gke_networks, tcpxo)
    values.update(tcpxo_values)
    warnings += [message for _, _, message in events]
    events = [("Warning", "GPUArchitectureDefaults", w) for w in [hw.warning()] if w] + events
    draft = WorkloadDraft(entry, entry.launch, data["image"])
    if data.get("script") == "megatron":
        draft.command = ["/bin/bash", "-c", megatron["launch"]]
    ctx = _context(entry.tags, entry.launch, entry.variant, plat, arch, mnnvl, gpus)
    _apply_fragments(draft, ctx)
    applied = list(draft.applied)
    if opts.rdma_device_access == "hostPath" and set(entry.tags) & {"collective", "training"}:
        draft.host_paths.append({"name": "infiniband", "path": "/dev/infiniband", "mountPath": "/dev/infiniband", "type": "Directory"})
        draft.privileged = True
        applied.append("option/rdmaDeviceAccess=hostPath")
    values.update(draft.var_overrides)
    _pod_resources(draft, opts)
    workload = _freeze(draft, values, where=entry.source, gpus=gpus)

    env_sources = dict(draft.env_sources)
    env_list = _merge_user_env(list(workload.env), env_sources, opts.env, "options.env")
    env_list = _merge_user_env(env_list, env_sources, env, "controller")

    image = opts.image or workload.image
    pull_secrets = tuple(ref.name for ref in opts.image_pull_secrets or [] if getattr(ref, "name", None))
    init_script = fill(megatron["prepare"], values, where="_lib/megatron.yaml") if data.get("script") == "megatron" else None
    checkpoint = None
    if checkpoint_on and entry.launch == "torchrun":
        checkpoint = {
            "storageSize": opts.storage_size or defaults.get("storageSize", "10Ti"),
            "storageClassName": opts.storage_class_name,
            "maxRestarts": opts.max_restarts if opts.max_restarts is not None else int(defaults.get("maxRestarts", 0)),
        }
    workload = _replace(workload, env=tuple(env_list), image=image, image_pull_secrets=pull_secrets,
                        init_script=init_script, checkpoint=checkpoint)
    if workload.mpi is not None:
        _check_trainer_args(workload, where)

    # Thresholds: a category asking for a metric its entry cannot measure is a mistake;
    # a global threshold simply does not apply to entries without that metric.
    supported = set(data.get("thresholds") or [])
    thresholds: dict[str, str] = {}
    category_thresholds = (cat.options.thresholds if cat.options else None) or {}
    for key, expr in (opts.thresholds or {}).items():
        if key in supported:
            thresholds[key] = expr
        elif key in category_thresholds:
            measured = ", ".join(sorted(supported)) or "nothing (it passes or fails by exit code)"
            raise ManifestError(f"{where}.thresholds.{key}", f"{entry.key} does not measure {key}; it measures {measured}")
        else:
            warnings.append(f"threshold {key} does not apply to {entry.key} and is ignored")

    if opts.timeout_per_job:
        timeout = str(opts.timeout_per_job)
    elif diagnose:
        timeout = defaults.get("timeoutPerJobDiagnose", "15m")
    else:
        timeout = defaults.get("timeoutPerJob", "1h")
    nodes_rule = defaults.get("nodesPerJob", "all")
    nodes_per_job = 1 if nodes_rule == "one" or test_scale == "intra-node" else opts.nodes_per_job
    if opts.placement == "Unpinned" and not opts.nodes_per_job:
        raise ManifestError(
            f"{where}.placement",
            f"category {entry.key}: placement Unpinned needs an explicit nodesPerJob (globally or on the category)",
            source=source,
        )
    gang = _gang(gang_scheduler)
    labels = _labels(data.get("labels"), opts, gang, where)
    taints = [t.get("key") for t in target_dict(target).get("taintSelectors") or []]
    measurement = data.get("measurement")
    return ResolvedCategory(
        domain=entry.domain,
        variant=entry.variant,
        platform=plat,
        gpu_arch=arch,
        summary=data["summary"],
        workload=workload,
        env=workload.env,
        env_sources=env_sources,
        labels=labels,
        image=image,
        image_pull_secrets=pull_secrets,
        workload_registry=opts.workload_registry or None,
        timeout_per_job=timeout,
        test_scale=test_scale,
        requested_test_scale=requested_scale,
        nodes_per_job=nodes_per_job,
        placement=opts.placement or "Pinned",
        gpus_per_node=gpus,
        mlnx_per_node=mlnx,
        nic_resource_name=nic or None,
        enable_mnnvl=mnnvl,
        thresholds=thresholds,
        measurement=Measurement(
            kind=measurement["kind"], log_profile=measurement["logProfile"],
            sample_interval=measurement.get("sampleInterval", "60s"), test_type=measurement.get("testType"),
        ) if measurement else None,
        measurement_timeout=str(opts.measurement_timeout) if opts.measurement_timeout else None,
        applied_overrides=tuple(applied),
        gang=gang,
        topology_key=draft.topology_key,
        iterations=opts.repeat_count or 1,
        max_concurrent=opts.max_concurrent or 0,
        min_group_size=opts.min_group_size or 2,
        isolate_failures=opts.isolate_failures is not False,
        node_health_expression="" if UNSCHEDULABLE_TAINT in taints else NODE_HEALTH_DEFAULT,
        stall_multiplier=defaults.get("stallMultiplier"),
        startup_stall_timeout_seconds=(
            opts.startup_stall_timeout_seconds
            if opts.startup_stall_timeout_seconds is not None
            else defaults.get("startupStallTimeoutSeconds")
        ),
        min_gpus=data.get("minGPUs"),
        tensor_parallel=int(values["tp"]),
        pipeline_parallel=int(values["pp"]),
        warnings=tuple(warnings),
        events=tuple(events),
    )


def _replace(workload: WorkloadSpec, **changes: Any) -> WorkloadSpec:
    from dataclasses import replace

    return replace(workload, **changes)


def _check_trainer_args(workload: WorkloadSpec, where: str) -> None:
    _, args = mpirun_argv(workload)
    if len(args) > TRAINER_ARGS_CAP:
        raise ManifestError(
            f"{where}.env",
            f"the mpirun argument list would have {len(args)} items ({len(workload.env)} variables forwarded as "
            f"-x NAME=VALUE); Kubeflow Trainer accepts at most {TRAINER_ARGS_CAP} trainer args: set fewer env variables",
        )


# ---------------------------------------------------------------------------
# WorkloadRun: the user's workload with the platform/GPU fragments tagged `workloadrun`.


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, _snake(name), default)


def _dump(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(by_alias=True, exclude_none=True)
    return obj


def resolve_workloadrun(
    run: Any,
    *,
    platform: str,
    gpu_arch: str,
    nic_resource_name: str | None = None,
    gke_networks: GkeNetworks | None = None,
    tcpxo: TcpxoProfile | None = None,
) -> ResolvedCategory:
    """Resolve a WorkloadRun (pydantic object or manifest dict) like a catalog category.

    The framework decides the launch: ``mpi`` (launcher + sshd workers, env as ``-x``),
    ``torch`` (torchrun on every node) or ``exec`` (the command on every node).
    """
    spec = _get(run, "spec") if _get(run, "spec") is not None else run
    plat, arch = _check_context(platform, gpu_arch)
    catalog = load_catalog()
    base = catalog.workloadrun
    framework = _get(spec, "framework") or {}
    kinds = [k for k in ("torch", "mpi", "exec") if _get(framework, k) is not None]
    if len(kinds) != 1:
        raise ManifestError("spec.framework", "set exactly one of torch, mpi or exec")
    kind = kinds[0]
    fw = _get(framework, kind)
    launch = {"torch": "torchrun", "mpi": "mpi", "exec": "exec"}[kind]

    hw = hardware_defaults(arch, plat)
    gpus = _get(spec, "gpusPerNode") or hw.gpus_per_node
    mlnx = _get(spec, "mlnxPerNode")
    mlnx = hw.mlnx_per_node if mlnx is None else mlnx
    mnnvl = _get(spec, "enableMNNVL")
    mnnvl = hw.mnnvl if mnnvl is None else bool(mnnvl)
    nic = _get(spec, "nicResourceName") or nic_resource_name or ""
    warnings = [w for w in [hw.warning("spec.gpusPerNode and spec.mlnxPerNode")] if w]

    draft = WorkloadDraft(None, launch, _get(spec, "image"))
    draft.set_env(base.get("baseEnv") or {}, "_lib/workloadrun.yaml", weak=True)
    if kind == "mpi":
        draft.mpi = {
            "mpirun": _get(fw, "mpirunPath"),
            "timeoutSeconds": int((base.get("mpi") or {}).get("timeoutSeconds", 3600)),
            "prefix": [],
            "args": [str(a) for a in _get(fw, "mpiArgs") or []],
            "binary": _get(fw, "binary"),
            "binaryArgs": [str(a) for a in _get(fw, "args") or []],
        }
        draft.capabilities.append("IPC_LOCK")
    elif kind == "torch":
        script, module = _get(fw, "script"), _get(fw, "module")
        draft.command = ["torchrun"]
        draft.args = ([script] if script else ["-m", module]) + [str(a) for a in _get(fw, "args") or []]
    else:
        draft.command = [str(c) for c in _get(fw, "command") or []]
        draft.args = [str(a) for a in _get(fw, "args") or []]
    tags = ("workloadrun", launch)
    ctx = _context(tags, launch, _get(_get(run, "metadata"), "name", "") or "", plat, arch, mnnvl, gpus)
    # Fragment values must not be filled against user text (their own {{holes}} only).
    user_mpi = draft.mpi and (list(draft.mpi["args"]), list(draft.mpi["binaryArgs"]), draft.mpi["binary"], draft.mpi["mpirun"])
    user_cmd = (list(draft.command), list(draft.args))
    if draft.mpi is not None:
        draft.mpi.update(args=[], binaryArgs=[], binary="", mpirun="")
    draft.command, draft.args = [], []
    draft.image = ""
    _apply_fragments(draft, ctx)
    values = {"gpusPerNode": gpus, "mlnxPerNode": mlnx, "nicResourceName": nic, "mnnvl": "1" if mnnvl else "0", "op": ""}
    tcpxo_values, events = _tcpxo_values(plat, arch, "", gke_networks, tcpxo)
    values.update(tcpxo_values)
    warnings += [message for _, _, message in events]
    events = [("Warning", "GPUArchitectureDefaults", w) for w in [hw.warning("spec.gpusPerNode and spec.mlnxPerNode")] if w] + events
    values.update(draft.var_overrides)
    workload = _freeze(draft, values, where="_lib/workloadrun.yaml", gpus=gpus)
    mpi = workload.mpi
    if mpi is not None and user_mpi:
        user_args, user_bin_args, binary, mpirun = user_mpi
        mpi = MpiSpec(mpirun=mpirun, timeout_seconds=mpi.timeout_seconds, prefix=mpi.prefix,
                      extra_args=mpi.extra_args + tuple(user_args), binary=binary, binary_args=tuple(user_bin_args))
    env_sources = dict(draft.env_sources)
    user_env = list(_get(spec, "env") or [])
    refs = tuple((_get(v, "name"), _dump(_get(v, "valueFrom"))) for v in user_env if _get(v, "valueFrom") is not None)
    ref_names = {name for name, _ in refs}
    env_list = _merge_user_env(list(workload.env), env_sources, [v for v in user_env if _get(v, "name") not in ref_names], "spec.env")
    env_list = [(n, v) for n, v in env_list if n not in ref_names]
    for name in ref_names:
        env_sources[name] = "spec.env (valueFrom)"
    pull = tuple(_get(r, "name") for r in _get(spec, "imagePullSecrets") or [] if _get(r, "name"))
    user_resources = _dump(_get(spec, "resources")) or {}
    pod_resources = {}
    resources = dict(workload.resources)
    for part in ("limits", "requests"):
        for rname, amount in (user_resources.get(part) or {}).items():
            if rname == "nvidia.com/gpu":
                resources[rname] = str(amount)
            else:
                pod_resources.setdefault(part, {})[rname] = str(amount)
    volumes = tuple(_dump(v) for v in _get(spec, "volumes") or [])
    mounts = tuple(_dump(m) for m in _get(spec, "volumeMounts") or [])
    inits = tuple(_dump(c) for c in _get(spec, "initContainers") or [])
    _check_reserved_volumes(volumes, mounts)
    config = None
    cfg = _get(spec, "config")
    if cfg is not None:
        if _get(cfg, "inline"):
            config = {"inline": dict(_get(cfg, "inline"))}
            for key in config["inline"]:  # the API server cannot check map keys; a bad one would retry forever
                problem = check_config_key(key)
                if problem:
                    raise ManifestError(f"spec.config.inline[{key}]"[:300], problem)
        elif _get(cfg, "configMapRef") is not None:
            config = {"configMapRef": _get(_get(cfg, "configMapRef"), "name")}
    workload = _replace(
        workload, image=_get(spec, "image"), command=tuple(user_cmd[0]), args=tuple(user_cmd[1]), mpi=mpi,
        env=tuple(env_list), image_pull_secrets=pull, resources=resources, pod_resources=pod_resources,
        volumes=volumes, volume_mounts=mounts, init_containers=inits, config=config, env_refs=refs,
    )
    if mpi is not None:
        _check_trainer_args(workload, "spec")
    orchestration = _get(spec, "orchestration") or {}
    test_scale = _get(orchestration, "testScale") or "full-scale"
    num_nodes = _get(spec, "numNodes")
    gang = _gang(_get(spec, "gangScheduler"))
    wm = _get(spec, "workloadMetadata")
    labels = dict(_get(wm, "labels") or {})
    opts = CategoryOptions.model_construct(workload_metadata=wm) if wm is not None else CategoryOptions.model_construct()
    labels = _labels(None, opts, gang, "spec")
    bw, gp = _get(spec, "bandwidthMeasurement"), _get(spec, "goodputMeasurement")
    measurement = None
    if bw is not None:
        measurement = Measurement("BandwidthMeasurement", _get(bw, "logProfileRef"), str(_get(bw, "sampleInterval") or "60s"), _get(bw, "testType"))
    elif gp is not None:
        measurement = Measurement("GoodputMeasurement", _get(gp, "logProfileRef"), str(_get(gp, "sampleInterval") or "60s"))
    checkpoint = _get(spec, "checkpoint")
    if checkpoint is not None:
        workload = _replace(workload, checkpoint={
            "storageSize": _get(checkpoint, "storageSize"),
            "storageClassName": _get(checkpoint, "storageClassName"),
            "maxRestarts": _get(checkpoint, "maxRestarts") or 0,
        })
    return ResolvedCategory(
        domain="workloadrun",
        variant=kind,
        platform=plat,
        gpu_arch=arch,
        summary=f"WorkloadRun ({kind})",
        workload=workload,
        env=workload.env,
        env_sources=env_sources,
        labels=labels,
        image=workload.image,
        image_pull_secrets=pull,
        workload_registry=_get(spec, "workloadRegistry") or None,
        timeout_per_job=str(_get(orchestration, "timeoutPerJob") or base["defaults"]["timeoutPerJob"]),
        test_scale=test_scale,
        requested_test_scale=_get(orchestration, "testScale"),
        nodes_per_job=1 if test_scale == "intra-node" else num_nodes,
        placement=_get(orchestration, "placement") or "Pinned",
        gpus_per_node=gpus,
        mlnx_per_node=mlnx,
        nic_resource_name=nic or None,
        enable_mnnvl=mnnvl,
        thresholds=dict(_get(spec, "thresholds") or {}),
        measurement=measurement,
        measurement_timeout=None,
        applied_overrides=tuple(draft.applied),
        gang=gang,
        topology_key=draft.topology_key,
        iterations=_get(orchestration, "repeatCount") or 1,
        max_concurrent=_get(orchestration, "maxConcurrent") or 0,
        min_group_size=2,
        node_health_expression=NODE_HEALTH_DEFAULT,
        warnings=tuple(warnings),
        events=tuple(events),
    )


RESERVED_VOLUMES = set(RESERVED_VOLUME_NAMES)  # one list with the API models and the CRD (nvcre.api.rules)
RESERVED_MOUNTS = set(RESERVED_MOUNT_PATHS)


def _check_reserved_volumes(volumes: Sequence[Mapping[str, Any]], mounts: Sequence[Mapping[str, Any]]) -> None:
    for i, vol in enumerate(volumes):
        if vol.get("name") in RESERVED_VOLUMES:
            raise ManifestError(f"spec.volumes[{i}].name", f"{vol['name']!r} is used by nvcre itself; pick another name")
    for i, mount in enumerate(mounts):
        if mount.get("mountPath") in RESERVED_MOUNTS:
            raise ManifestError(f"spec.volumeMounts[{i}].mountPath", f"{mount['mountPath']} is used by nvcre itself; pick another path")


# ---------------------------------------------------------------------------
# Rendering
