# The project's vocabulary. Every target installs what it needs into .venv / .tools (git-ignored).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
STAMP := $(VENV)/.installed

.PHONY: install run test unit lint simulate conformance interop bench build deploy clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

## Serve the embedded stack at http://$(HOST):$(PORT)/mcp (Ctrl-C stops it).
## AUTH=oauth: sign-in required, with a local authorization server next to it.
## TOOLS=...: the tools to serve, a module or a declaration (examples/managed/tools.yaml).
run: $(STAMP)
	HOST=$(HOST) PORT=$(PORT) $(if $(AUTH),MCP_TASKS_AUTH_MODE=$(AUTH)) $(if $(TOOLS),MCP_TASKS_TOOLS=$(TOOLS)) $(PY) -m mcp_tasks_aws.local.stack

## Everything CI runs: lint, unit and contract tests, the conformance suite, official clients.
test: lint unit simulate conformance interop

unit: $(STAMP)
	$(PY) scripts/pytest_strict.py

lint: $(STAMP)
	$(VENV)/bin/ruff format --check src handlers tests scripts bench examples
	$(VENV)/bin/ruff check src handlers tests scripts bench examples
	$(VENV)/bin/mypy

## The seeded simulation of the whole system under faults (docs/simulation.md): the default
## seeds on both stores. SEEDS=N FROM=K runs seeds K..K+N-1, SEED=S replays one (shrunk, with
## its history), STORE=twin|moto|both, MUTATION=name runs with a deliberate bug.
simulate: $(STAMP)
	$(PY) scripts/simulate.py $(if $(SEEDS),--seeds $(SEEDS)) $(if $(FROM),--from $(FROM)) $(if $(SEED),--seed $(SEED)) $(if $(STORE),--store $(STORE)) $(if $(SCHEDULES),--schedules $(SCHEDULES)) $(if $(STEPS),--steps $(STEPS)) $(if $(MUTATION),--mutation $(MUTATION))

conformance: $(STAMP)
	$(PY) scripts/conformance.py
	$(PY) scripts/conformance_client.py

## The official TypeScript SDK 1.x client and the MCP Inspector CLI against the embedded stack.
interop: $(STAMP)
	$(PY) scripts/interop.py

bench: $(STAMP)
	$(PY) bench/run.py

## Build the Lambda artifacts into .aws-sam/build (SAM CLI in .tools/sam-venv, no Docker).
## TOOLS=...: the ToolsModule to smoke-test (a declaration is checked and its IAM printed).
build: $(STAMP)
	$(PY) scripts/sam_build.py $(if $(TOOLS),--tools-module $(TOOLS))

## Deploy what `make build` built (sam deploy with the SAM CLI in .tools/sam-venv); guided the
## first time, when there is no samconfig.toml. DEPLOY_ARGS go to sam deploy (e.g. --guided).
deploy: $(STAMP)
	$(PY) scripts/sam_deploy.py $(DEPLOY_ARGS)

clean:
	rm -rf $(VENV) .tools .pytest_cache .mypy_cache .ruff_cache .aws-sam
