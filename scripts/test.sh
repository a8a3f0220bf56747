#!/usr/bin/env bash
# Every test: set up, build and run the runtime's C++ suite (CTest), then the
# Python suite (pytest), including under AXON_LAUNCH_BLOCKING=1.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each section's wall time, printed when the next one starts (CI should stay under about 45 minutes).
section_start=$SECONDS
section() {
  echo "   (previous section: $((SECONDS - section_start)) s; total $((SECONDS / 60)) min)"
  section_start=$SECONDS
  echo "== $* =="
}
section "setup (scripts/setup.sh)"
bash scripts/setup.sh

section "lint: ruff (pyproject.toml) and clang-format (.clang-format)"
.venv/bin/ruff check .
git ls-files -z '*.cpp' '*.h' '*.c' | xargs -0 .venv/bin/clang-format --dry-run -Werror

section "runtime (C++, GoogleTest)"
# XLA's CPU PJRT plugin for the emulated driver's StableHLO executables (torch_axon finds it by itself).
AXON_PJRT_CPU_PLUGIN="$(.venv/bin/python -c 'import fastatomstruct_xla_cpu as p; print(p.library_path())')"
export AXON_PJRT_CPU_PLUGIN
# The same plugin for the PJRT driver's runs (its conformance suite in ctest).
export AXON_PJRT_PLUGIN="$AXON_PJRT_CPU_PLUGIN"
cmake -S . -B build -G Ninja -DAXON_BUILD_TESTS=ON >/dev/null
cmake --build build -j "${AXON_BUILD_JOBS:-2}"
ctest --test-dir build --output-on-failure -j 2

section "torch_axon (Python)"
.venv/bin/python -m pytest tests -q "$@"

section "torch_axon under AXON_LAUNCH_BLOCKING=1"
AXON_LAUNCH_BLOCKING=1 .venv/bin/python -m pytest tests/test_operators.py tests/test_random.py -q "$@"

section "operator conformance (deterministic OpInfo sample; full run: python -m conformance.report --full)"
.venv/bin/python -m conformance.report --sample --min-pass-rate 0.99

section "StableHLO lowering coverage over OpInfo (at least 95% of the ops with core-ATen decompositions)"
.venv/bin/python -m conformance.lowering_coverage --min-rate 0.95 > /dev/null

section "differential fuzzer: 15 seeds past the pytest batch, through the CLI (docs/fuzzing.md)"
.venv/bin/python -m fuzz --seed-start 100000 --seeds 15 --minutes 1 --output build/fuzz-ci
section "the training examples, 5 steps (examples/train.py; train_sparse.py: a GCN and a sparse-embedding recommender)"
.venv/bin/python examples/train.py --steps 5
.venv/bin/python examples/train_sparse.py --steps 5

# The PJRT driver: its driver conformance suite ran in ctest and tests/test_pjrt_driver.py (eager, compile,
# DDP, FSDP2) in pytest; here, its operator conformance and the training example.
section "the PJRT driver on XLA's CPU plugin: the conformance sample, then the training example, 5 steps"
# Compiled eager kernels from each call shape's first call (the default waits for the second), so the
# sample's calls run as compiled kernels wherever they lower (docs/eager_kernels.md).
AXON_DRIVER=pjrt AXON_EAGER_COMPILE_AFTER=1 .venv/bin/python -m conformance.report --sample --min-pass-rate 0.95 \
  --output build/coverage-sample-pjrt.md
AXON_DRIVER=pjrt .venv/bin/python examples/train.py --steps 5
section "the wheel: manylinux-tagged, installed into a fresh venv in another directory (scripts/build_wheel.sh)"
bash scripts/build_wheel.sh build/dist
section "done"
