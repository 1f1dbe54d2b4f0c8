# The project's vocabulary. Every target installs what it needs into .venv / .tools (git-ignored).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
STAMP := $(VENV)/.installed

# pytest-xdist workers, one per core: each worker imports and collects the whole tree (about
# 8 s of CPU), and under `make test` the cores are shared with its other parts anyway.
# `make unit WORKERS=4` is quicker alone, most of the slow tests waiting rather than computing.
WORKERS ?= auto
PYTEST := $(PY) scripts/pytest_strict.py -n $(WORKERS) --dist loadscope
# The tiers `make check` runs: in-process and moto (tests/support/tiers.py marks the others).
FAST_TIERS := not stack and not subprocess and not template

.PHONY: install run check test unit lint simulate conformance conformance-server conformance-client \
	interop node-tools bench bench-smoke build deploy clean

$(STAMP): pyproject.toml
	@echo "installing mcp-tasks-aws and its development tools into $(VENV) (pip, about a minute; once, and again when pyproject.toml changes)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

## Serve the embedded stack at http://$(HOST):$(PORT)/mcp (Ctrl-C stops it).
## AUTH=oauth: sign-in required, with a local authorization server next to it.
## TOOLS=...: the tools to serve: a module (my_tools), a .py file (tools/my_tools.py) or a
## declaration (examples/managed/tools.yaml), anywhere in the checkout.
run: $(STAMP)
	HOST=$(HOST) PORT=$(PORT) $(if $(AUTH),MCP_TASKS_AUTH_MODE=$(AUTH)) $(if $(TOOLS),MCP_TASKS_TOOLS=$(TOOLS)) $(PY) -m mcp_tasks_aws.local.stack

## The fast loop: format, lint and types, then the in-process and moto tiers in parallel
## workers (CONTRIBUTING.md: the tiers and their times).
check: lint
	$(PYTEST) -m "$(FAST_TIERS)" --durations=15

## Everything CI runs, side by side (each part's output once it ends): lint and types, every
## pytest tier, the conformance suite in both roles, the official clients, and a smoke of
## every bench section. Most of the last four is waiting on Node processes and poll intervals.
test: $(STAMP)
	$(MAKE) --no-print-directory -j7 --output-sync=target \
		lint unit simulate conformance-server conformance-client interop bench-smoke

## Every pytest tier, in parallel workers.
unit: $(STAMP)
	$(PYTEST) --durations=25

lint: $(STAMP)
	$(VENV)/bin/ruff format --check src handlers tests scripts bench examples
	$(VENV)/bin/ruff check src handlers tests scripts bench examples
	$(VENV)/bin/mypy

## The seeded simulation of the whole system under faults (docs/simulation.md): the default
## seeds on both stores. SEEDS=N FROM=K runs seeds K..K+N-1, SEED=S replays one (shrunk, with
## its history), STORE=twin|moto|both, MUTATION=name runs with a deliberate bug.
simulate: $(STAMP)
	$(PY) scripts/simulate.py $(if $(SEEDS),--seeds $(SEEDS)) $(if $(FROM),--from $(FROM)) $(if $(SEED),--seed $(SEED)) $(if $(STORE),--store $(STORE)) $(if $(SCHEDULES),--schedules $(SCHEDULES)) $(if $(STEPS),--steps $(STEPS)) $(if $(MUTATION),--mutation $(MUTATION))

## The Node tools of conformance and interop, installed once before they run side by side.
node-tools: $(STAMP)
	$(PY) scripts/interop.py --install

## The MCP conformance suite: its server scenarios against the embedded stack, and the CLI as
## the client of its client scenarios.
conformance: conformance-server conformance-client

conformance-server: $(STAMP) node-tools
	$(PY) scripts/conformance.py

conformance-client: $(STAMP) node-tools
	$(PY) scripts/conformance_client.py

## The official TypeScript SDK 1.x client and the MCP Inspector CLI against the embedded stack.
interop: $(STAMP) node-tools
	$(PY) scripts/interop.py

bench: $(STAMP)
	$(PY) bench/run.py

## Every bench section, as short as it can be: proves each runs (its figures mean nothing).
bench-smoke: $(STAMP)
	$(PY) bench/run.py --smoke

## Build the Lambda artifacts into .aws-sam/build (SAM CLI in .tools/sam-venv, no Docker).
## TOOLS=...: the tools to package, as make run takes them (a module, a .py file or a
## declaration, in the checkout); make deploy deploys what was built last.
build: $(STAMP)
	$(PY) scripts/sam_build.py $(if $(TOOLS),--tools-module $(TOOLS))

## Deploy what `make build` built (sam deploy with the SAM CLI in .tools/sam-venv): credentials
## and region checked first, then no questions. STACK=... (default mcp-tasks), REGION=...,
## PARAMS="Name=value ..." (template parameters); all kept in samconfig.toml for next time.
## GUIDED=1: sam deploy --guided instead. DEPLOY_ARGS go to sam deploy as they are.
deploy: $(STAMP)
	$(PY) scripts/sam_deploy.py $(if $(STACK),--stack-name '$(STACK)') $(if $(REGION),--region '$(REGION)') $(if $(PARAMS),--parameters '$(PARAMS)') $(if $(GUIDED),--guided) $(if $(DEPLOY_ARGS),-- $(DEPLOY_ARGS))

clean:
	rm -rf $(VENV) .tools .pytest_cache .mypy_cache .ruff_cache .aws-sam
