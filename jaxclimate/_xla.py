"""XLA flags for CPU runs.

jax 0.10.2 on CPU can deadlock in ``jit(vmap(train))`` over several seeds of a PPO-style
loop; turning off the concurrency-optimised scheduler and multi-threaded Eigen removes it.
The flags are only read when the XLA backend starts, so call this before the first JAX
computation. A user's own ``XLA_FLAGS`` is left untouched.
"""

import os

CPU_SAFE_XLA_FLAGS = "--xla_cpu_enable_concurrency_optimized_scheduler=false --xla_cpu_multi_thread_eigen=false"


def use_cpu_safe_xla_flags() -> bool:
    """Set ``XLA_FLAGS`` to the deadlock-free CPU flags unless the user set it; returns
    whether it was set here."""
    if os.environ.get("XLA_FLAGS"):
        return False
    os.environ["XLA_FLAGS"] = CPU_SAFE_XLA_FLAGS
    return True
