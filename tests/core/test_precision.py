"""Backend-independent numerics: every matrix product of every registered environment's step
and reset (each shipped climate engine of the climate game), of CICERO-SCM in JAX and of the
surrogate's fit and evaluation is traced at full float32 precision (no TF32 on a GPU), while
policy networks keep the backend's default. Read from the jaxpr, so it runs on CPU."""

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest

import jaxclimate
from jaxclimate.algos.ippo import IPPOConfig, make_trainer
from jaxclimate.climate import engines, fit, surrogate
from jaxclimate.climate.cicero_jax import CiceroJAX

FULL = (jax.lax.Precision.HIGHEST, jax.lax.Precision.HIGHEST)
CONTRACTIONS = ("dot_general", "conv_general_dilated")


def contractions(jaxpr) -> list:
    """(primitive name, precision) of every contraction in a jaxpr and all its sub-jaxprs."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in CONTRACTIONS:
            found.append((eqn.primitive.name, eqn.params.get("precision")))
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            found += contractions(sub)
    return found


def below_full(fn, *args) -> tuple[int, list]:
    found = contractions(jax.make_jaxpr(fn)(*args).jaxpr)
    return len(found), [f for f in found if f[1] != FULL]


ENVS = [(env_id, {}) for env_id in jaxclimate.registered_envs() if env_id != "climate-mitigation"]
ENVS += [("climate-mitigation", {"engine": engine}) for engine in ("gru", "cicero-jax")]


@pytest.mark.parametrize("env_id, options", ENVS, ids=[f"{e}-{o.get('engine', '')}".rstrip("-") for e, o in ENVS])
def test_every_environment_contracts_at_full_precision(env_id, options):
    env, params = jaxclimate.make(env_id, **options)
    key = jax.random.PRNGKey(0)
    _, state = env.reset(key, params)
    for name, fn, args in (("reset", env.reset, (key, params)), ("step", env.step, (key, state, env.sample_actions(key), params))):
        count, low = below_full(fn, *args)
        assert not low, f"{env_id} {name}: {len(low)} of {count} contractions below full precision: {low[:3]}"


def test_the_planted_default_is_caught():
    """The check can fail: the same product traced without the physics precision is reported."""
    x = jnp.ones((3, 3))
    assert below_full(lambda a: a @ a, x) == (1, [("dot_general", None)])


def test_cicero_jax_contracts_at_full_precision():
    model = CiceroJAX()
    count, low = below_full(lambda e: model.run(e)["dT_glob_air"], jnp.ones((61, 5)))
    assert count > 0 and not low


def test_the_surrogate_engines_construction_contracts_at_full_precision():
    """What the engine computes once when it is built, outside any step (the table of encoder
    carries after the baseline rows, the initial temperature), runs at full precision too."""
    s = engines.SurrogateEngine("gru").surrogate
    prefix = lambda p, rows: engines.baseline_prefix_carries(s.config, p, rows)  # noqa: E731
    for fn, args in ((prefix, (s.params, jnp.zeros((s.config.window, 5)))), (s.predict, (jnp.zeros((s.config.window + 1, 5)),))):
        count, low = below_full(fn, *args)
        assert count > 0 and not low, low[:3]


@pytest.mark.parametrize("kind", ["gru", "lstm", "tcn"])
def test_surrogate_fit_and_evaluation_contract_at_full_precision(kind):
    config = surrogate.SurrogateConfig.paper(kind)
    rng = np.random.default_rng(0)
    n = 6
    data = fit.PreparedData(
        histories=jnp.asarray(rng.normal(size=(n, 176, 5)), jnp.float32),
        targets=jnp.zeros((n, 61), jnp.float32),
        splits={"train": np.arange(4), "val": np.array([4]), "test": np.array([5])},
        mean=np.zeros(5),
        std=np.ones(5),
        window_index=jnp.asarray(np.arange(61)[:, None] + np.arange(66)[None, :] + 50),
    )
    model = surrogate.build_model(config)
    params = surrogate.init_params(config, jax.random.PRNGKey(0))
    optimizer = fit.make_optimizer(fit.FitConfig(model=kind))
    epoch = fit.make_train_epoch(model, optimizer, data, batch_size=4, steps=2)
    count, low = below_full(epoch, params, optimizer.init(params), jax.random.PRNGKey(1))
    assert count > 0 and not low, low[:3]
    evaluate = fit.make_evaluate(model, data, batch_size=4)
    count, low = below_full(evaluate, params, jnp.arange(2), jnp.arange(2))
    assert count > 0 and not low, low[:3]


def test_policy_networks_keep_the_backend_default():
    """Only physics is pinned: the actor-critic's products keep the fast default."""
    env, params = jaxclimate.make("ebm-v3-a2")
    trainer = make_trainer(env, params, IPPOConfig(total_timesteps=8, num_envs=1, num_steps=8, num_minibatches=1, hidden_size=8, network="mlp"))
    rs = trainer.init(jax.random.PRNGKey(0))
    obs, _ = env.reset(jax.random.PRNGKey(0), params)
    batch = jax.tree_util.tree_map(lambda x: x[None], obs)
    found = contractions(jax.make_jaxpr(lambda p: trainer.act(p, batch, rs.carry, jnp.zeros((1,), bool), jax.random.PRNGKey(0)))(rs.params).jaxpr)
    assert found and all(precision is None for _, precision in found)


@pytest.mark.parametrize("x64", [False, True])
def test_exact_divide_is_correctly_rounded_under_vmap_and_jit(x64):
    """Against NumPy's correctly rounded float32 division, with constant and (under vmap)
    unbatched divisors, the two cases XLA:CPU rewrites into a multiplication by a reciprocal
    (1 ulp off for about a third of values): a plain ``x / 3.7`` fails this test."""
    from jaxclimate.core.precision import exact_divide

    rng = np.random.default_rng(1)
    x = (rng.standard_normal((2000, 6)) * 10.0 ** rng.uniform(-3, 6, (2000, 6))).astype(np.float32)
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", x64)
    try:
        by_constant = np.asarray(jax.jit(lambda v: exact_divide(v, 3.7))(x))
        per_row = np.asarray(jax.jit(jax.vmap(lambda v, d: exact_divide(v, d), in_axes=(0, None)))(x, np.float32(6.0)))
        naive = np.asarray(jax.jit(jax.vmap(lambda v, d: v / d, in_axes=(0, None)))(x, np.float32(6.0)))
    finally:
        jax.config.update("jax_enable_x64", previous)
    assert by_constant.dtype == per_row.dtype == np.float32
    np.testing.assert_array_equal(by_constant, x / np.float32(3.7))
    np.testing.assert_array_equal(per_row, x / np.float32(6.0))
    assert not np.array_equal(naive, x / np.float32(6.0))  # the rewrite this guards against is real here
