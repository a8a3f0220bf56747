"""torch.distributed on axon: the ``axon`` process-group backend.

Importing torch_axon registers the backend, after which the usual entry points pick it:

    dist.init_process_group(device_id=torch.device("axon", local_rank))  # backend "axon"
    dist.init_process_group("cpu:gloo,axon:axon")                       # CPU tensors to Gloo
    init_device_mesh("axon", (2,))

The backend is ``ProcessGroupAxon`` (csrc/distributed/): a C++ c10d backend
whose collectives run PyTorch's Gloo on the axon memory, ordered against the
caller's streams like NCCL's. See docs/distributed.md.
"""

from __future__ import annotations

import torch.distributed as dist

from . import _C

BACKEND_NAME = "axon"


def _create_backend(common, backend_options=None):
    """Factory given to ``Backend.register_backend`` (extended API): one
    ProcessGroupAxon over a Gloo transport that has its own key prefix in the
    group's store and knows the group's global ranks (Gloo's split needs them)."""
    options = dist.ProcessGroupGloo._Options()
    options._devices = [dist.ProcessGroupGloo.create_default_device()]
    options._timeout = common.timeout
    # Empty for the default group; Gloo's split then indexes an empty list
    # unless this is the first Gloo group of the process.
    options.global_ranks_in_group = list(common.global_ranks_in_group) or list(range(common.group_size))
    options.group_name = common.group_id
    store = dist.PrefixStore("axon_transport", common.store)
    transport = dist.ProcessGroupGloo(store, common.group_rank, common.group_size, options)
    return _C._distributed.ProcessGroupAxon(common.group_rank, common.group_size, common.timeout, transport)


def _register() -> None:
    if not dist.is_available() or hasattr(dist.Backend, BACKEND_NAME.upper()):
        return
    dist.Backend.register_backend(BACKEND_NAME, _create_backend, devices=["axon"], extended_api=True)


_register()
