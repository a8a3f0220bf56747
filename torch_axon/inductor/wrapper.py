"""Inductor's Python wrapper code generation for axon: C++ kernels are launched on the current axon stream."""

from __future__ import annotations

from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen
from torch._inductor.virtualized import V

from .argument_kinds import argument_kinds


class _LaunchOnAxonStreams:
    """Kernel calls of the C++ generator on axon devices become launch_host_kernel(...) calls (launch.py)."""

    def _generate_kernel_call_helper(self, kernel_name, call_args, *, device=None, triton=True, arg_types=None,
                                     **kwargs):
        device = device or V.graph.get_current_device_or_throw()
        if triton or device.type != "axon":
            return super()._generate_kernel_call_helper(kernel_name, call_args, device=device, triton=triton,
                                                        arg_types=arg_types, **kwargs)
        kinds = argument_kinds(arg_types) if arg_types is not None else None
        arguments = "".join(f"{argument}, " for argument in call_args)
        self.writeline(f"launch_host_kernel({kernel_name}, {kernel_name!r}, {kinds!r}, ({arguments}))")


class AxonSubgraphWrapperCodegen(_LaunchOnAxonStreams, SubgraphPythonWrapperCodegen):
    """Subgraphs (torch.cond, while_loop, invoke_subgraph bodies), written into the parent's module."""


class AxonPythonWrapperCodegen(_LaunchOnAxonStreams, PythonWrapperCodegen):
    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        if is_subgraph:
            return AxonSubgraphWrapperCodegen(subgraph_name, parent_wrapper, partition_signatures)
        return AxonPythonWrapperCodegen()

    def write_header(self) -> None:
        super().write_header()
        self.imports.writeline("from torch_axon.inductor.launch import launch_host_kernel")
