#!/usr/bin/env bash
# The training example: set up, then train a small GPT on axon next to the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python examples/train.py "$@"
