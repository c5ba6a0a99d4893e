"""benchmarks/xla_profile.py: kernels are put in the right kind, and a profiled run's time is
attributed to them."""

import jax
import jax.numpy as jnp

from benchmarks.xla_profile import KINDS, by_kind, instruction_kinds, profile_by_kind, traced_run


def _program(key, x, w):
    noise = jax.random.normal(key, x.shape[-1:])  # one row: threefry costs ~100× a multiply-add
    return jnp.tanh((x + noise) @ w).sum() + jnp.exp(x).sum()


def test_instruction_kinds_tell_matmul_random_and_other_apart():
    args = (jax.random.PRNGKey(0), jnp.ones((64, 32)), jnp.ones((32, 16)))
    kinds = instruction_kinds(jax.jit(_program).lower(*args).compile().as_text())
    assert {"matmul", "random numbers", "other"} <= set(kinds.values())
    assert "initialisation" not in kinds.values()


def test_our_network_initialiser_counts_as_initialisation():
    from jaxclimate.algos.initializers import orthogonal

    compiled = jax.jit(lambda key: orthogonal(1.0)(key, (8, 4))).lower(jax.random.PRNGKey(0)).compile()
    assert "initialisation" in instruction_kinds(compiled.as_text()).values()


def test_kernel_time_is_summed_by_kind():
    """The attribution itself, on a made-up trace: kernels by kind, control flow and the
    runtime's own events left out."""
    kinds = {"dot.1": "matmul", "fusion.2": "matmul", "add.3": "other", "rng.4": "random numbers", "while.5": "control flow"}
    per_kernel = {"dot.1": 2.0, "fusion.2": 1.0, "add.3": 0.5, "rng.4": 0.25, "while.5": 9.0, "ThunkExecutor::Execute": 7.0}
    assert by_kind(kinds, per_kernel) == {"matmul": 3.0, "random numbers": 0.25, "initialisation": 0.0, "other": 0.5}


def _chained_matmuls(key, x, w):
    """Eight (512, 512) products, 10⁹ multiply-adds, against 8 draws and 64 element-wise values:
    matmul work outweighs the rest by five orders of magnitude, so no scheduling noise reorders them."""
    y = x
    for _ in range(8):
        y = y @ w
    return jnp.tanh(y[:8, :8] + jax.random.normal(key, (8,))).sum()


def test_profile_by_kind_attributes_a_matmul_heavy_program_to_matmuls():
    args = (jax.random.PRNGKey(0), jnp.ones((512, 512)), jnp.full((512, 512), 1 / 512))
    compiled = jax.jit(_chained_matmuls).lower(*args).compile()
    kinds = instruction_kinds(compiled.as_text())
    times, counts, _ = traced_run(compiled, *args)
    # what ran, by kind: the eight products, one kernel each at least, and the draws and tanh
    events = by_kind(kinds, counts)
    assert events["matmul"] >= 8 and events["random numbers"] >= 1 and events["other"] >= 1 and events["initialisation"] == 0
    seconds = profile_by_kind(compiled, *args)
    assert set(seconds) == set(KINDS) | {"total", "wall"}
    assert seconds["total"] == sum(seconds[k] for k in KINDS) > 0
    assert seconds["matmul"] > seconds["random numbers"] + seconds["other"]
