"""Goodput as people read it: `kubectl get goodputmeasurements` shows "40.0%", not
"0.400035"; the reference's 6-decimal strings stay beside it for tools."""

from __future__ import annotations

import yaml

from nvcre.api.measurement import GoodputMeasurement, GoodputMeasurementStatus
from nvcre.controller.measurements import read_goodput
from nvcre.measure.logprofile import default_log_profile
from nvcre.measure.training import goodput_display


def test_display_precision_and_units():
    assert goodput_display(0.400035, 812.53321, 1.8412) == {"goodput": "40.0%", "tflopsPerGPU": "812.5", "stepTime": "1.84s"}
    assert goodput_display(1.0) == {"goodput": "100.0%"}
    assert goodput_display(None) == {}


def test_a_reading_carries_the_display_beside_the_numbers(fixtures_dir):
    text = (fixtures_dir / "training" / "nvcre-megatron-core-full-iteration-line" / "input_logs.txt").read_text()
    reading = read_goodput(text, default_log_profile("megatron-training"))
    assert reading.ok
    ratio = float(reading.status["result"])
    assert len(reading.status["result"].split(".")[1]) == 6  # the reference's string, kept
    shown = reading.status["display"]
    assert shown["goodput"] == f"{ratio * 100:.1f}%"
    assert shown["stepTime"] == f"{float(reading.status['avgStepTimeSec']):.2f}s"  # "1.25s", not "1.245250"
    assert shown["tflopsPerGPU"] == f"{float(reading.status['avgTFLOPSPerGPU']):.1f}"
    GoodputMeasurementStatus.model_validate(reading.status)  # the status the controller writes is the API's


def test_the_printer_columns_show_the_display(repo_root):
    crd = yaml.safe_load((repo_root / "charts/nvcre/crds/goodputmeasurements.nvcre.nvidia.com.yaml").read_text())
    columns = {c["name"]: c for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]}
    assert columns["Goodput"]["jsonPath"] == ".status.display.goodput"
    assert columns["TFLOPs"]["jsonPath"] == ".status.display.tflopsPerGPU"
    assert columns["Ratio"]["jsonPath"] == ".status.result" and columns["Ratio"]["priority"] == 1
    assert [c.json_path for c in GoodputMeasurement.crd.columns][1] == ".status.display.goodput"
