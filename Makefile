# make demo   set up .venv and run the main example
# make test   set up .venv, check the layers and lint, run the lit suite and pytest
# make bench  set up .venv and run the benchmarks
# make gpu-artifacts  compile the GPU tests and benchmarks for a GPU machine
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test lint lit pytest tmux bench tune fuzz gpu-artifacts clean

# The install goes through uv (from PyPI, pinned): it downloads the wheels in
# parallel and installs them in a fraction of pip's time; pip does it if uv
# cannot.
UV_VERSION := 0.13.8

# The rl extra's torch is the CPU build (about 190 MB; the registry's default
# build brings gigabytes of CUDA libraries), installed first: from this
# machine's wheel folder where it has it, else from PyTorch's CPU index.
TORCH_CPU  := torch==2.13.0+cpu
TORCH_FROM := $(if $(wildcard /opt/wheels/torch-2.13.0+cpu-*),--find-links /opt/wheels,--index-url https://download.pytorch.org/whl/cpu)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	( $(PY) -m pip install --quiet uv==$(UV_VERSION) \
	  && $(VENV)/bin/uv pip install --quiet --python $(PY) $(TORCH_FROM) '$(TORCH_CPU)' \
	  && $(VENV)/bin/uv pip install --quiet --python $(PY) -e '.[test,rl]' ) \
	|| ( $(PY) -m pip install --quiet $(TORCH_FROM) '$(TORCH_CPU)' && $(PY) -m pip install --quiet -e '.[test,rl]' )
	touch $(STAMP)

# Python caches compiled modules (__pycache__) only where
# PYTHONDONTWRITEBYTECODE is unset: with it set, every lt-opt, worker and
# child process the tests start would compile lt_mlir and its dependencies
# again.
unexport PYTHONDONTWRITEBYTECODE

demo: $(STAMP)
	$(PY) examples/demo.py

test: lint lit pytest

# The layer contracts (pyproject.toml, [tool.importlinter]) and ruff.
lint: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check --no-cache .

lit: $(STAMP)
	$(VENV)/bin/lit -s test/lit

# pytest exits 5 when it collects nothing; make treats that as a failure.
# -n auto: a worker per core (pytest-xdist); --dist loadscope: a module's
# tests on one worker, so its module-scoped fixtures are built once
# (tests/conftest.py starts the longest modules first).
pytest: $(STAMP) tmux
	$(VENV)/bin/pytest -q -n auto --dist loadscope

# lt-ui's terminal test drives it in tmux (Debian's package); without it
# that one test skips and says so.
tmux:
	@command -v tmux >/dev/null 2>&1 || apt-get install -y -qq tmux >/dev/null 2>&1 \
		|| (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq tmux >/dev/null 2>&1) \
		|| echo "tmux could not be installed: the terminal test of lt-ui will skip"

bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) benchmarks/bench_cpu.py
	$(PY) benchmarks/bench_foundation.py
	$(PY) benchmarks/bench_passes.py
	$(PY) benchmarks/bench_appy.py
	$(PY) benchmarks/bench_sparse.py --markdown docs/bench-sparse.md --chart docs/bench-sparse.png
	$(PY) benchmarks/bench_sparse.py --cores 1 --markdown docs/bench-sparse-1core.md
	$(PY) benchmarks/bench_torch.py
	$(PY) benchmarks/bench_ui.py
	$(PY) benchmarks/bench_cuda.py

# Search every bench_cpu.py workload's schedule (lt-tune's evolution, at most
# 60 s or 300 measurements each) and every bench_torch.py model's (150 s each;
# about 14 minutes for the four) into the tuning database; afterwards make
# bench's CPU and torch tables have an "lt_mlir tuned" row per workload.
tune: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) benchmarks/bench_cpu.py --tune 60
	$(PY) benchmarks/bench_torch.py --tune 150

# The long differential-fuzzing run (100,000 schedules of seed 29 on 2
# workers: about 20 minutes on a 2-core host) and the seeded bugs it must catch
# (lt_mlir/testing/mutants.py); the tables go to docs/fuzz.md and
# docs/fuzz-mutants.md.
fuzz: $(STAMP)
	$(PY) -m lt_mlir.testing.fuzz --schedules 100000 --seed 29 --workers 2 --markdown docs/fuzz.md
	$(PY) -m lt_mlir.testing.fuzz --mutants --seed 1 --markdown docs/fuzz-mutants.md

# PTX + launch plans of the GPU tests and benchmarks, for a GPU machine
# without torch-mlir (see README, "On an NVIDIA GPU").
gpu-artifacts: $(STAMP)
	$(PY) tests/cuda_cases.py build .gpu-artifacts/tests
	$(PY) benchmarks/bench_cuda.py build .gpu-artifacts/bench

clean:
	rm -rf $(VENV) test/lit/Output .pytest_cache
