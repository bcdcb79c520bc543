"""`setup init` phase deps: what it decides for each JobSet/Trainer situation (a table), and
how it reads Deployments and CRDs into those facts."""

from __future__ import annotations

import pytest

from nvcre.cli.deps_plan import (
    INSTALLED_BY, INSTALLED_BY_LABEL, JOBSET_CRD, TRAINER_CRDS, Action, Crd, DepsFacts, HelmOwner, JobSetController,
    crd_fact, decide, is_jobset_controller, jobset_controller,
)

MINE = HelmOwner("kubeflow-trainer", "kubeflow-system")
OTHER = HelmOwner("jobset", "jobset-system")
THIRD = HelmOwner("platform", "infra")


def ctl(ready=1, helm=OTHER, ns="jobset-system", name="jobset-controller-manager", desired=1):
    return JobSetController(ns, name, desired, ready, helm)


def jobset_crd(ours=False, helm=None):
    return Crd(JOBSET_CRD, ours, helm)


def trainer_crds(ours=False, helm=None):
    return tuple(Crd(n, ours, helm) for n in TRAINER_CRDS)


def facts(*, installed=False, ours=False, trainer=(), crd=None, controllers=()):
    return DepsFacts(MINE, installed, ours, trainer, crd, tuple(controllers))


CASES = [
    # (id, facts, action, words in the reason)
    ("empty cluster", facts(), Action.INSTALL_WITH_JOBSET, "no JobSet in the cluster"),
    ("rerun after our bundled install", facts(installed=True, ours=True, trainer=trainer_crds(ours=True),
                                              crd=jobset_crd(ours=True), controllers=[ctl(0, MINE, "kubeflow-system", "jobset")]),
     Action.INSTALL_WITH_JOBSET, "stays bundled"),
    ("external JobSet by helm, running", facts(crd=jobset_crd(helm=OTHER), controllers=[ctl(1, OTHER)]),
     Action.INSTALL_WITHOUT_JOBSET, "external JobSet verified"),
    ("external JobSet by kubectl apply, running", facts(crd=jobset_crd(), controllers=[ctl(2, None, desired=2)]),
     Action.INSTALL_WITHOUT_JOBSET, "(2/2 ready)"),
    ("rerun after our install without JobSet", facts(installed=True, ours=True, trainer=trainer_crds(ours=True),
                                                     crd=jobset_crd(helm=OTHER), controllers=[ctl(1, OTHER)]),
     Action.INSTALL_WITHOUT_JOBSET, "external JobSet verified"),
    ("CRD without any controller", facts(crd=jobset_crd()), Action.REFUSE, "no JobSet controller was found"),
    ("CRD of another release, no controller", facts(crd=jobset_crd(helm=OTHER)), Action.REFUSE,
     "belongs to helm release jobset in jobset-system"),
    ("controller not running", facts(crd=jobset_crd(helm=OTHER), controllers=[ctl(0, OTHER)]), Action.REFUSE,
     "is not running"),
    ("controller without its CRD", facts(controllers=[ctl(1, OTHER)]), Action.REFUSE, "CRD jobsets.jobset.x-k8s.io is missing"),
    ("CRD and controller of different releases", facts(crd=jobset_crd(helm=THIRD), controllers=[ctl(1, OTHER)]),
     Action.REFUSE, "belongs to helm release platform in infra, but the JobSet controller"),
    ("two controllers", facts(crd=jobset_crd(), controllers=[ctl(1, OTHER), ctl(1, None, "kube-system", "js")]),
     Action.REFUSE, "2 JobSet controllers found"),
    ("our bundled JobSet plus a foreign controller", facts(installed=True, ours=True, trainer=trainer_crds(ours=True),
                                                         crd=jobset_crd(ours=True), controllers=[ctl(1, OTHER)]),
     Action.REFUSE, "two controllers would reconcile every JobSet"),
    ("Trainer installed outside setup init", facts(trainer=trainer_crds(), crd=jobset_crd()), Action.KEEP_EXISTING,
     "installed outside setup init"),
    ("a release of our name that is not ours", facts(installed=True, ours=False), Action.KEEP_EXISTING,
     "was not installed by setup init"),
    ("Trainer 2.3 CRDs as templates of our release", facts(trainer=trainer_crds(helm=MINE)), Action.INSTALL_WITH_JOBSET,
     "no JobSet"),
]


