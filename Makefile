# The whole set-up on a fresh machine is two commands: `make demo` and `make test`.
# Python 3.11+ with pip; installs into .venv.  torch is pinned to the CPU build
# (torch==2.13.0), which pip takes without downloading a CUDA build.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test install venv clean bench-store

$(PY):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml
	$(PIP) install --quiet --disable-pip-version-check "torch==2.13.0"
	$(PIP) install --quiet --disable-pip-version-check -e ".[test]"
	@rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/chronomem demo

test: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_ARGS)

bench-store: $(STAMP)
	$(PY) benchmarks/bench_store.py

clean:
	rm -rf $(VENV) .chronomem .pytest_cache .hypothesis
