"""`setup` phase ``deps``: Kubeflow Trainer (and its bundled JobSet) with Helm, the I/O side.

``observe`` reads the cluster into :class:`~nvcre.cli.deps_plan.DepsFacts`; the decision is
``deps_plan.decide`` (pure). ``install`` runs a plan, ``uninstall`` undoes only what
``install`` made. What setup init made is recorded on the cluster, not on this machine:
the Helm release carries the label ``nvcre.nvidia.com/installed-by=nvcrectl-setup``
(``helm --labels``, kept on Helm's release Secret) and so does every CRD it applied. A
Trainer or JobSet without that record is never upgraded or removed.

Like nvcre's own chart, the CRDs under a chart's ``crds/`` (Trainer's and, when bundled,
JobSet's) are applied server-side on every run and Helm is told ``--skip-crds``: Helm
installs ``crds/`` once and never upgrades them, and leaves no record of who did. CRDs a
chart ships as templates (Trainer 2.3 onwards) stay Helm's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from nvcre.cli.deps_plan import (
    INSTALLED_BY, INSTALLED_BY_LABEL, JOBSET_CRD, TRAINER_CRDS, DepsFacts, DepsPlan, HelmOwner, crd_fact,
    is_jobset_controller, jobset_controller,
)

if TYPE_CHECKING:  # pragma: no cover
    from nvcre.kube.client import KubeClient


class Helm(Protocol):
    """What this module needs of nvcre.cli.setup.Helm (which imports this module)."""

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess: ...

TRAINER_RELEASE = HelmOwner("kubeflow-trainer", "kubeflow-system")  # Kubeflow's documented install
FIELD_MANAGER = "nvcrectl-setup-deps"
OURS = f"{INSTALLED_BY_LABEL}={INSTALLED_BY}"


def release_secrets(client: KubeClient, release: HelmOwner) -> list[dict]:
    from nvcre.report.collect import list_if_allowed

    return list_if_allowed(client, "v1", "Secret", release.namespace, label_selector=f"owner=helm,name={release.release}")


def observe(client: KubeClient, crds: dict[str, dict], release: HelmOwner = TRAINER_RELEASE, *,
            strict: bool = True) -> DepsFacts:
    """The facts deps_plan.decide reads: Trainer's release, the Trainer and JobSet CRDs and
    every JobSet controller Deployment in the cluster. ``strict`` (init): a Deployment list
    the user may not read is an error, never read as "no JobSet controller"; status shows
    what it may read."""
    from nvcre.report.collect import list_if_allowed

    secrets = release_secrets(client, release)
    latest = max(secrets, key=lambda s: int(s["metadata"]["labels"].get("version", "0")), default=None)
    ours = bool(latest) and (latest["metadata"].get("labels") or {}).get(INSTALLED_BY_LABEL) == INSTALLED_BY
    deployments = client.list("apps/v1", "Deployment") if strict else list_if_allowed(client, "apps/v1", "Deployment")
    controllers = tuple(jobset_controller(d) for d in deployments if is_jobset_controller(d))
    return DepsFacts(
        release=release,
        release_installed=latest is not None,
        release_ours=ours,
        trainer_crds=tuple(crd_fact(crds[n]) for n in TRAINER_CRDS if n in crds),
        jobset_crd=crd_fact(crds[JOBSET_CRD]) if JOBSET_CRD in crds else None,
        jobset_controllers=controllers,
    )


def crd_files(chart: Path, bundled_jobset: bool) -> list[Path]:
    """The crds/ files this plan applies: Trainer's, and the JobSet subchart's when bundled."""
    files = sorted((chart / "crds").glob("*.yaml"))
    if bundled_jobset:
        files += sorted((chart / "charts" / "jobset" / "crds").glob("*.yaml"))
    return files


def apply_crds(client: KubeClient, files: list[Path]) -> list[str]:
    """Server-side apply each CRD, labelled as setup init's."""
    import yaml

    names = []
    for path in files:
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd:
                continue
            crd.setdefault("metadata", {}).setdefault("labels", {})[INSTALLED_BY_LABEL] = INSTALLED_BY
            name = crd["metadata"]["name"]
            client.request("PATCH", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
                           query={"fieldManager": FIELD_MANAGER, "force": "true"}, body=crd,
                           content_type="application/apply-patch+yaml", counter_key="APPLY CustomResourceDefinition")
            names.append(name)
    return names


