# haystack-cfrag: every target sets itself up on a fresh machine.
PY        ?= python3
VENV      ?= .venv
VENV_H2   ?= .venv-haystack2
HAYSTACK3 ?= haystack-ai==3.4.0
HAYSTACK2 ?= haystack-ai>=2.20,<3
export HAYSTACK_TELEMETRY_ENABLED = False

.PHONY: setup test test-unit test-haystack2 clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e ".[test]" "$(HAYSTACK3)"
	touch $@

## the README's test command: set up, then every test on the target Haystack (3.4)
test: setup
	scripts/pytest-step "tests on $(HAYSTACK3)" $(VENV)/bin/python -m pytest -q tests

test-unit: setup
	scripts/pytest-step "unit tests" $(VENV)/bin/python -m pytest -q tests/unit

## the unit tests again on the latest haystack-ai 2.x: the components use only the shared API
test-haystack2: $(VENV_H2)/.installed
	$(VENV_H2)/bin/python -c "import haystack; print('haystack-ai', haystack.__version__)"
	scripts/pytest-step "unit tests on haystack-ai 2.x" $(VENV_H2)/bin/python -m pytest -q tests/unit

$(VENV_H2)/.installed: pyproject.toml
	$(PY) -m venv $(VENV_H2)
	$(VENV_H2)/bin/pip install -q --upgrade pip
	$(VENV_H2)/bin/pip install -q -e ".[test]" "$(HAYSTACK2)"
	touch $@

clean:
	rm -rf $(VENV) $(VENV_H2) *.egg-info .pytest_cache
