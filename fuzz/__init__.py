"""Differential fuzzing of axon against the CPU (docs/fuzzing.md).

Random programs from a seed (`generator.generate`) run on the CPU and on axon
(`execution.check`) and through torch.compile (`compiled.check_compiled`);
failures shrink (`minimize.minimize`) to standalone reproducers
(`Program.reproducer`). `python -m fuzz` is the long run.
"""
