"""The paper's untested condition (its Eq. 37): is the policy gradient a learner gets from the
surrogate aligned with the one CICERO-SCM would give?

    python baselines/gradient_alignment.py                      # scenarios i and ii, random + trained policies
    python baselines/gradient_alignment.py --episodes 256 --train-iterations 50   # quicker

With CICERO-SCM itself in JAX (``engine="cicero-jax"``) both engines are cheap enough to
compare gradients directly. Policy: one small MLP per country (observation → the four
3-level levers as categorical heads), the paper's independent learners. For a policy θ we
estimate the policy gradient with the score-function (REINFORCE) estimator

    ĝ = (1/B) Σ_b Σ_t Σ_i ∇θ log π_i(a_t^b | o_t^b) · (G_{i,t}^b − Ḡ_{i,t})

(G the discounted reward-to-go of country i with the game's γ = 0.999, Ḡ its mean over the
batch: a baseline, which leaves the expectation unchanged) over B episodes played with the
surrogate engine and, with the **same random numbers**, with CICERO-SCM in JAX. We report the
cosine similarity and the norm ratio of the two gradients, per scenario, for the untrained
(random-initialisation) policy and for a policy trained on the surrogate with the same
estimator. As the scale of "aligned" we also report the cosine between two surrogate
estimates with independent random numbers (the estimator's own noise): a surrogate/CICERO
cosine close to 1 and well above that noise floor means the surrogate's gradient points
where the true one does. Results: ``baselines/results/gradient_alignment.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

from jaxclimate import make  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402

RESULTS = Path(__file__).parent / "results"
GROUP = "countries"
GAMMA = 0.999
LEVELS = 3


def init_policy(key: jax.Array, n_agents: int, obs_dim: int, hidden: int) -> dict:
    """One MLP per country (stacked on axis 0): obs -> 4 × 3 logits."""
    k1, k2 = jax.random.split(key)
    scale1, scale2 = 1.0 / np.sqrt(obs_dim), 0.01
    return {
        "w1": scale1 * jax.random.normal(k1, (n_agents, obs_dim, hidden)),
        "b1": jnp.zeros((n_agents, hidden)),
        "w2": scale2 * jax.random.normal(k2, (n_agents, hidden, 4 * LEVELS)),
        "b2": jnp.zeros((n_agents, 4 * LEVELS)),
    }


def logits(params: dict, obs: jax.Array) -> jax.Array:
    """obs (N, d) -> logits (N, 4, 3); country i uses its own network."""
    h = jnp.tanh(jnp.einsum("nd,ndh->nh", obs, params["w1"]) + params["b1"])
    return (jnp.einsum("nh,nho->no", h, params["w2"]) + params["b2"]).reshape(obs.shape[0], 4, LEVELS)


def rollout(env, env_params, params: dict, key: jax.Array) -> dict:
    """One episode (35 decisions) with Gumbel-max sampling from ``key``: the same key gives
    the same random numbers whatever the engine."""
    k_reset, k_steps = jax.random.split(key)
    obs, state = env.reset(k_reset, env_params)

    def step(carry, k):
        obs, state = carry
        k_act, k_env = jax.random.split(k)
        gumbel = jax.random.gumbel(k_act, (env.agents[GROUP], 4, LEVELS))
        action = jnp.argmax(logits(params, obs[GROUP]) + gumbel, axis=-1)
        new_obs, state, reward, *_ = env.step(k_env, state, {GROUP: action}, env_params)
        return (new_obs, state), (obs[GROUP], action, reward[GROUP])

    _, (observations, actions, rewards) = jax.lax.scan(step, (obs, state), jax.random.split(k_steps, 35))
    return {"obs": observations, "actions": actions, "rewards": rewards}


def reward_to_go(rewards: jax.Array) -> jax.Array:
    """(T, N) -> discounted reward-to-go (T, N)."""

    def back(carry, r):
        g = r + GAMMA * carry
        return g, g

    return jax.lax.scan(back, jnp.zeros(rewards.shape[1:]), rewards, reverse=True)[1]


def gradient_estimate(env, env_params, params: dict, keys: jax.Array) -> tuple[dict, jax.Array]:
    """The score-function estimate ĝ (a pytree like ``params``) and the mean return per country."""
    episodes = jax.vmap(lambda k: rollout(env, env_params, params, k))(keys)
    returns = jax.vmap(reward_to_go)(episodes["rewards"])  # (B, T, N)
    advantage = returns - returns.mean(axis=0)

    def objective(p):
        lg = jax.vmap(jax.vmap(lambda o: logits(p, o)))(episodes["obs"])  # (B, T, N, 4, 3)
        logp = jnp.take_along_axis(jax.nn.log_softmax(lg), episodes["actions"][..., None], axis=-1)[..., 0].sum(-1)
        return jnp.mean(jnp.sum(logp * jax.lax.stop_gradient(advantage), axis=(1, 2)))

    return jax.grad(objective)(params), returns[:, 0].mean(axis=0)


def flatten(tree: dict) -> np.ndarray:
    return np.concatenate([np.asarray(x, np.float64).ravel() for x in jax.tree_util.tree_leaves(tree)])


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def train_on_surrogate(env, env_params, params: dict, iterations: int, episodes: int, lr: float, seed: int) -> tuple[dict, list]:
    """Plain REINFORCE with Adam (ascent) on the surrogate engine."""
    tx = optax.adam(lr)
    opt = tx.init(params)

    def update(carry, key):
        params, opt = carry
        grad, ret = gradient_estimate(env, env_params, params, jax.random.split(key, episodes))
        updates, opt = tx.update(jax.tree_util.tree_map(lambda g: -g, grad), opt, params)
        return (optax.apply_updates(params, updates), opt), ret.mean()

    keys = jax.random.split(jax.random.PRNGKey(seed + 1), iterations)
    (params, _), curve = jax.jit(lambda p, o: jax.lax.scan(update, (p, o), keys))(params, opt)  # one program, no host syncs
    return params, np.asarray(curve).tolist()


def compare(scenario: str, args) -> dict:
    surrogate, p_sur = make("climate-mitigation", scenario=scenario)
    cicero, p_cic = make("climate-mitigation", scenario=scenario, engine="cicero-jax")
    n, d = surrogate.agents[GROUP], surrogate.observation_space(GROUP).shape[0]
    params = init_policy(jax.random.PRNGKey(args.seed), n, d, args.hidden)
    estimate_sur = jax.jit(lambda p, k: gradient_estimate(surrogate, p_sur, p, k))
    estimate_cic = jax.jit(lambda p, k: gradient_estimate(cicero, p_cic, p, k))
    start = time.perf_counter()
    trained, curve = train_on_surrogate(surrogate, p_sur, params, args.train_iterations, args.train_episodes, args.lr, args.seed)
    rows = {}
    for label, theta in (("random", params), ("trained on the surrogate", trained)):
        keys = jax.random.split(jax.random.PRNGKey(args.seed + 100), args.episodes)
        other = jax.random.split(jax.random.PRNGKey(args.seed + 200), args.episodes)
        g_sur, ret_sur = estimate_sur(theta, keys)
        g_cic, ret_cic = estimate_cic(theta, keys)
        g_sur2, _ = estimate_sur(theta, other)
        a, b, c = flatten(g_sur), flatten(g_cic), flatten(g_sur2)
        cos = cosine(a, b)
        rows[label] = {
            "cosine_surrogate_vs_cicero": cos,
            "one_minus_cosine": 1.0 - cos,
            "norm_ratio_surrogate_over_cicero": float(np.linalg.norm(a) / np.linalg.norm(b)),
            "cosine_noise_floor_two_surrogate_estimates": cosine(a, c),
            "mean_return_surrogate": float(np.mean(ret_sur)),
            "mean_return_cicero": float(np.mean(ret_cic)),
        }
        print(
            f"scenario {scenario}, {label}: 1 − cos(surrogate, CICERO) {rows[label]['one_minus_cosine']:.2e}, "
            f"|g_sur|/|g_cic| {rows[label]['norm_ratio_surrogate_over_cicero']:.4f}, noise floor cos "
            f"{rows[label]['cosine_noise_floor_two_surrogate_estimates']:.4f}; return {np.mean(ret_sur):.3f} vs {np.mean(ret_cic):.3f}",
            flush=True,
        )
    return {
        "scenario": scenario,
        "policies": rows,
        "training_curve_first_last": [curve[0], curve[-1]] if curve else [],
        "parameters": int(flatten(params).size),
        "seconds": time.perf_counter() - start,
    }


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", nargs="+", default=["i", "ii"], choices=["i", "ii"])
    p.add_argument("--episodes", type=int, default=1024, help="episodes per gradient estimate (B)")
    p.add_argument("--train-iterations", type=int, default=150, help="REINFORCE iterations on the surrogate for the trained policy")
    p.add_argument("--train-episodes", type=int, default=64)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS / "gradient_alignment.json")
    args = p.parse_args(argv)
    if min(args.episodes, args.train_episodes, args.hidden) < 2 or args.train_iterations < 0:
        p.error("--episodes, --train-episodes, --hidden must be >= 2 and --train-iterations >= 0")
    results = {
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "device": jax.devices()[0].device_kind,
        "scenarios": [compare(s, args) for s in args.scenarios],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out, json.dumps(results, indent=2) + "\n")
    print(f"wrote {args.out}")
    return results


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/gradient_alignment.py"))
