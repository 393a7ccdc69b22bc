# The project's front door: `make test` (what CI runs), `make demo`, `make lint`.
SHELL := /bin/bash
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV := .venv
# Stamp newer than pyproject.toml = the venv has this version of the dependencies.
STAMP := $(VENV)/.installed

.PHONY: install test demo lint

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $@

test: install
	bash tests/run_tests.sh

# The main job: a fresh ./workspace repo for the demo packet, then the packet end to end in process.
demo: install
	bash assets/demo/setup.sh
	$(VENV)/bin/awp run assets/demo

lint: install
	$(VENV)/bin/ruff check .

# Per-Attempt cost of the Dagster layer over the pure engine (ratios within one run; see bench/README.md).
.PHONY: bench
bench: install
	$(VENV)/bin/python bench/attempt_overhead.py

# `awp status` over 10,000 stored Attempts on PostgreSQL, against one SQL count (a throwaway server unless
# AWP_TEST_PG_URL is set). Prints milliseconds and ratios; see bench/README.md.
.PHONY: bench-status
bench-status: install
	$(VENV)/bin/python bench/status_speed.py

# The JSON Schemas that ship with the package, regenerated from the pydantic models (a test checks they match).
.PHONY: schemas
schemas: install
	$(VENV)/bin/python -c "from awp_pipelines.schema import schema_text; \
	open('awp_pipelines/schemas/status.schema.json', 'w').write(schema_text('status'))"
