"""Rewrites of the C++ kernels Inductor generates for axon where its CPU code is slow.

Both rewrite lines that Inductor's vectorized C++ kernels compute one lane at a time, with helpers that give
the same values bit for bit (the C++ next to this file, inserted after the kernel's ``cpp_prefix.h``):

- **Random draws** (dropout, ``rand_like``, ``bernoulli``): a loop over the vector's lanes, each calling
  ``normalized_rand_cpu(seed, offset)``, ten scalar Philox rounds per element, since Inductor compiles its
  kernels without loop vectorization. ``axon_uniform_rand_lanes`` (``philox_lanes.h``) runs the rounds on all
  lanes together.
- **Masks stored as bools and loaded back** (dropout's mask, kept for its backward; ``torch.where``'s
  condition): ``VecMask<float, 1>::store`` into a ``bool*`` goes through ATen's generic 64-lane bool vector,
  and ``VecMask<float, 1>::from`` a ``bool*`` converts one lane at a time. ``axon_store_bools`` and
  ``axon_load_float_mask`` (``mask_stores.h``) do either with a few vector instructions, and leave every
  other mask type to ATen.

In a compiled BERT training step these two took more time than the rest of the step's elementwise kernels.
Code in any other form is left as it is, so a change in Inductor's output costs only the speed.
"""

from __future__ import annotations

import functools
import pathlib
import re

_PREFIX_INCLUDE = "#include <torch/csrc/inductor/cpp_prefix.h>\n"

_RANDOM_LANE_LOOP = re.compile(
    r"for\(\s*\w+ offset_idx = 0; offset_idx < (?P<lanes>\d+); offset_idx\+\+\s*\)\s*"
    r"\{\s*result\[offset_idx\] = normalized_rand_cpu\((?P<seed>[^;]*?), offset\[offset_idx\]\);\s*\}")

_BOOL_POINTER = re.compile(r"\bbool\*\s*(\w+)")


def _bool_store(names: str) -> re.Pattern[str]:
    return re.compile(
        rf"\b(?P<mask>tmp\d+)\.store\((?P<address>(?:{names})\b[^;]*?), static_cast<int64_t>\((?P<count>\d+)\)\);")


def _bool_load(names: str) -> re.Pattern[str]:
    return re.compile(
        rf"at::vec::VecMask<float,1>::from\((?P<address>(?:{names})\b[^;]*?), static_cast<int64_t>\((?P<count>\d+)\)\)")


@functools.cache
def _helper(name: str) -> str:
    return pathlib.Path(__file__).with_name(name).read_text()


def rewrite_kernel_source(src_code: str) -> str:
    """``src_code`` with its per-lane random draws and bool mask loads and stores made vector calls (as it was if
    it has none)."""
    if _PREFIX_INCLUDE not in src_code:
        return src_code
    helpers = []
    src_code, draws = _RANDOM_LANE_LOOP.subn(
        lambda match: f"axon_uniform_rand_lanes<{match['lanes']}>({match['seed']}, offset, result);", src_code)
    if draws:
        helpers.append(_helper("philox_lanes.h"))
    pointers = _BOOL_POINTER.findall(src_code)
    if pointers:
        names = "|".join(re.escape(name) for name in pointers)
        src_code, stores = _bool_store(names).subn(
            lambda match: f"axon_store_bools({match['mask']}, {match['address']}, {match['count']});", src_code)
        src_code, loads = _bool_load(names).subn(
            lambda match: f"axon_load_float_mask({match['address']}, {match['count']})", src_code)
        if stores or loads:
            helpers.append(_helper("mask_stores.h"))
    if not helpers:
        return src_code
    return src_code.replace(_PREFIX_INCLUDE, _PREFIX_INCLUDE + "\n".join(helpers) + "\n", 1)
