"""What `setup init` phase ``deps`` does with Kubeflow Trainer and JobSet: a pure decision.

The Trainer chart bundles JobSet (``jobset.install``). Two JobSet controllers reconciling
the same objects, or a bundled JobSet laid over a CRD another install owns, break every
JobSet in the cluster, so the rule (docs/design/112-jobset-ownership.md) is:

- the bundled JobSet only when the cluster has no JobSet, or only the one setup init
  installed earlier;
- no bundled JobSet when an external JobSet is verified: its CRD present and exactly one
  JobSet controller running that this install does not own (and, when the CRD names a
  Helm release, that release's);
- anything else is ambiguous: refuse, before anything changes, saying what was found and
  what to do.

A Trainer installed outside setup init is left as it is. The facts come from the CLI
layer (``nvcre.cli.deps``); this module reads and decides, it never talks to a cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

INSTALLED_BY_LABEL = "nvcre.nvidia.com/installed-by"
INSTALLED_BY = "nvcrectl-setup"
TRAINER_CRDS = (
    "clustertrainingruntimes.trainer.kubeflow.org",
    "trainingruntimes.trainer.kubeflow.org",
    "trainjobs.trainer.kubeflow.org",
)
JOBSET_CRD = "jobsets.jobset.x-k8s.io"
SKIP_HINT = "or leave dependencies alone with --skip-phases deps"


@dataclass(frozen=True)
class HelmOwner:
    """The Helm release an object belongs to (its meta.helm.sh annotations)."""

    release: str
    namespace: str

    def __str__(self) -> str:
        return f"helm release {self.release} in {self.namespace}"


@dataclass(frozen=True)
class Crd:
    name: str
    ours: bool  # labelled as applied by setup init
    helm: HelmOwner | None = None


@dataclass(frozen=True)
class JobSetController:
    namespace: str
    name: str
    desired: int
    ready: int
    helm: HelmOwner | None = None

    def __str__(self) -> str:
        return f"Deployment {self.namespace}/{self.name} ({self.ready}/{self.desired} ready)"


@dataclass(frozen=True)
class DepsFacts:
    """What the cluster holds that the decision reads."""

    release: HelmOwner  # where setup init installs Trainer
    release_installed: bool  # a Helm release of that name exists there
    release_ours: bool  # ... and it carries setup init's label
    trainer_crds: tuple[Crd, ...] = ()  # the Trainer CRDs present
    jobset_crd: Crd | None = None
    jobset_controllers: tuple[JobSetController, ...] = ()


class Action(str, Enum):
    INSTALL_WITH_JOBSET = "install Kubeflow Trainer with its bundled JobSet"
    INSTALL_WITHOUT_JOBSET = "install Kubeflow Trainer without its bundled JobSet"
    KEEP_EXISTING = "leave the Kubeflow Trainer that is installed"
    REFUSE = "refuse"


@dataclass(frozen=True)
class DepsPlan:
    action: Action
    reason: str

    @property
    def installs(self) -> bool:
        return self.action in (Action.INSTALL_WITH_JOBSET, Action.INSTALL_WITHOUT_JOBSET)

    @property
    def bundled_jobset(self) -> bool:
        return self.action is Action.INSTALL_WITH_JOBSET


def helm_owner(metadata: dict) -> HelmOwner | None:
    annotations = metadata.get("annotations") or {}
    name, namespace = annotations.get("meta.helm.sh/release-name"), annotations.get("meta.helm.sh/release-namespace")
    return HelmOwner(name, namespace) if name and namespace else None


def crd_fact(crd: dict) -> Crd:
    meta = crd.get("metadata") or {}
    return Crd(meta["name"], (meta.get("labels") or {}).get(INSTALLED_BY_LABEL) == INSTALLED_BY, helm_owner(meta))


def is_jobset_controller(deployment: dict) -> bool:
    """A JobSet controller Deployment as its Helm chart (app.kubernetes.io/name: jobset) or
    its kustomize manifests (part-of: jobset) label it, or running the JobSet image."""
    labels = (deployment.get("metadata") or {}).get("labels") or {}
    if labels.get("app.kubernetes.io/name") == "jobset" or labels.get("app.kubernetes.io/part-of") == "jobset":
        return True
    containers = (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    return any(_image_name(c.get("image", "")) == "jobset" for c in containers)


def _image_name(image: str) -> str:
    repository = image.split("@", 1)[0]
    last = repository.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


def jobset_controller(deployment: dict) -> JobSetController:
    meta = deployment.get("metadata") or {}
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    return JobSetController(meta.get("namespace", ""), meta["name"], int(spec.get("replicas", 1)),
                            int(status.get("readyReplicas") or 0), helm_owner(meta))


def decide(facts: DepsFacts) -> DepsPlan:
    """The deps phase's plan for these facts (module docstring has the rule)."""
    mine = facts.release
    if facts.release_installed and not facts.release_ours:
        return DepsPlan(Action.KEEP_EXISTING, f"{mine} exists and was not installed by setup init: left as it is")
    trainer_ours = facts.release_ours or any(c.ours or c.helm == mine for c in facts.trainer_crds)
    if facts.trainer_crds and not trainer_ours:
        names = ", ".join(c.name for c in facts.trainer_crds)
        return DepsPlan(Action.KEEP_EXISTING, f"Kubeflow Trainer CRDs present, installed outside setup init ({names}): "
                                              "left as they are, and setup reset will not remove them")
    crd = facts.jobset_crd
    crd_ours = crd is not None and (crd.ours or crd.helm == mine)
    external = [c for c in facts.jobset_controllers if c.helm != mine]
    if len(external) > 1:
        return _refuse(f"{len(external)} JobSet controllers found ({'; '.join(map(str, external))}): which one owns "
                       "JobSets is ambiguous", "keep one")
    if external:
        found = external[0]
        if crd is None:
            return _refuse(f"JobSet controller {found} runs, but the JobSet CRD {JOBSET_CRD} is missing",
                           "install the CRD with that JobSet (or remove the controller)")
        if crd_ours:
            return _refuse(f"the JobSet CRD was installed by setup init with Trainer, and another JobSet controller "
                           f"{found} is present: two controllers would reconcile every JobSet",
                           "remove one of them (setup reset removes the bundled one)")
        if crd.helm is not None and crd.helm != found.helm:
            owner = found.helm or "no Helm release"
            return _refuse(f"the JobSet CRD belongs to {crd.helm}, but the JobSet controller {found} belongs to {owner}",
                           "make one installation own both")
        if found.ready < 1:
            return _refuse(f"JobSet CRD {JOBSET_CRD} is present but its controller {found} is not running",
                           "start that controller (then setup init uses it)")
        return DepsPlan(Action.INSTALL_WITHOUT_JOBSET,
                        f"external JobSet verified: CRD {JOBSET_CRD} and controller {found}; the chart's JobSet is skipped")
    if crd is None:
        return DepsPlan(Action.INSTALL_WITH_JOBSET, "no JobSet in the cluster: the chart's bundled JobSet is installed")
    if crd_ours:
        return DepsPlan(Action.INSTALL_WITH_JOBSET, "JobSet was installed by setup init with Trainer: it stays bundled")
    owner = f" (it belongs to {crd.helm})" if crd.helm else " (installed outside setup init)"
    return _refuse(f"JobSet CRD {JOBSET_CRD} is present{owner} but no JobSet controller was found",
                   "install or start the JobSet controller that goes with it (then setup init uses it), "
                   "or delete the CRD if nothing uses JobSets")


def _refuse(found: str, todo: str) -> DepsPlan:
    return DepsPlan(Action.REFUSE, f"JobSet ownership is ambiguous, nothing was changed: {found}. "
                                   f"To go on: {todo}; {SKIP_HINT}")
