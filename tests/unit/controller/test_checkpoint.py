from nvcre.controller import checkpoint as ck
from nvcre.measure.logprofile import default_log_profiles


class _Kube:
    def __init__(self):
        self.objects = {}

    def get(self, api_version, kind, name, namespace=None):
        return self.objects.get((kind, name))

    def create(self, obj):
        self.objects[(obj["kind"], obj["metadata"]["name"])] = obj
        return obj, True


JOB = {
    "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Job",
    "metadata": {"name": "wf-job", "namespace": "ns", "uid": "u1"},
    "spec": {"checkpoint": {"pvcName": "wf-job-workload-checkpoint", "maxRestarts": 2}},
    "status": {"restartCount": 1},
}


def test_restart_budget():
    assert ck.restart_budget(JOB) == (1, 2)
    assert ck.restart_budget({"spec": {}}) is None


def test_attempt_logs_round_trip():
    kube = _Kube()
    kube.create(ck.attempt_log_object(JOB, 1, "iteration 1\nsaved checkpoint\n"))
    assert ck.prior_attempt_logs(kube, JOB) == ["iteration 1\nsaved checkpoint\n"]
    assert ck.attempt_name("x" * 70, 3).endswith(ck.attempt_name("x" * 70, 3)[-5:]) and len(ck.attempt_name("x" * 70, 3)) <= 63


def test_saved_a_checkpoint_reads_the_log(fixtures_dir):
    profile = {p["metadata"]["name"]: p for p in default_log_profiles()}["megatron-training"]
    text = (fixtures_dir / "training" / "nvcre-megatron-full-sequence-ckpt" / "input_logs.txt").read_text()
    assert ck.saved_a_checkpoint(text, profile)
    assert not ck.saved_a_checkpoint("no checkpoint here\n", profile)
    assert not ck.saved_a_checkpoint(text, None)
