"""dcgmi, Megatron, sshd and generic emulators, and the dispatch rules."""

from __future__ import annotations

import json

import pytest

from nvcre.measure.logprofile import default_log_profile
from nvcre.measure.training import parse_training_text
from nvcre.sim.emulators import dispatch
from nvcre.sim.emulators.shell import segments, split_script

DCGM = ["dcgmi", "diag", "--host", "nvidia-dcgm.gpu-operator.svc:5555", "--run", "4", "--json", "--verbose",
        "-p", "targeted_power.test_duration=1200s", "-p", "nvbandwidth.is_allowed=true"]
TRAIN = ("export TRAIN_ITERS=40; exec torchrun --nnodes 1 --nproc-per-node 8 /mnt/workspace/megatron-lm/pretrain_gpt.py "
         "--num-layers 32 --hidden-size 4096 --seq-length 8192 --log-interval 10 --save /ckpt --load /ckpt "
         "--save-interval 20 --async-save")


@pytest.mark.parametrize(
    "argv,kind",
    [
        (["/bin/bash", "-c", "timeout 3600 mpirun -N 8 /opt/nccl-tests/build/all_reduce_perf -b 8"], "nccl-tests"),
        (["all_gather_perf_mpi", "-b", "8"], "nccl-tests"),
        (DCGM, "dcgmi"),
        (["/bin/bash", "-c", TRAIN], "megatron"),
        (["python", "-m", "torch.distributed.run", "pretrain_gpt.py"], "megatron"),
        (["sh", "-c", "mkdir -p /var/run/sshd; /usr/sbin/sshd -De"], "sshd"),
        (["sh", "-c", "echo hi; sleep 5"], "generic"),
        (["torchrun", "train_resnet.py"], "generic"),
    ],
)
def test_dispatch_rules(make_ctx, argv, kind):
    assert dispatch.classify(make_ctx(argv)) == kind


def test_script_file_from_a_configmap_is_followed(make_ctx):
    ctx = make_ctx(["/bin/bash", "/config/train.sh"], files={"/config/train.sh": TRAIN})
    assert dispatch.classify(ctx) == "megatron"


def test_positional_arguments_reach_the_script():
    segs = segments(["/bin/bash", "-c", 'echo start; "$@"; rc=$?', "launcher", "mpirun", "-np", "2", "x_perf"], {})
    assert segs[1].argv == ["mpirun", "-np", "2", "x_perf"]


def test_exports_and_wrappers():
    segs = segments(["sh", "-c", "export A=1 B=${C:-two}; env -u X timeout -s KILL 60 prog $A $B"], {})
    assert segs[-1].argv == ["prog", "1", "two"]
    assert split_script("a && b | c; d\ne") == [["a"], ["b"], ["c"], ["d"], ["e"]]


def test_dcgmi_level4_json_passes_on_a_healthy_node(make_ctx):
    out = dispatch.emulate(make_ctx(DCGM))
    report = json.loads(out.text())
    categories = [c["category"] for c in report["DCGM GPU Diagnostic"]["test_categories"]]
    assert categories == ["Deployment", "Integration", "Hardware", "Stress"]
    names = [t["name"] for c in report["DCGM GPU Diagnostic"]["test_categories"] for t in c["tests"]]
    assert "NVBandwidth" in names and "Memtest" in names
    assert out.exit_code == 0
    assert out.duration > 1800


def test_dcgmi_fails_on_a_gpu_off_the_bus(make_ctx):
    ctx = make_ctx(["dcgmi", "diag", "-r", "2"], node="gpu-node-02", faults=["gpu-off-bus:node=gpu-node-02,gpu=5"])
    out = dispatch.emulate(ctx)
    assert out.exit_code == 226
    text = out.text()
    assert "| GPU Memory                | Pass - GPUs: 0, 1, 2, 3, 4, 6, 7               |" in text
    assert "Fail - GPU: 5" in text
    assert any(line.effect and line.effect.kind == "gpu-off-bus" for line in out.lines)


def test_dcgmi_level1_text_matches_the_real_table(make_ctx, fixtures_dir):
    real = (fixtures_dir / "dcgm" / "dcgmi-diag-r3-v100x16-dcgm335-pass.txt").read_text().splitlines()
    text = dispatch.emulate(make_ctx(["dcgmi", "diag", "-r", "3"])).text().splitlines()
    assert text[0] == "Successfully ran diagnostic for group."
    assert all(len(line) == 78 for line in text[1:])
    shared = [line for line in real if line.startswith(("+", "|-", "| Denylist", "| EUD"))]
    for line in shared:
        assert line in text


def test_dcgmi_slow_gpu_fails_stress_only_at_level3(make_ctx):
    faults = ["slow-gpu:node=gpu-node-01,gpu=2,factor=0.6"]
    assert dispatch.emulate(make_ctx(["dcgmi", "diag", "-r", "2"], faults=faults)).exit_code == 0
    out = dispatch.emulate(make_ctx(["dcgmi", "diag", "-r", "3"], faults=faults))
    assert out.exit_code == 226 and "Targeted Stress" in out.text()


