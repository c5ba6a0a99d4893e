"""XLA flags for CPU runs.

jax 0.10.2 on CPU can deadlock in ``jit(vmap(train))`` over several seeds of a PPO-style
loop; turning off the concurrency-optimised scheduler and multi-threaded Eigen removes it.
The flags are only read when the XLA backend starts, so call this before the first JAX
computation. They are merged into a user's own ``XLA_FLAGS``: a flag the user set keeps the
user's value, the others are added.
"""

import os
import re

CPU_SAFE_XLA_FLAGS = "--xla_cpu_enable_concurrency_optimized_scheduler=false --xla_cpu_multi_thread_eigen=false"


def flag_names(flags: str) -> set[str]:
    """``"--a=1 --b"`` -> ``{"a", "b"}``."""
    return {m.group(1) for m in re.finditer(r"--([A-Za-z0-9_]+)", flags)}


def merge_xla_flags(user: str, extra: str = CPU_SAFE_XLA_FLAGS) -> str:
    """``user`` followed by each flag of ``extra`` whose name ``user`` does not set."""
    taken = flag_names(user)
    added = [flag for flag in extra.split() if flag_names(flag).isdisjoint(taken)]
    return " ".join([user.strip(), *added]).strip()


def use_cpu_safe_xla_flags() -> bool:
    """Merge the deadlock-free CPU flags into ``XLA_FLAGS`` (the user's own flags win);
    returns whether anything was added."""
    before = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = merge_xla_flags(before)
    return os.environ["XLA_FLAGS"] != before.strip()


def without_flag(flags: str, name: str) -> str:
    """``flags`` with every ``--name[=value]`` removed."""
    return " ".join(f for f in flags.split() if flag_names(f) != {name}).strip()
