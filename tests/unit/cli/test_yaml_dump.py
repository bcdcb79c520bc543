"""The C YAML emitter gives the same bytes as the pure-Python one on real renders."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from nvcre.cli.main import main
from nvcre.workloads import output

REPO = Path(__file__).resolve().parents[3]


def _python_dump(objects) -> str:
    class Py(yaml.SafeDumper):
        def ignore_aliases(self, data):
            return True

    Py.add_representer(str, output._str)
    return yaml.dump_all(list(objects), Dumper=Py, sort_keys=False, default_flow_style=False, width=120)


def test_c_dumper_is_byte_identical(capsys):
    assert main(["certification", "render", str(REPO / "examples/demo-certification.yaml"), "--platform", "aws",
                 "--gpu-arch", "h100", "--nodes", "16", "-o", "json"]) == 0
    objects = json.loads(capsys.readouterr().out)
    shared = {"k": "v"}
    objects.append({"a": shared, "b": shared, "script": "line one  \nline two\n", "yes": "yes", "n": "0123"})
    assert output.dump_yaml(objects) == _python_dump(objects)
    if hasattr(yaml, "CSafeDumper"):
        assert issubclass(output._Dumper, yaml.CSafeDumper)


# The shape-reuse dump (output.dump_yaml) against a plain PyYAML dump with the same
# emitter (the C one where installed: on odd input such as an empty key the two
# emitters differ from each other, which is not ours to change).

def _plain_dump(objects) -> str:
    class Plain(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
        def ignore_aliases(self, data):
            return True

    Plain.add_representer(str, output._str)
    return yaml.dump_all(list(objects), Dumper=Plain, sort_keys=False, default_flow_style=False, width=120)

def _render(adapter: str, nodes: int) -> list:
    from nvcre.cli.render import certification_objects, redact_secrets

    spec = REPO / "tests/unit/cli/whole-catalog.yaml"
    objects, _ = certification_objects(str(spec), platform="aws", gpu_arch="gb200", nodes=nodes, adapter=adapter,
                                       namespace=None)
    return redact_secrets(objects)


def test_whole_catalog_render_is_byte_identical():
    for adapter in ("native", "trainjob"):
        objects = _render(adapter, 64)
        assert len(objects) > 100
        assert output.dump_yaml(objects) == _python_dump(objects) == _plain_dump(objects), adapter


TRICKY = [
    {"a": "yes", "b": "Yes", "c": "null", "d": "~", "e": "0123", "f": "1.5", "g": "x: y", "h": "- x", "i": "#x"},
    {"a": "no", "b": "ON", "c": "Null", "d": "_", "e": "a.b/c-d_e", "f": ".inf", "g": "=", "h": "<<", "i": "!x"},
    {"a": "nvcrehole0x", "b": ["w"]},
    {"a": "\x00", "b": "word"},
    {"a": "word", "b": "\u00e9t\u00e9", "c": "emoji \U0001f600", "d": "tab\tin"},
    {1: "int key", "word": "w"},
    {"word": ["x"] * 3, "long": "a " * 100, "script": "l1  \nl2\n", "empty": {}, "none": None, "t": True, "n": 2.5},
    {"k": "v" * 200, "v" * 130: "long key"},
]


def test_tricky_documents_are_byte_identical():
    assert output.dump_yaml(TRICKY) == _plain_dump(TRICKY)
    for doc in TRICKY:
        assert output.dump_yaml([doc, doc]) == _plain_dump([doc, doc]), doc
    for odd in ([{}], [{"a": "b"}, {}], ["scalar"], [["list"]], [{"a": "b"}, "x"], []):
        assert output.dump_yaml(odd) == _plain_dump(odd), odd


def test_plain_words_are_exactly_what_pyyaml_writes_unquoted():
    """Only the bool and null resolvers apply to a word starting with a letter or '_',
    and every word they accept is excluded from the swapped words."""
    resolvers = output._Dumper.yaml_implicit_resolvers
    tags = {tag for first in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_" for tag, _ in resolvers.get(first, [])}
    assert tags <= {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"}
    excluded = set(output._BOOL_OR_NULL.split("|"))
    for tag, regexp in (r for first in "yYnNtTfFoO" for r in resolvers.get(first, [])):
        for word in regexp.pattern.split("|"):
            word = word.strip().strip("^$(?:)").strip()
            if word.isalpha():
                assert word in excluded and regexp.match(word), (tag, word)
    dumper = output._Dumper(None)
    for word in excluded:
        assert dumper.resolve(yaml.ScalarNode, word, (True, False)) != "tag:yaml.org,2002:str", word


WORDS = ["yes", "no", "on", "off", "null", "true", "False", "y", "n", "_", "a", "node-0001", "x.y", "a/b", "0001",
         "1e3", "", " lead", "trail ", "a b", "a: b", "#c", "nvcrehole3x", "é", "-", "~", "2026-01-01", "a\nb",
         '"A', 'a\\', '\\"x"', "\n", "x\n\n"]


try:
    from hypothesis import given, settings, strategies as st

    _leaf = st.one_of(st.sampled_from(WORDS), st.text(max_size=8), st.integers(), st.booleans(), st.none(),
                      st.floats(allow_nan=False))
    _doc = st.recursive(_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(st.sampled_from(WORDS), inner, max_size=4)),
                        max_leaves=20)

    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.lists(st.dictionaries(st.sampled_from(WORDS), _doc, min_size=1, max_size=5), min_size=1, max_size=4))
    def test_any_json_documents_are_byte_identical(docs):
        docs = docs + docs  # repeated shapes take the reuse path
        assert output.dump_yaml(docs) == _plain_dump(docs)
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    pass


def test_render_leaves_the_cycle_collector_as_it_was(capsys):
    import gc

    assert gc.isenabled()
    assert main(["certification", "render", str(REPO / "tests/unit/cli/whole-catalog.yaml"), "--platform", "aws",
                 "--gpu-arch", "gb200", "--nodes", "64", "-o", "yaml"]) == 0
    assert gc.isenabled()
    assert main(["certification", "render", str(REPO / "tests/unit/cli/whole-catalog.yaml"), "--platform", "aws",
                 "--gpu-arch", "gb200", "--nodes", "3", "-o", "yaml"]) == 2  # nemotron5-56b cannot run on 3
    assert gc.isenabled()
    gc.disable()
    try:
        main(["certification", "render", str(REPO / "examples/demo-certification.yaml"), "--platform", "aws",
              "--gpu-arch", "h100", "--nodes", "2", "-o", "yaml"])
        assert not gc.isenabled()
    finally:
        gc.enable()
