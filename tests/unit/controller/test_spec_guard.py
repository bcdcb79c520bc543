"""The controller creates only namespaced workload kinds from a Job's spec, and an MPI
run's SSH key exists only in the Secret it creates (never in the spec or a render)."""

from __future__ import annotations

import itertools
import json

import pytest
from test_reconcilers import FakeKube  # noqa: E402  (same directory)

from nvcre.catalog.data import load_catalog
from nvcre.catalog.resolve import resolve_category
from nvcre.workloads.render import render_workload
from nvcre.controller import conditions as c
from nvcre.controller import spec_guard
from nvcre.controller.context import Context, Settings
from nvcre.controller.reconcilers.job import reconcile_job
from nvcre.sim.fleet import FleetSpec, build_fleet
from nvcre.workloads import mpi

API = "nvcre.nvidia.com/v1alpha1"
PLATFORMS = ("aws", "gcp", "azure", "oci", "onprem")


def _job(objects: list[dict], name: str = "j") -> dict:
    return {"apiVersion": API, "kind": "Job", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"nodes": ["n1"], "workload": {"native": {"adapter": "native", "objects": objects}}}}


@pytest.fixture
def world():
    kube = FakeKube(build_fleet(FleetSpec(nodes=2, racks=1)).nodes)
    return kube, Context(kube=kube, settings=Settings(), clock=lambda: 1_800_000_000.0)


ESCAPES = [
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "pwn"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
     "subjects": [{"kind": "User", "name": "mallory"}]},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "pwn"}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n9"}},
    {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "x.y"}},
    {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "LogProfile", "metadata": {"name": "nccl-bandwidth"}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "raw"}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"}},
    {"apiVersion": "v1", "kind": "ConfigMap"},
]


@pytest.mark.parametrize("bad", ESCAPES, ids=lambda o: o["kind"])
def test_an_object_outside_the_workload_kinds_fails_the_job_and_nothing_is_created(world, bad):
    kube, ctx = world
    plain = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok"}}
    kube.add(_job([plain, bad]))
    assert reconcile_job(ctx, "ns", "j") is None
    job = kube.get(API, "Job", "j", "ns")
    assert c.reason_of(job["status"]["conditions"], c.FAILED) == "WorkloadCreationError"
    message = c.message_of(job["status"]["conditions"], c.FAILED)
    assert "objects[1]" in message and bad["kind"] in message
    assert kube.creates == []  # not even the plain ConfigMap before it
    assert not job["status"].get("failedNodes")  # a refused spec blames no node
    reconcile_job(ctx, "ns", "j")
    assert kube.creates == []


def test_every_kind_the_adapters_render_is_creatable():
    for entry, platform, adapter in itertools.product(load_catalog().sorted_entries(), PLATFORMS, ("native", "trainjob")):
        r = resolve_category({"domain": entry.domain, "variant": entry.variant}, None, platform=platform, gpu_arch="h100")
        nodes = ["n1"] if r.nodes_per_job == 1 else [f"n{i}" for i in range(1, (r.valid_node_count(8) or 2) + 1)]
        objects = render_workload(r, name="w", namespace="ns", nodes=nodes, adapter=adapter)
        assert spec_guard.refusal(objects) is None, (entry.key, platform, adapter)


def test_rendered_mpi_secret_carries_no_key_and_the_created_one_a_fresh_pair(world):
    kube, ctx = world
    r = resolve_category({"domain": "communication", "variant": "nccl-all-reduce"}, None, platform="aws", gpu_arch="h100")
    objects = render_workload(r, name="w", namespace="ns", nodes=["n1", "n2"], adapter="native")
    text = json.dumps(objects)
    assert "PRIVATE KEY" not in text and "ssh-ed25519" not in text
    secret = next(o for o in objects if o["kind"] == "Secret")
    assert "stringData" not in secret and "data" not in secret
    assert secret["metadata"]["annotations"][mpi.SSH_KEY_ANNOTATION]
    kube.add(_job(objects, name="w"))
    reconcile_job(ctx, "ns", "w")
    created = kube.get("v1", "Secret", "w-ssh", "ns")
    assert created["stringData"]["id_ed25519"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert created["stringData"]["authorized_keys"] == created["stringData"]["id_ed25519.pub"]
    assert created["metadata"]["ownerReferences"][0]["kind"] == "Job"  # goes with the run
    assert "PRIVATE KEY" not in json.dumps(kube.get(API, "Job", "w", "ns"))


def test_generated_keys_only_for_an_empty_annotated_secret():
    ask = mpi.ssh_secret_request({"name": "s", "annotations": {mpi.SSH_KEY_ANNOTATION: "nvcre-x"}})
    one, two = mpi.with_generated_keys(ask), mpi.with_generated_keys(ask)
    assert one["stringData"]["id_ed25519"] != two["stringData"]["id_ed25519"]
    assert one["stringData"]["id_ed25519.pub"].endswith(" nvcre-x")
    assert "stringData" not in ask  # the rendered object is not changed
    filled = {**ask, "stringData": {"id_ed25519": "mine"}}
    assert mpi.with_generated_keys(filled) is filled
    plain = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    assert mpi.with_generated_keys(plain) is plain
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "annotations": {mpi.SSH_KEY_ANNOTATION: "x"}}}
    assert mpi.with_generated_keys(cm) is cm
