#!/usr/bin/env bash
# Sets up everything from a clean clone: system packages (GoogleTest, ccache,
# ninja), a virtual environment in .venv with torch==2.13.0 (the CPU build on
# this machine's disk), and torch_axon built in place. Safe to run again: each
# step is skipped when already done, and rebuilds are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
[ -f /usr/include/gtest/gtest.h ] || need_apt+=(libgtest-dev)
command -v ccache >/dev/null || need_apt+=(ccache)
command -v ninja >/dev/null || need_apt+=(ninja-build)
command -v cmake >/dev/null || need_apt+=(cmake)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import torch, yaml, pytest, numpy, expecttest, jax, fastatomstruct_xla_cpu; assert torch.__version__.startswith('2.13.0'); assert jax.__version__ == '0.10.2'" 2>/dev/null; then
  echo "setup: installing torch==2.13.0, jax==0.10.2 and test tools into .venv"
  .venv/bin/pip install -q --upgrade pip setuptools wheel
  # expecttest and hypothesis: needed by torch.testing._internal (OpInfo database).
  # jax/jaxlib 0.10.2 (the newest for Python 3.11): the host-import tests adopt jax buffers.
  # fastatomstruct-xla-cpu: an unmodified build of XLA's CPU PJRT plugin (libpjrt_cpu.so), which the emulated
  # driver loads to run "stablehlo-mlir" executables (runtime/include/axon/formats/stablehlo.h).
  .venv/bin/pip install -q "torch==2.13.0" "jax==0.10.2" "jaxlib==0.10.2" "fastatomstruct-xla-cpu==2026.6.23" \
    pyyaml pytest numpy expecttest hypothesis
fi
# Libraries axon integrates with, tested in CI (tests/test_lightning.py, tests/test_huggingface.py); optional
# for users (pyproject extras).
if ! .venv/bin/python -c "import lightning, transformers, accelerate
assert (lightning.__version__, transformers.__version__, accelerate.__version__) == ('2.6.6', '5.18.0', '1.15.0')" \
    2>/dev/null; then
  echo "setup: installing lightning==2.6.6, transformers==5.18.0 and accelerate==1.15.0 into .venv"
  .venv/bin/pip install -q "lightning==2.6.6" "transformers==5.18.0" "accelerate==1.15.0"
fi
# The linters scripts/test.sh runs, pinned so that every machine formats alike.
if ! { [ -x .venv/bin/ruff ] && .venv/bin/ruff --version | grep -q "^ruff 0.16.9$" &&
       [ -x .venv/bin/clang-format ] && .venv/bin/clang-format --version | grep -q "version 23.1.3"; }; then
  echo "setup: installing ruff==0.16.9 and clang-format==23.1.3 into .venv"
  .venv/bin/pip install -q "ruff==0.16.9" "clang-format==23.1.3"
fi

echo "setup: building torch_axon"
.venv/bin/pip install -q --no-build-isolation --no-deps -e .
echo "setup: done"
