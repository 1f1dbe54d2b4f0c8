# The project's vocabulary. Every target installs what it needs into .venv / .tools (git-ignored).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
STAMP := $(VENV)/.installed

.PHONY: install run test unit lint conformance interop bench build deploy clean

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

## Everything CI runs: lint, unit and contract tests, the conformance suite, official clients.
test: lint unit conformance interop

unit: $(STAMP)
	$(PY) scripts/pytest_strict.py

lint: $(STAMP)
	$(VENV)/bin/ruff format --check src handlers tests scripts bench examples
	$(VENV)/bin/ruff check src handlers tests scripts bench examples
	$(VENV)/bin/mypy

conformance: $(STAMP)
	$(PY) scripts/conformance.py
	$(PY) scripts/conformance_client.py

## The official TypeScript SDK 1.x client and the MCP Inspector CLI against the embedded stack.
interop: $(STAMP)
	$(PY) scripts/interop.py

bench: $(STAMP)
	$(PY) bench/run.py

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