def helm_args(plan: DepsPlan, chart: Path, release: HelmOwner = TRAINER_RELEASE) -> list[str]:
    """``helm upgrade --install`` arguments for a plan that installs."""
    return ["upgrade", "--install", release.release, str(chart), "-n", release.namespace, "--create-namespace",
            "--skip-crds", "--labels", OURS, "--set", f"jobset.install={'true' if plan.bundled_jobset else 'false'}"]


def install(helm: Helm, client: KubeClient, plan: DepsPlan, chart: Path, release: HelmOwner = TRAINER_RELEASE) -> str:
    """Run an installing plan: render, apply CRDs, helm upgrade --install. One line says what happened."""
    args = helm_args(plan, chart, release)
    helm.run("template", release.release, str(chart), "-n", release.namespace, "--set", args[-1])
    applied = apply_crds(client, crd_files(chart, plan.bundled_jobset))
    helm.run(*args)
    jobset = "with its bundled JobSet" if plan.bundled_jobset else "without JobSet (the external one is used)"
    return f"release {release.release} in {release.namespace} {jobset}; {len(applied)} CRDs applied"


def ours_installed(client: KubeClient) -> list[HelmOwner]:
    """Trainer releases setup init installed (by their release Secrets' label), any namespace."""
    found = {(s["metadata"]["labels"].get("name"), s["metadata"]["namespace"])
             for s in client.list("v1", "Secret", label_selector=f"owner=helm,{OURS}")}
    return sorted(HelmOwner(name, ns) for name, ns in found if name)


def uninstall(helm: Helm, client: KubeClient) -> tuple[list[str], list[str]]:
    """`setup reset` phase deps: uninstall the releases setup init installed, then delete the
    CRDs it applied (their objects go with them). (lines that say what was done, CRDs deleted)."""
    lines = []
    releases = ours_installed(client)
    # CRDs a chart ships as templates (Trainer 2.3) are the release's: gone with it, waited for
    templated = [c["metadata"]["name"] for c in client.list("apiextensions.k8s.io/v1", "CustomResourceDefinition")
                 if crd_fact(c).helm in releases]
    for release in releases:
        helm.run("uninstall", release.release, "-n", release.namespace)
        lines.append(f"{release} uninstalled (installed by setup init)")
    crds = [c["metadata"]["name"] for c in client.list("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                                      label_selector=OURS)] + templated
    crds = sorted(set(crds))
    for name in sorted(crds):
        client.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", name)
    if crds:
        lines.append(f"CRDs setup init installed, deleted: {', '.join(sorted(crds))}")
    return lines or ["nothing setup init installed (a Trainer or JobSet installed otherwise is left alone)"], sorted(crds)


def status_rows(facts: DepsFacts) -> list[tuple[bool | None, str, str]]:
    """(ok, component, detail) rows for `setup status`: optional components ('-' when absent)."""
    trainer_names = [c.name.split(".")[0] for c in facts.trainer_crds]
    if facts.release_ours:
        trainer = (True, f"installed by setup init ({facts.release}); CRDs: {', '.join(trainer_names) or 'none'}")
    elif facts.trainer_crds:
        trainer = (True, f"present, installed outside setup init ({', '.join(trainer_names)}): trainjob adapter available")
    else:
        trainer = (None, "absent (optional): workloads use the native batch/v1 adapter; setup init phase deps installs it")
    if facts.jobset_crd is None:
        jobset = (None, "absent" + (f"; controllers without the CRD: {'; '.join(map(str, facts.jobset_controllers))}"
                                    if facts.jobset_controllers else ""))
    else:
        who = "installed by setup init" if facts.jobset_crd.ours else (
            f"belongs to {facts.jobset_crd.helm}" if facts.jobset_crd.helm else "installed outside setup init")
        controllers = "; ".join(map(str, facts.jobset_controllers)) or "no controller Deployment found"
        jobset = (True if facts.jobset_controllers else None, f"CRD {who}; {controllers}")
    return [(trainer[0], "Kubeflow Trainer", trainer[1]), (jobset[0], "JobSet", jobset[1])]
