"""Identical duplicate categories (same domain, variant counting catalog aliases, and
options) are refused by the CLI and by the CRD rule the API server runs; duplicates with
different options are two runs and pass both."""

from __future__ import annotations

import cel
import pytest

from nvcre.api.certification import Certification, CertificationSpec, DUPLICATE_MESSAGE, MAX_CATEGORIES
from nvcre.api.crd import build_crd
from nvcre.api.load import parse_object
from nvcre.errors import ManifestError

TARGET = {"nodeSelector": {"nvidia.com/gpu.present": "true"}}
A2A = {"domain": "communication", "variant": "nccl-alltoall"}
ALIAS = {"domain": "communication", "variant": "nccl-all-to-all"}
REDUCE = {"domain": "communication", "variant": "nccl-all-reduce"}
THR = {"thresholds": {"busBandwidthGBps": "value >= 900"}}


def _rule() -> str:
    spec = build_crd(Certification)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    (rule,) = [r for r in spec["x-kubernetes-validations"] if r["message"] == DUPLICATE_MESSAGE]
    assert rule["fieldPath"] == ".categories"
    return rule["rule"]


def _server_accepts(categories: list[dict]) -> bool:
    return cel.evaluate(_rule(), {"self": {"target": TARGET, "categories": categories}}) is True


def _cli_problem(categories: list[dict]) -> str | None:
    try:
        CertificationSpec.model_validate({"target": TARGET, "categories": categories})
    except ValueError as err:
        return str(err)
    return None


REFUSED = {
    "identical": [REDUCE, dict(REDUCE)],
    "identical-with-options": [{**REDUCE, "options": THR}, A2A, {**REDUCE, "options": THR}],
    "alias-and-name": [A2A, ALIAS],
    "alias-and-name-with-options": [{**ALIAS, "options": THR}, {**A2A, "options": THR}],
}
ACCEPTED = {
    "distinct": [REDUCE, A2A],
    "different-options": [REDUCE, {**REDUCE, "options": THR}],
    "different-option-values": [{**REDUCE, "options": THR},
                                {**REDUCE, "options": {"thresholds": {"busBandwidthGBps": "value >= 800"}}}],
    "alias-with-other-options": [A2A, {**ALIAS, "options": {"gpusPerNode": 4}}],
    "same-variant-other-domain": [{"domain": "diagnostics", "variant": "nccl-all-to-all"}, ALIAS],
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_identical_duplicates_are_refused_by_both(name):
    categories = REFUSED[name]
    assert not _server_accepts(categories)
    problem = _cli_problem(categories)
    assert problem is not None and "duplicate of categories[" in problem, problem


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_duplicates_that_differ_pass_both(name):
    categories = ACCEPTED[name]
    assert _server_accepts(categories)
    problem = _cli_problem(categories)
    assert problem is None or "duplicate" not in problem, problem


def test_the_rule_walks_a_bounded_list():
    """The API server's cost estimate of the pairwise rule is bounded by the 64-item list."""
    spec = build_crd(Certification)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["categories"]["maxItems"] == MAX_CATEGORIES == 64
    many = [{**REDUCE, "options": {"gpusPerNode": n}} for n in range(1, MAX_CATEGORIES)] + [A2A]
    assert _server_accepts(many)
    assert not _server_accepts(many[:-1] + [{**REDUCE, "options": {"gpusPerNode": 1}}])


def test_the_cli_names_the_second_listing():
    obj = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": {"name": "c"},
           "spec": {"target": TARGET, "categories": [A2A, REDUCE, ALIAS]}}
    with pytest.raises(ManifestError) as err:
        parse_object(obj)
    assert err.value.field == "spec.categories[2]"
    assert "duplicate of categories[0]" in str(err.value)


def test_the_api_reads_the_same_aliases_as_the_catalog():
    """The API models read the catalog's alias lists from its files (they may not import the
    catalog); both readings must agree."""
    from nvcre.api.category_aliases import category_aliases
    from nvcre.catalog.data import load_catalog

    assert category_aliases() == dict(sorted(load_catalog().aliases.items()))
    assert category_aliases()  # the catalog has aliases (nccl-all-to-all), so the check means something
