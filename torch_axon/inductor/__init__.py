"""Default ``torch.compile`` on axon: Inductor, with its C++ CPU code generator as the device compiler.

``torch.compile(model)`` with no backend sends graphs to Inductor, which needs a code generator for every
device it sees. The emulated driver's memory is host memory, so Inductor's C++ kernels can compute on it
directly; what they must not do is run behind the stream's back. Here each generated kernel gets a C entry
point over argument slots (``scheduling.py``), and the generated wrapper launches it on the current axon stream
(``wrapper.py``, ``launch.py``), in order with eager work, returning at once as an eager kernel does.

On a driver whose memory the host cannot address (the PJRT driver), host code cannot compute on device memory
without staging every kernel's operands, so default compile takes the StableHLO path instead: the same thing as
``backend="axon"``, compiled by the driver (``routing.py``).

Registration is lazy: importing Inductor costs about a second, so it happens on the first default compile that
sees an axon tensor, not at ``import torch``.
"""

from .routing import install_default_compile_routing

__all__ = ["install_default_compile_routing"]
