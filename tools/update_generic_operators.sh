#!/usr/bin/env bash
# Regenerates csrc/ops/generic_operators.h (see tools/list_generic_operators.py).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
operators=$("$python" tools/list_generic_operators.py)
{
  sed -n '1,/^inline constexpr const char\* kGenericOperators\[\] = {$/p' csrc/ops/generic_operators.h
  echo "$operators" | sed 's/.*/    "&",/'
  printf '};\n\n}  // namespace axon\n'
} > csrc/ops/generic_operators.h.new
mv csrc/ops/generic_operators.h.new csrc/ops/generic_operators.h
echo "$(echo "$operators" | wc -l) generic operators"
