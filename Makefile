# Two commands on a fresh machine: `make synth` and `make test`.
# Each sets up what it needs first (Python venv in .venv, the CDK CLI in node_modules;
# for `make test` also the machine: `make system`).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
SETUP_STAMP := $(VENV)/.gpucluster-setup
CONFIG ?= examples/default.yaml
OUT ?= cdk.out
# The reference trainer's torch (the `train` extra), installed only for the targets that
# run or type-check the trainer, so `make synth` stays light. Pinned: this version is the
# CPU build that lies on these machines' disk; an unpinned torch resolves to a CUDA
# build of several GB. The tests run the trainer on CPU.
TORCH ?= torch==2.13.0
TRAIN_STAMP := $(VENV)/.gpucluster-train
# Two pytest-xdist workers: the real-Slurm tests, which mostly wait on daemons, run in
# order on one while the other takes the rest (tests/xdist_scheduling.py). `make test
# PARALLEL=` runs everything in one process.
PARALLEL ?= -n 2

.PHONY: system setup setup-train synth cdk-synth typecheck test test-fast test-slurm snapshots schema-golden readme-samples bench bench-suite lint clean

$(SETUP_STAMP): pyproject.toml package.json package-lock.json
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

setup: $(SETUP_STAMP)

## The machine's set-up for the suite (.ci/system): the Debian packages in .ci/debian-packages
## (among them the pinned Slurm's build dependencies). Quiet when done; needs root and
## apt-get, and without them prints the command to run (in CI it fails instead).
system:
	@.ci/system

$(TRAIN_STAMP): $(SETUP_STAMP)
	$(PY) -m pip install --quiet '$(TORCH)' -e '.[train]'
	touch $@

setup-train: $(TRAIN_STAMP)

## Synthesize the default cluster offline into cdk.out (no AWS credentials needed).
synth: setup
	$(VENV)/bin/gpucluster synth $(CONFIG) -o $(OUT)

## The same through the CDK CLI: make cdk-synth CONFIG=examples/mixed.yaml
cdk-synth: setup
	npx cdk synth --quiet -c config=$(CONFIG) -o $(OUT)

## Strict mypy over gpucluster/ (settings in pyproject's [tool.mypy]).
typecheck: setup-train
	$(PY) -m mypy

## The whole suite: the type check, then unit, snapshot, shell, and real-Slurm integration
## tests (on the pinned Slurm 25.11.7, built from the vendored source once and cached).
test: system setup-train typecheck
	$(PY) -m pytest -q $(PARALLEL) --durations=15

test-fast: setup-train
	$(PY) -m pytest -q $(PARALLEL) -m "not slurm"

test-slurm: system setup-train
	$(PY) -m pytest -q -m slurm

## Accept the current synthesized templates as the new snapshots.
snapshots: setup
	$(PY) -m pytest -q tests/test_snapshots.py --snapshot-update

## Accept the current `gpucluster schema` as its golden copy (tests/config/test_schema.py).
schema-golden: setup
	$(VENV)/bin/gpucluster schema > tests/golden/config-schema.json

## Rewrite README's sample outputs from the code (tests/test_readme_samples.py); review the diff.
readme-samples: setup
	$(PY) -m tests.readme_samples

bench: setup
	$(PY) -m bench.run

## The suite's own time: make test's run with a JUnit report, then where the time went
## (bench/suite.py; docs/contributing.md has the figures).
bench-suite: system setup-train
	$(PY) -m bench.suite -- $(PARALLEL)

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(OUT) .pytest_cache