def test_dcgmi_bad_level(make_ctx):
    assert dispatch.emulate(make_ctx(["dcgmi", "diag", "-r", "9"])).exit_code != 0


def test_megatron_log_parses_with_the_megatron_profile(make_ctx):
    out = dispatch.emulate(make_ctx(["/bin/bash", "-c", TRAIN]))
    assert out.exit_code == 0
    metrics = parse_training_text(out.text(), default_log_profile("megatron-training"))
    assert [s.global_step for s in metrics.steps] == [10, 20, 30, 40]
    assert metrics.application_start_time is not None
    assert len(metrics.checkpoints) >= 1
    tflops = [s.tflops for s in metrics.steps[1:]]
    assert all(t == pytest.approx(540, rel=0.1) for t in tflops)
    saved = [line.effect for line in out.lines if line.effect and line.effect.kind == "checkpoint"]
    assert [e.value for e in saved] == [20, 40]


def test_megatron_resumes_from_a_checkpoint(make_ctx):
    ctx = make_ctx(["/bin/bash", "-c", TRAIN], checkpoints={"ns:/ckpt": 20}, restart=1)
    out = dispatch.emulate(ctx)
    text = out.text()
    assert "Loading checkpoint from /ckpt at iteration 20" in text
    metrics = parse_training_text(text, default_log_profile("megatron-training"))
    assert metrics.steps[0].global_step == 30
    assert metrics.restore is not None


def test_megatron_slow_gpu_and_gpu_off_bus(make_ctx):
    slow = dispatch.emulate(make_ctx(["/bin/bash", "-c", TRAIN], faults=["slow-gpu:node=gpu-node-01,factor=0.5"]))
    steps = parse_training_text(slow.text(), default_log_profile("megatron-training")).steps
    assert steps[-1].tflops == pytest.approx(270, rel=0.1)
    dead = dispatch.emulate(make_ctx(["/bin/bash", "-c", TRAIN], faults=["gpu-off-bus:node=gpu-node-01,gpu=2"]))
    assert dead.exit_code == 1
    assert "NCCL error" in dead.text()


def test_megatron_multi_node_ranks_split_the_output(make_ctx):
    script = "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py --train-iters 20 --log-interval 10"
    first = dispatch.emulate(make_ctx(["sh", "-c", script], env={"PET_NODE_RANK": "0"})).text()
    last = dispatch.emulate(make_ctx(["sh", "-c", script], env={"PET_NODE_RANK": "1"})).text()
    assert "using world size: 16" in first and "iteration" not in first.replace("[before the start of training step]", "")
    assert "iteration       20/      20" in last and "using world size" not in last


def test_sshd_runs_until_stopped(make_ctx):
    out = dispatch.emulate(make_ctx(["sh", "-c", "/usr/sbin/sshd -De"]))
    assert out.duration is None and "Server listening" in out.text()


def test_generic_echo_sleep_exit(make_ctx):
    out = dispatch.emulate(make_ctx(["sh", "-c", "echo one; sleep 30; echo two; exit 3"]))
    assert out.text() == "one\ntwo"
    assert out.exit_code == 3
    assert out.lines[1].at == pytest.approx(30)
    assert dispatch.emulate(make_ctx(["sleep", "infinity"])).duration is None
    assert dispatch.emulate(make_ctx(["/app/server"])).exit_code == 0


def test_a_gpu_that_is_already_gone_fails_new_runs_at_start(make_ctx):
    faults = ["gpu-off-bus:node=gpu-node-01,gpu=2"]
    train = dispatch.emulate(make_ctx(["/bin/bash", "-c", TRAIN], faults=faults, off_bus=frozenset({"gpu-node-01"})))
    assert train.exit_code == 1 and "CUDA error" in train.text()
    nccl = dispatch.emulate(make_ctx(["all_reduce_perf", "-g", "8"], faults=faults, off_bus=frozenset({"gpu-node-01"})))
    assert nccl.exit_code != 0 and "Test CUDA failure" in nccl.text()


def test_unquoted_lone_expansion_splits_into_words_and_empty_vanishes():
    """Like bash: `--async-save ${RECOMPUTE_ARGS}` adds nothing when the variable is unset."""
    from nvcre.sim.emulators.shell import segments

    argv = ["/bin/bash", "-c", "torchrun pretrain_gpt.py --save-interval 20 ${RECOMPUTE_ARGS} --bf16"]
    unset = [seg.argv for seg in segments(argv, {}, lambda path: None)]
    assert ["torchrun", "pretrain_gpt.py", "--save-interval", "20", "--bf16"] in unset
    env = {"RECOMPUTE_ARGS": "--recompute-granularity full"}
    split = [seg.argv for seg in segments(argv, env, lambda path: None)]
    assert ["torchrun", "pretrain_gpt.py", "--save-interval", "20", "--recompute-granularity", "full", "--bf16"] in split
