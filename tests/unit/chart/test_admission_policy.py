"""The chart's least-privilege ValidatingAdmissionPolicy, evaluated here with a CEL engine
over every escalation class of issue 13 (tests/e2e/test_tenant_escalation.py runs it in the
real API server as a tenant)."""

from __future__ import annotations

import copy
import itertools

import pytest
import yaml
from admission_policy import CHART, CONTROLLER, admitted, findings
from hypothesis import given, settings
from hypothesis import strategies as st

from nvcre.catalog.data import load_catalog
from nvcre.catalog.resolve import resolve_category, resolve_workloadrun
from nvcre.workloads.render import render_workload

PLATFORMS = ("aws", "gcp", "azure", "oci", "onprem", "forge", "mistral", "nscale", "togetherai")
WORKFLOW_OWNER = [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Workflow", "name": "wf", "uid": "u", "controller": True}]


def _plain_objects() -> list[dict]:
    return copy.deepcopy(_PLAIN)


def _render_plain() -> list[dict]:
    run = {"metadata": {"name": "r"}, "spec": {"image": "busybox", "framework": {"exec": {"command": ["true"]}}, "numNodes": 1}}
    return render_workload(resolve_workloadrun(run, platform="onprem", gpu_arch="h100"), name="w", namespace="team-a", nodes=["n1"])


_PLAIN = _render_plain()


def _job(objects: list[dict], owners: list[dict] | None = None) -> dict:
    meta = {"name": "j", "namespace": "team-a", **({"ownerReferences": owners} if owners else {})}
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job", "metadata": meta,
            "spec": {"workload": {"native": {"objects": objects}}}}


def _pod(objects: list[dict]) -> dict:
    return next(o for o in objects if o["kind"] == "Job")["spec"]["template"]["spec"]


def test_a_plain_workload_needs_nothing():
    assert findings("jobs", _job(_plain_objects())) == {"trusted": False, "privileged": [], "escalate": []}


# (mutation of a plain Job's objects, the verb it needs)
def _set(path: str, value):
    def apply(objects):
        target = _pod(objects)
        *parents, last = path.split(".")
        for p in parents:
            target = target[int(p)] if p.isdigit() else target.setdefault(p, {})
        target[last] = value
    return apply


def _add_volume(volume):
    return lambda objects: _pod(objects).setdefault("volumes", []).append(volume)


def _add_object(obj):
    return lambda objects: objects.append(obj)


def _add_init(container):
    return lambda objects: _pod(objects).setdefault("initContainers", []).append(container)


def _annotate(annotations):
    def apply(objects):
        job = next(o for o in objects if o["kind"] == "Job")
        job["spec"]["template"].setdefault("metadata", {}).setdefault("annotations", {}).update(annotations)
    return apply


