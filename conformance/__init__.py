"""Conformance harness: every OpInfo operator run on axon and compared with the CPU.

In the spirit of ggml's test-backend-ops: PyTorch's own operator database
(torch.testing._internal.common_methods_invocations.op_db) provides the
operators, their dtypes and sample inputs; the harness runs each sample on the
CPU and on axon and compares values, dtypes, shapes and strides, raised
errors, in-place and out= variants, gradients and forward-mode derivatives, and
checks that nothing fell back to the CPU. nn modules (module_db: forward and
backward) and optimizers (optim_db, with foreach and fused variants) run the
same way.

    python -m conformance.report --sample     # the deterministic CI sample
    python -m conformance.report --full       # everything (tens of minutes)
"""
