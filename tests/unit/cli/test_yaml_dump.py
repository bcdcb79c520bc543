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
