"""Seeded mutation fuzzing: every parser returns (never raises) on damaged real logs."""

from __future__ import annotations

import random

from nvcre.measure.dcgm import dcgm_failures, parse_dcgm
from nvcre.measure.failures import failure_excerpt
from nvcre.measure.logprofile import default_log_profile
from nvcre.measure.nccl import bandwidth_summary, nccl_failure_reason, parse_nccl_log
from nvcre.measure.training import goodput_status, parse_training_log

JUNK = ["\x00", "\ufffd", "|", "#", " ", "\n", "{", "}", "-1", "1e+99", "nan", "N/A", "NCCL WARN", "[", "]", "\t"]


def _mutations(text: str, rng: random.Random, count: int):
    for _ in range(count):
        chars = list(text)
        for _ in range(rng.randint(1, 12)):
            if not chars:
                break
            pos = rng.randrange(len(chars))
            action = rng.random()
            if action < 0.4:
                del chars[pos : pos + rng.randint(1, 40)]
            elif action < 0.8:
                chars[pos:pos] = list(rng.choice(JUNK))
            else:
                other = rng.randrange(len(chars))
                chars[pos], chars[other] = chars[other], chars[pos]
        yield "".join(chars)


def test_nccl_and_dcgm_parsers_survive_mutations(fixtures_dir):
    rng = random.Random(20261130)
    for path in sorted((fixtures_dir / "nccl").rglob("*")):
        if not path.is_file() or path.name == "expected.json":
            continue
        text = path.read_text()
        full = len(parse_nccl_log(text).rows)
        for mutated in _mutations(text, rng, 40):
            result = parse_nccl_log(mutated)
            bandwidth_summary(result)
            nccl_failure_reason(result)
            assert len(result.rows) <= full + 12  # junk never invents many rows
    for path in sorted((fixtures_dir / "dcgm").iterdir()):
        for mutated in _mutations(path.read_text(), rng, 40):
            dcgm_failures(parse_dcgm(mutated))
            failure_excerpt(mutated)


def test_training_parser_survives_mutations(fixtures_dir):
    rng = random.Random(7)
    profiles = [default_log_profile(n) for n in ("megatron-training", "megatron-bridge", "nemo")]
    for path in sorted((fixtures_dir / "training").rglob("*.txt")):
        for mutated in _mutations(path.read_text(), rng, 30):
            for profile in profiles:
                goodput_status([parse_training_log(mutated, profile)])
