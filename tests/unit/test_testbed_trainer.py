"""The Kubeflow Trainer test-bed pieces that need no cluster: finding the built set and
the webhook configurations pointed at loopback."""

from __future__ import annotations

import pytest

from nvcre.testbed import trainer as tb


def test_explicit_set_dir_that_lacks_things_names_them(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "trainer-controller-manager").write_text("")
    monkeypatch.setenv(tb.ENV_VAR, str(tmp_path))
    with pytest.raises(tb.TrainerMissing) as err:
        tb.find_trainer_set()
    message = err.value.message
    assert "bin/jobset-controller-manager" in message and "bin/trainer-controller-manager" in message  # not executable
    assert "crds/trainer/*.yaml" in message and tb.ENV_VAR in message


def test_unbuilt_cache_says_make_trainer(tmp_path, monkeypatch):
    monkeypatch.delenv(tb.ENV_VAR, raising=False)
    monkeypatch.setenv("NVCRE_CACHE_DIR", str(tmp_path))
    with pytest.raises(tb.TrainerMissing) as err:
        tb.find_trainer_set()
    assert "make trainer" in err.value.message and str(tmp_path) in err.value.message
    trainer, jobset = tb.pinned_versions()
    assert tb.cached_set_dir() == tmp_path / f"trainer-{trainer}-jobset-{jobset}"


def test_webhooks_point_at_loopback_and_spare_pods_outside_jobsets():
    objects = tb.webhook_configurations("Q0E=", 1111, 2222)
    hooks = [h for o in objects for h in o["webhooks"]]
    assert {o["metadata"]["name"] for o in objects} == {n for names in tb.WEBHOOK_NAMES.values() for n in names}
    assert all(h["clientConfig"]["caBundle"] == "Q0E=" for h in hooks)
    assert all(h["clientConfig"]["url"].startswith(("https://127.0.0.1:1111/", "https://127.0.0.1:2222/")) for h in hooks)
    for hook in hooks:
        if hook["rules"][0]["resources"] == ["pods"]:
            assert hook["objectSelector"]["matchExpressions"][0]["key"] == tb.JOBSET_LABEL
    trainer = {h["rules"][0]["resources"][0] for h in hooks if ":2222/" in h["clientConfig"]["url"]}
    assert trainer == {"trainjobs", "trainingruntimes", "clustertrainingruntimes"}


def test_trainjob_defaulting_webhook_is_registered_as_upstream_ships_it():
    """Trainer 2.2+ defaults TrainJobs (runtimePatches times) in a mutating webhook;
    without it registered, the test bed would admit TrainJobs a real install changes."""
    objects = tb.webhook_configurations("Q0E=", 1111, 2222)
    mutating = [h for o in objects if o["kind"] == "MutatingWebhookConfiguration" for h in o["webhooks"]
                if ":2222/" in h["clientConfig"]["url"]]
    assert [h["name"] for h in mutating] == ["defaulter.trainjob.trainer.kubeflow.org"]
    (hook,) = mutating
    assert hook["clientConfig"]["url"] == "https://127.0.0.1:2222/mutate-trainer-kubeflow-org-v1alpha1-trainjob"
    assert hook["rules"] == [{"apiGroups": ["trainer.kubeflow.org"], "apiVersions": ["v1alpha1"],
                              "operations": ["CREATE", "UPDATE"], "resources": ["trainjobs"]}]
