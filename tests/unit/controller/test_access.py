"""The namespace access check asks for what the Workflow's adapter will create."""

from __future__ import annotations

from nvcre.controller.access import AccessChecker, missing_message


class Reviews:
    """SelfSubjectAccessReview answers from a set of allowed (group, resource, verb)."""

    def __init__(self, allowed):
        self.allowed = set(allowed)
        self.asked = []

    def can_i(self, verb, resource, namespace, group=""):
        self.asked.append((group, resource, verb))
        return (group, resource, verb) in self.allowed, ""


BASE = {("nvcre.nvidia.com", "jobs", "create"), ("", "pods", "list"), ("", "pods/log", "get"),
        ("", "configmaps", "create"), ("", "secrets", "create"), ("", "events", "create")}
NATIVE = {("batch", "jobs", "create"), ("batch", "jobs", "delete"), ("", "services", "create")}


def test_native_workloads_need_batch_jobs_and_services():
    kube = Reviews(BASE)
    assert AccessChecker(kube).missing("ns") == ["create jobs.batch", "delete jobs.batch", "create services"]
    assert AccessChecker(Reviews(BASE | NATIVE)).missing("ns", "native") == []


def test_trainjob_workloads_need_trainer_objects_not_batch_jobs():
    kube = Reviews(BASE | NATIVE)
    denied = AccessChecker(kube).missing("ns", "trainjob")
    assert denied == ["create trainjobs.trainer.kubeflow.org", "delete trainjobs.trainer.kubeflow.org",
                      "create trainingruntimes.trainer.kubeflow.org", "delete trainingruntimes.trainer.kubeflow.org"]
    assert ("batch", "jobs", "create") not in kube.asked
    assert "nvcre-manager-run" in missing_message("ns", denied)


def test_answers_are_cached_per_namespace_and_adapter():
    now = [0.0]
    kube = Reviews(BASE | NATIVE)
    checker = AccessChecker(kube, clock=lambda: now[0])
    checker.missing("ns")
    asked = len(kube.asked)
    checker.missing("ns")
    assert len(kube.asked) == asked  # cached
    checker.missing("ns", "trainjob")
    assert len(kube.asked) > asked  # another adapter asks its own questions
    now[0] = 31.0
    before = len(kube.asked)
    checker.missing("ns")
    assert len(kube.asked) > before  # expired after 30 s