@pytest.mark.parametrize("case,given,action,words", CASES, ids=[c[0] for c in CASES])
def test_decision_table(case, given, action, words):
    plan = decide(given)
    assert plan.action is action, plan.reason
    assert words in plan.reason
    if action is Action.REFUSE:
        assert plan.reason.startswith("JobSet ownership is ambiguous, nothing was changed")
        assert "--skip-phases deps" in plan.reason and "To go on:" in plan.reason
    assert plan.installs == (action in (Action.INSTALL_WITH_JOBSET, Action.INSTALL_WITHOUT_JOBSET))
    assert plan.bundled_jobset == (action is Action.INSTALL_WITH_JOBSET)


def _deployment(labels=None, image="registry.k8s.io/jobset/jobset:v0.11.0", annotations=None, ready=None):
    return {
        "metadata": {"name": "d", "namespace": "ns", "labels": labels or {}, "annotations": annotations or {}},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "m", "image": image}]}}},
        "status": {"readyReplicas": ready} if ready is not None else {},
    }


@pytest.mark.parametrize("deployment,expected", [
    (_deployment({"app.kubernetes.io/name": "jobset"}, image="mirror.example/x:1"), True),  # the Helm chart's labels
    (_deployment({"app.kubernetes.io/part-of": "jobset"}, image="controller:latest"), True),  # kustomize manifests
    (_deployment(), True),  # the JobSet image, whatever the labels
    (_deployment(image="mirror.example:5000/jobset/jobset@sha256:" + "0" * 64), True),
    (_deployment(image="ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.2.1"), False),
    (_deployment({"app.kubernetes.io/name": "jobset-ui"}, image="example/jobsetter:1"), False),
])
def test_which_deployments_are_jobset_controllers(deployment, expected):
    assert is_jobset_controller(deployment) is expected


def test_controller_and_crd_facts_read_helm_ownership_and_readiness():
    helm = {"meta.helm.sh/release-name": "jobset", "meta.helm.sh/release-namespace": "jobset-system"}
    found = jobset_controller(_deployment(annotations=helm, ready=1))
    assert found == JobSetController("ns", "d", 1, 1, OTHER) and str(found) == "Deployment ns/d (1/1 ready)"
    assert jobset_controller(_deployment()).ready == 0
    crd = crd_fact({"metadata": {"name": JOBSET_CRD, "labels": {INSTALLED_BY_LABEL: INSTALLED_BY}}})
    assert crd == Crd(JOBSET_CRD, True, None)
    assert crd_fact({"metadata": {"name": JOBSET_CRD, "annotations": helm}}) == Crd(JOBSET_CRD, False, OTHER)


def test_install_arguments_record_ownership_and_switch_the_bundled_jobset(tmp_path):
    from nvcre.cli.deps import crd_files, helm_args
    from nvcre.cli.deps_plan import DepsPlan

    for sub in ("crds", "charts/jobset/crds", "charts/lws/crds"):
        (tmp_path / sub).mkdir(parents=True)
        (tmp_path / sub / f"{sub.replace('/', '-')}.yaml").write_text("")
    with_jobset = DepsPlan(Action.INSTALL_WITH_JOBSET, "")
    without = DepsPlan(Action.INSTALL_WITHOUT_JOBSET, "")
    args = helm_args(without, tmp_path)
    assert args[:6] == ["upgrade", "--install", "kubeflow-trainer", str(tmp_path), "-n", "kubeflow-system"]
    assert "--skip-crds" in args and args[args.index("--labels") + 1] == f"{INSTALLED_BY_LABEL}={INSTALLED_BY}"
    assert args[-2:] == ["--set", "jobset.install=false"]
    assert helm_args(with_jobset, tmp_path)[-1] == "jobset.install=true"
    # JobSet's CRD only with the bundled JobSet; LWS (data cache, off by default) never
    assert [p.name for p in crd_files(tmp_path, False)] == ["crds.yaml"]
    assert [p.name for p in crd_files(tmp_path, True)] == ["crds.yaml", "charts-jobset-crds.yaml"]


def test_status_rows_say_who_installed_what():
    from nvcre.cli.deps import status_rows

    ours = facts(installed=True, ours=True, trainer=trainer_crds(ours=True), crd=jobset_crd(ours=True),
                 controllers=[ctl(1, MINE, "kubeflow-system", "jobset-controller")])
    (t_ok, _, trainer), (j_ok, _, jobset) = status_rows(ours)
    assert t_ok is True and "installed by setup init (helm release kubeflow-trainer in kubeflow-system)" in trainer
    assert j_ok is True and jobset.startswith("CRD installed by setup init; Deployment kubeflow-system/jobset-controller")
    (t_ok, _, trainer), (j_ok, _, jobset) = status_rows(facts(crd=jobset_crd()))
    assert t_ok is None and trainer.startswith("absent (optional)")
    assert j_ok is None and jobset == "CRD installed outside setup init; no controller Deployment found"
