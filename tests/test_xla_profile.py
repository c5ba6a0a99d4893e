"""benchmarks/xla_profile.py: kernels are put in the right kind, and a profiled run's time is
attributed to them."""

import jax
import jax.numpy as jnp

from benchmarks.xla_profile import KINDS, instruction_kinds, profile_by_kind


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


def test_profile_by_kind_attributes_a_matmul_heavy_program_to_matmuls():
    args = (jax.random.PRNGKey(0), jnp.ones((512, 512)), jnp.ones((512, 512)))
    compiled = jax.jit(_program).lower(*args).compile()
    seconds = profile_by_kind(compiled, *args)
    assert set(seconds) == set(KINDS) | {"total", "wall"}
    assert seconds["total"] == sum(seconds[k] for k in KINDS) > 0
    # 512³ multiply-adds against a few element-wise passes over 512² values and 512 draws.
    assert seconds["matmul"] > seconds["random numbers"] and seconds["matmul"] > seconds["other"]