HOSTILE = {
    "privileged": (_set("containers.0.securityContext.privileged", True), "privileged"),
    "hostPID": (_set("hostPID", True), "privileged"),
    "hostNetwork": (_set("hostNetwork", True), "privileged"),
    "hostIPC": (_set("hostIPC", True), "privileged"),
    "hostPath-root": (_add_volume({"name": "root", "hostPath": {"path": "/"}}), "privileged"),
    "nfs-volume": (_add_volume({"name": "n", "nfs": {"server": "x", "path": "/"}}), "privileged"),
    "csi-volume": (_add_volume({"name": "c", "csi": {"driver": "secrets-store.csi.k8s.io"}}), "privileged"),
    "cap-sys-admin": (_set("containers.0.securityContext.capabilities", {"add": ["SYS_ADMIN"]}), "privileged"),
    "host-port": (_set("containers.0.ports", [{"containerPort": 22, "hostPort": 22}]), "privileged"),
    "seccomp-unconfined": (_set("securityContext", {"seccompProfile": {"type": "Unconfined"}}), "privileged"),
    "proc-unmasked": (_set("containers.0.securityContext.procMount", "Unmasked"), "privileged"),
    "privileged-init": (_add_init({"name": "i", "image": "x", "securityContext": {"privileged": True}}), "privileged"),
    "privileged-ephemeral": (_set("ephemeralContainers", [{"name": "e", "securityContext": {"privileged": True}}]), "privileged"),
    "apparmor-unconfined-field": (_set("containers.0.securityContext.appArmorProfile", {"type": "Unconfined"}), "privileged"),
    "apparmor-unconfined-pod-field": (_set("securityContext", {"appArmorProfile": {"type": "Unconfined"}}), "privileged"),
    "apparmor-unconfined-annotation": (_annotate({"container.apparmor.security.beta.kubernetes.io/main": "unconfined"}),
                                       "privileged"),
    "selinux-spc-type": (_set("securityContext", {"seLinuxOptions": {"type": "spc_t"}}), "privileged"),
    "selinux-container-user": (_set("containers.0.securityContext.seLinuxOptions", {"user": "system_u"}), "privileged"),
    "selinux-container-role": (_set("containers.0.securityContext.seLinuxOptions", {"role": "sysadm_r"}), "privileged"),
    "sysctl-unsafe": (_set("securityContext", {"sysctls": [{"name": "kernel.core_pattern", "value": "|/x"}]}), "privileged"),
    "sysctl-unsafe-after-safe": (_set("securityContext", {"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"},
                                                                        {"name": "kernel.msgmax", "value": "1"}]}), "privileged"),
    "secret-object": (_add_object({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}), "escalate"),
    "cluster-role-binding": (_add_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                                          "metadata": {"name": "x"}}), "escalate"),
    "role": (_add_object({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "x"}}), "escalate"),
    "namespace": (_add_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}), "escalate"),
    "raw-pod": (_add_object({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}), "escalate"),
    "kindless": (_add_object({"metadata": {"name": "x"}}), "escalate"),
    "secret-volume": (_add_volume({"name": "s", "secret": {"secretName": "db"}}), "escalate"),
    "projected-secret": (_add_volume({"name": "p", "projected": {"sources": [{"secret": {"name": "db"}}]}}), "escalate"),
    "env-secret": (_set("containers.0.env", [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "db", "key": "k"}}}]), "escalate"),
    "envfrom-secret": (_set("containers.0.envFrom", [{"secretRef": {"name": "db"}}]), "escalate"),
    "service-account": (_set("serviceAccountName", "ci-admin"), "escalate"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_escalation_needs_its_verb(name):
    mutate, verb = HOSTILE[name]
    objects = _plain_objects()
    mutate(objects)
    job = _job(objects)
    f = findings("jobs", job)
    assert f[verb], f
    other = "escalate" if verb == "privileged" else "privileged"
    assert not f[other], f
    assert not admitted("jobs", job)
    assert not admitted("jobs", job, grants={other})
    assert admitted("jobs", job, grants={verb})
    # the controller is exempt only for a Job it owns through a Workflow
    assert admitted("jobs", _job(objects, WORKFLOW_OWNER), user=CONTROLLER)
    assert not admitted("jobs", job, user=CONTROLLER)
    assert not admitted("jobs", _job(objects, WORKFLOW_OWNER))


@settings(max_examples=60, deadline=None)
@given(st.sets(st.sampled_from(sorted(HOSTILE)), max_size=5))
def test_any_combination_is_refused_unless_every_needed_verb_is_held(chosen):
    objects = _plain_objects()
    for name in sorted(chosen):
        HOSTILE[name][0](objects)
    needed = {HOSTILE[n][1] for n in chosen}
    job = _job(objects)
    f = findings("jobs", job)
    assert {v for v in ("privileged", "escalate") if f[v]} == needed
    assert admitted("jobs", job, grants=needed)
    for missing in needed:
        assert not admitted("jobs", job, grants=needed - {missing})


def test_a_raw_trainjob_needs_escalate():
    job = {"metadata": {"name": "j"}, "spec": {"workload": {"trainJob": {"runtimeRef": {"name": "evil"}}}}}
    assert findings("jobs", job)["escalate"]


def test_catalog_workloads_pass_only_through_the_controller():
    """Every category on every platform, both adapters: the controller's Jobs are admitted;
    the same objects submitted by a tenant need the verbs (MPI Secret, dcgm privileged, ...)."""
    tenant_refused = set()
    for entry, platform, adapter in itertools.product(load_catalog().sorted_entries(), ("aws", "gcp", "oci", "onprem"),
                                                      ("native", "trainjob")):
        r = resolve_category({"domain": entry.domain, "variant": entry.variant}, None, platform=platform, gpu_arch="h100")
        nodes = ["n1"] if r.nodes_per_job == 1 else [f"n{i}" for i in range(1, (r.valid_node_count(8) or 2) + 1)]
        objects = render_workload(r, name="w", namespace="team-a", nodes=nodes, adapter=adapter)
        assert admitted("jobs", _job(objects, WORKFLOW_OWNER), user=CONTROLLER)
        if not admitted("jobs", _job(objects)):
            tenant_refused.add(entry.key)
    assert "diagnostics/dcgm-level4" in tenant_refused and "communication/nccl-all-reduce" in tenant_refused


def _run(**spec) -> dict:
    base = {"image": "busybox", "framework": {"exec": {"command": ["true"]}}, "numNodes": 1}
    return {"metadata": {"name": "r", "namespace": "team-a"}, "spec": {**base, **spec}}


@pytest.mark.parametrize("spec, verb", [
    ({"volumes": [{"name": "root", "hostPath": {"path": "/"}}], "volumeMounts": [{"name": "root", "mountPath": "/host"}]}, "privileged"),
    ({"initContainers": [{"name": "i", "image": "x", "securityContext": {"privileged": True}}]}, "privileged"),
    ({"initContainers": [{"name": "i", "image": "x", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}]}, "privileged"),
    ({"volumes": [{"name": "s", "secret": {"secretName": "db"}}]}, "escalate"),
    ({"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "db", "key": "k"}}}]}, "escalate"),
    ({"initContainers": [{"name": "i", "image": "x", "envFrom": [{"secretRef": {"name": "db"}}]}]}, "escalate"),
])
def test_workloadrun_escalations(spec, verb):
    run = _run(**spec)
    f = findings("workloadruns", run)
    assert f[verb] and admitted("workloadruns", run, grants={verb}) and not admitted("workloadruns", run)


def test_a_plain_workloadrun_needs_nothing():
    run = _run(volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}, {"name": "c", "configMap": {"name": "c"}}],
               env=[{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}],
               initContainers=[{"name": "i", "image": "x", "securityContext": {"capabilities": {"add": ["CHOWN"]}}}])
    assert admitted("workloadruns", run)


def _cert(categories, **spec) -> dict:
    return {"metadata": {"name": "c", "namespace": "team-a"}, "spec": {"target": {}, "categories": categories, **spec}}


def test_certification_knobs_that_give_host_access():
    loop = {"domain": "communication", "variant": "nccl-loopback"}
    assert admitted("certifications", _cert([loop]))
    assert admitted("certifications", _cert([loop], env=[{"name": "NCCL_DEBUG", "value": "INFO"}]))
    for cert in (_cert([loop], image="evil"), _cert([{**loop, "options": {"image": "evil"}}]),
                 _cert([loop], workloadRegistry="mirror.local:5000"),
                 _cert([{**loop, "options": {"workloadRegistry": "mirror.local:5000"}}]),
                 _cert([{"domain": "training", "variant": "nemotron5-8b", "options": {"sourceRepo": "https://x/y.git"}}]),
                 _cert([loop], rdmaDeviceAccess="hostPath"), _cert([{**loop, "options": {"rdmaDeviceAccess": "hostPath"}}])):
        f = findings("certifications", cert)
        assert f["privileged"] and not f["escalate"], cert
        assert admitted("certifications", cert, grants={"privileged"})


@pytest.mark.parametrize("kind", ["WorkloadRun", "Certification", "Workflow"])
def test_a_workflow_bound_to_someone_elses_run_needs_escalate(kind):
    """The controller takes a Workflow's workload from the run it is bound to (an owner of
    any of these kinds, or the run's label): a tenant's own Workflow bound so would re-run a
    privileged run that someone else was admitted for, on nodes the tenant picks."""
    owned = {"metadata": {"name": "w", "ownerReferences": [{"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": kind,
                                                           "name": "r", "uid": "u", "controller": True}]},
             "spec": {}}
    bound = [owned]
    if kind != "Workflow":
        label = "nvcre.nvidia.com/workload-run" if kind == "WorkloadRun" else "nvcre.nvidia.com/certification"
        bound.append({"metadata": {"name": "w", "labels": {label: "r"}}, "spec": {}})
    for wf in bound:
        assert findings("workflows", wf)["escalate"]
        assert admitted("workflows", copy.deepcopy(wf), user=CONTROLLER)
    assert admitted("workflows", {"metadata": {"name": "w"}, "spec": {}})


def test_host_access_categories_match_the_catalog():
    """The chart's list is exactly the categories some platform renders with host access,
    under their names and every alias the catalog accepts for them (the policy compares
    what the user wrote, so an alias must not slip past it)."""
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    expected = set()
    for entry, platform, arch in itertools.product(load_catalog().sorted_entries(), PLATFORMS, ("h100", "gb200", "gb300")):
        r = resolve_category({"domain": entry.domain, "variant": entry.variant}, None, platform=platform, gpu_arch=arch)
        nodes = ["n1"] if r.nodes_per_job == 1 else [f"n{i}" for i in range(1, (r.valid_node_count(8) or 2) + 1)]
        for adapter in ("native", "trainjob"):
            objects = render_workload(r, name="w", namespace="team-a", nodes=nodes, adapter=adapter)
            pods = [o["spec"]["template"]["spec"] for o in objects if o["kind"] == "Job" and o["apiVersion"] == "batch/v1"]
            text = str(objects)
            if "'hostPath'" in text or "'privileged': True" in text or any(p.get("hostNetwork") for p in pods):
                expected.add(entry.key)
    catalog = load_catalog()
    expected |= {f"{d}/{v}" for (d, v), target in catalog.aliases.items() if f"{target[0]}/{target[1]}" in expected}
    assert sorted(values["admissionPolicy"]["hostAccessCategories"]) == sorted(expected)


def test_updates_are_judged_again_only_when_spec_or_labels_change():
    import cel

    from admission_policy import POLICY

    (condition,) = POLICY["spec"]["matchConditions"]
    program = cel.compile(condition["expression"])
    old = {"metadata": {"name": "j", "labels": {"a": "1"}}, "spec": {"x": 1}}

    def judged(operation, new):
        return program.execute({"request": {"operation": operation}, "object": new, "oldObject": old})

    assert judged("CREATE", old)
    assert not judged("UPDATE", {**old, "metadata": {**old["metadata"], "finalizers": ["f"], "ownerReferences": []}})
    assert judged("UPDATE", {**old, "spec": {"x": 2}})
    assert judged("UPDATE", {**old, "metadata": {"name": "j", "labels": {"a": "2"}}})
    assert judged("UPDATE", {**old, "metadata": {"name": "j"}})


# What the Pod Security baseline allows stays a plain workload (no verb needed).
BASELINE_ALLOWED = {
    "apparmor-runtime-default": _set("containers.0.securityContext.appArmorProfile", {"type": "RuntimeDefault"}),
    "apparmor-localhost": _set("securityContext", {"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}),
    "apparmor-annotation-default": _annotate({"container.apparmor.security.beta.kubernetes.io/main": "runtime/default"}),
    "apparmor-annotation-localhost": _annotate({"container.apparmor.security.beta.kubernetes.io/main": "localhost/p"}),
    "other-annotation": _annotate({"example.com/unconfined": "unconfined"}),
    "selinux-container-t": _set("securityContext", {"seLinuxOptions": {"type": "container_t", "level": "s0:c1,c2"}}),
    "selinux-level-only": _set("containers.0.securityContext.seLinuxOptions", {"level": "s0:c9"}),
    "sysctl-safe": _set("securityContext", {"sysctls": [{"name": "net.ipv4.ip_local_port_range", "value": "1024 65535"},
                                                        {"name": "kernel.shm_rmid_forced", "value": "1"}]}),
}


@pytest.mark.parametrize("name", sorted(BASELINE_ALLOWED))
def test_what_the_pod_security_baseline_allows_needs_no_verb(name):
    objects = _plain_objects()
    BASELINE_ALLOWED[name](objects)
    assert findings("jobs", _job(objects)) == {"trusted": False, "privileged": [], "escalate": []}


def test_an_unsafe_sysctl_is_named():
    objects = _plain_objects()
    _set("securityContext", {"sysctls": [{"name": "net.ipv4.tcp_syncookies", "value": "1"},
                                         {"name": "kernel.core_pattern", "value": "|/x"}]})(objects)
    assert any("kernel.core_pattern" in f for f in findings("jobs", _job(objects))["privileged"])
