# nvcre developer entry points. `make demo` is the main job; `make test` runs every test.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo demo-down test unit venv bench clean kube trainer registry testdeps

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; set PYTHON=..." >&2; exit 2; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## The main job: the local test bed with a simulated fleet, a certification and its report.
demo: $(STAMP) kube
	bash hack/demo.sh

## Stop what the demo left running (controller, simulated fleet, control plane).
demo-down: $(STAMP)
	bash hack/demo.sh down

## Pinned control-plane binaries (etcd, kube-apiserver, kube-scheduler,
## kube-controller-manager, kubectl, helm): built once into ~/.cache/nvcre, then reused.
## NVCRE_KUBE_BIN=<dir> uses binaries you already have.
kube:
	bash hack/kube/build.sh

## Pinned Kubeflow Trainer v2 and JobSet controller managers plus their CRDs (the
## trainjob adapter's end-to-end tests): built once into ~/.cache/nvcre, then reused.
## NVCRE_TRAINER_DIR=<dir> uses a set you already have.
trainer:
	bash hack/trainer/build.sh

## The test bed's OCI registry (go-containerregistry, pinned), which the chart tests
## `helm push` to: built once into ~/.cache/nvcre, then reused. NVCRE_REGISTRY_BIN=<file>
## uses one you have.
registry:
	bash hack/registry/build.sh

## Tools the tests use beyond Python and Go: Debian's chromium (the HTML report screenshot).
testdeps:
	bash hack/install-chromium.sh

## The whole test suite: unit, integration (real control plane) and end-to-end.
test: $(STAMP) kube trainer registry testdeps
	$(PY) -m pytest tests

unit: $(STAMP)
	$(PY) -m pytest tests/unit

bench: $(STAMP)
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build dist src/*.egg-info
