# The two commands: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
RUNTIME_STAMP := $(VENV)/.runtime-installed
DEV_STAMP := $(VENV)/.dev-installed
PORT ?= 8501
# Where the app listens. 127.0.0.1 (this machine only) unless told otherwise, e.g.
# `make run HOST=0.0.0.0` behind an identity provider ([auth] in .streamlit/secrets.toml).
HOST ?= 127.0.0.1

.PHONY: run test venv venv-dev bench lint evaluate clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(RUNTIME_STAMP): requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(DEV_STAMP): requirements.txt requirements-dev.txt $(RUNTIME_STAMP)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

## venv: create or update .venv (quick when nothing changed)
venv: $(DEV_STAMP)

## run: start the app (loads and reconciles the benchmark on first start) and, on the same
##      port, the Razorpay webhook endpoint POST /api/webhooks/razorpay (serve.py)
run: $(RUNTIME_STAMP)
	$(VENV)/bin/streamlit run serve.py --server.address $(HOST) --server.port $(PORT)

## test: every test, browser tests included, on two worker processes (pytest-xdist)
test: $(DEV_STAMP)
	$(PY) -m pytest -n 2 --durations=30

## bench: speed and memory at 5k, 100k and 1M payments, then the app's cold start and page
##        times on the 1M database, the Investigation page's evidence for every kind of
##        exception on it, then exception sync at 1M (prints; asserts nothing)
BENCH_DIR ?= bench-out
bench: $(DEV_STAMP)
	$(PY) -m benchmarks.run --keep $(BENCH_DIR)
	$(PY) -m benchmarks.ui --db $(BENCH_DIR)/p1000000/bench.sqlite
	$(PY) -m benchmarks.evidence --db $(BENCH_DIR)/p1000000/bench.sqlite
	$(PY) -m benchmarks.review_sync
	$(PY) -m benchmarks.review_comments
	$(PY) -m benchmarks.sync_ratelimit

## lint: ruff everywhere, mypy strict on core/
lint: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy

## evaluate: the held-out report on the default benchmark
evaluate: $(RUNTIME_STAMP)
	$(PY) evaluation.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache test-artifacts
