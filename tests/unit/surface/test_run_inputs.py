"""What `certification run` decides before it talks to a cluster."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from nvcre.cli.run import MIN_DERIVED_TIMEOUT, derived_timeout, parse_categories, parse_timeout, run_name
from nvcre.errors import UserError


def test_timeout_parsing():
    assert parse_timeout("90s") == 90
    assert parse_timeout("1h30m") == 5400
    with pytest.raises(UserError, match="below 1s"):
        parse_timeout("0s")
    with pytest.raises(UserError, match="not a duration"):
        parse_timeout("soon")


def test_derived_timeout_follows_the_catalog_budgets():
    comm = {"categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]}
    train = {"categories": [{"domain": "training", "variant": "nemotron5-8b"}]}
    assert derived_timeout(comm) == 1.5 * 3600  # 1h budget
    assert derived_timeout(train) == 36 * 3600  # 24h budget
    both = {"categories": comm["categories"] + train["categories"]}
    assert derived_timeout(both) == 1.5 * 25 * 3600  # categories run one after another
    short = {"categories": [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"timeoutPerJob": "5m"}}]}
    assert derived_timeout(short) == MIN_DERIVED_TIMEOUT
    repeated = {"categories": [{"domain": "communication", "variant": "nccl-all-reduce", "options": {"repeatCount": 3}}]}
    assert derived_timeout(repeated) == 1.5 * 3 * 3600


def test_categories_are_checked_against_the_catalog():
    assert parse_categories(["communication/nccl-all-reduce"]) == [("communication", "nccl-all-reduce")]
    with pytest.raises(UserError, match="unknown category; known: .*communication/nccl-all-reduce"):
        parse_categories(["communication/nccl-all-sideways"])
    with pytest.raises(UserError, match="expected DOMAIN/VARIANT"):
        parse_categories(["nccl-all-reduce"])


def test_run_name_is_a_namespace_name():
    assert run_name(datetime(2026, 8, 6, 16, 27, 30, tzinfo=timezone.utc)) == "nvcrectl-20260806-162730"
