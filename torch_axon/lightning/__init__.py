"""Lightning on axon: ``Trainer(accelerator="axon")`` and ``Fabric(accelerator="axon")``.

``accelerator.py`` is the accelerator, registered under the name ``axon`` in both of Lightning's registries.
Lightning registers only its own accelerators when its accelerator packages are imported, so ``import torch``
(which imports torch_axon) arranges for axon's to be registered right after them (``registration.py``), and user
code needs no import of its own. ``registration.py`` also says which two choices of Lightning's connectors are
made for the CUDA/MPS/CPU names only, and what axon does about them.
"""

from .registration import install_lightning_registration

__all__ = ["install_lightning_registration"]
