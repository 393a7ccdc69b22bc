# The project's front door: `make test` (what CI runs), `make demo`, `make lint`.
SHELL := /bin/bash
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV := .venv
# Stamp newer than pyproject.toml = the venv has this version of the dependencies.
STAMP := $(VENV)/.installed

.PHONY: install test test-all test-extended test-fast demo ui lint fuzz

install: $(STAMP)

$(STAMP): pyproject.toml
	@bash tests/install_bubblewrap.sh  # the agents' sandbox (bwrap): as root via apt-get, else says how
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev,deploy]'
	@touch $@

test: install
	bash tests/run_tests.sh

# `make test` and the end-to-end variants it leaves out (tests/suite_tiers.py).
test-all: install
	AWP_TEST_EXTENDED=1 bash tests/run_tests.sh

# Only the end-to-end variants `make test` leaves out, on the newest Dagster.
test-extended: install
	AWP_TEST_EXTENDED=only bash tests/run_tests.sh tests

# The inner loop: no Dagster runs of whole packets (marked slow in tests/conftest.py), none of the tests of about
# 0.3 s or more (heavy: tests/suite_tiers.py), no PostgreSQL. Bytecode is written even where PYTHONDONTWRITEBYTECODE
# is set: rewriting every test module's asserts again costs each worker ~4 s at start.
test-fast: install
	PYTHONDONTWRITEBYTECODE= $(VENV)/bin/python -m pytest -q -n 2 -m "not slow and not heavy and not postgres"

# The long fuzz: 10,000 generated packets through lint, plan, verify and run --dry-run (the suite runs 400).
fuzz: install
	AWP_FUZZ_EXAMPLES=10000 $(VENV)/bin/python -m pytest -q -n 2 -p no:cacheprovider \
		tests/reliability/test_fuzz_inputs.py -k test_no_input_ends_in_a_traceback

# The main job: a fresh ./workspace repo for the demo packet, then the packet end to end in process.
demo: install
	bash assets/demo/setup.sh
	$(VENV)/bin/awp run assets/demo

# The Dagster UI and daemon (`dagster dev` runs both) on the demo's embedded instance: the runs of `make demo`.
# Quiet on purpose: the instance's dagster.yaml turns telemetry off (awp writes it; nothing goes to ~/.dagster);
# starting in DAGSTER_HOME keeps the repo's shared-deployment dagster.yaml from raising a "found but not used"
# warning; and dagster's pointer to `dg dev` is filtered, since `dg` needs dagster-dg-cli, which pulls in
# dagster-cloud-cli and is not a dependency here.
DEMO_HOME := $(CURDIR)/assets/demo/.awp/dagster
UI_PORT ?= 3000
PAGE_PORT ?= 3001
ui: install
	$(VENV)/bin/python -c 'from pathlib import Path; from awp_pipelines.orchestration.ledger.instance import open_instance; \
		open_instance(Path("assets/demo")).dispose()'
	# Warnings and errors only, one line each: the daemon's and webserver's own lines (--log-level) and each run's
	# console (AWP_CONSOLE_LOG_LEVEL, read by the code location; tests/ui/test_make_ui_console.py launches it as
	# this recipe does; GRPC_VERBOSITY: gRPC's own "Got goaway" info line at Ctrl-C); every event and stack trace is
	# still in the run's page.
	@echo "Dagster UI on http://127.0.0.1:$(UI_PORT) (warnings and errors below; Ctrl-C stops)"
	# The Attempt pages (`awp serve`) beside the UI, on the same instance; stopped with it.
	"$(CURDIR)/$(VENV)/bin/awp" serve --instance "$(DEMO_HOME)" --port $(PAGE_PORT) \
		--dagster-url http://127.0.0.1:$(UI_PORT) & trap "kill $$!" EXIT; \
	cd "$(DEMO_HOME)" && DAGSTER_HOME="$(DEMO_HOME)" AWP_PAGE_URL=http://127.0.0.1:$(PAGE_PORT) \
		AWP_CONSOLE_LOG_LEVEL=WARNING GRPC_VERBOSITY=ERROR PYTHONWARNINGS='ignore:Function `dev_command` is superseded' \
		"$(CURDIR)/$(VENV)/bin/dagster" dev -w "$(CURDIR)/workspace.yaml" -p $(UI_PORT) --log-level warning

# ruff, then mypy with the pydantic plugin (config in pyproject.toml).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# Every benchmark of issue 17, each beside its baseline from the same run, with ratio and verdict; writes
# docs/benchmarks.md (about 18 minutes on 2 CPUs; ARGS="--skip status" leaves one out; see bench/README.md).
.PHONY: bench
bench: install
	$(VENV)/bin/python bench/suite.py $(ARGS)

# Per-Attempt cost of the Dagster layer over the pure engine alone, with its details (--profile for a profile).
.PHONY: bench-attempt
bench-attempt: install
	$(VENV)/bin/python bench/attempt_overhead.py

# `awp blame` on a 1,000-commit repo against plain `git blame -L` (ratios within one run; goal: under 1 s).
.PHONY: bench-blame
bench-blame: install
	$(VENV)/bin/python bench/blame_speed.py

# A synthetic Claude stream-json stream through adapter, JSONL writer and transcript (MB=1024 for 1 GB).
MB ?= 128
.PHONY: bench-stream
bench-stream: install
	$(VENV)/bin/python bench/stream_throughput.py --mb $(MB)

# `awp status` over 10,000 stored Attempts on PostgreSQL, against one SQL count (a throwaway server unless
# AWP_TEST_PG_URL is set). Prints milliseconds and ratios; see bench/README.md.
.PHONY: bench-status
bench-status: install
	$(VENV)/bin/python bench/status_speed.py

# The JSON Schemas that ship with the package, regenerated from the pydantic models (a test checks they match).
.PHONY: schemas
schemas: install
	$(VENV)/bin/python -c "from awp_pipelines.cli_features.schema import schema_text; \
	open('awp_pipelines/schemas/status.schema.json', 'w').write(schema_text('status'))"
