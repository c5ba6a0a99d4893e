"""The ceiling of IPPO training at the climate game's paper settings: the update alone.

    python benchmarks/bench_ippo_update_ceiling.py            # LSTM 64, 10 learners, 16 envs, 4 × 4 minibatches

One IPPO update at the paper's scenario-(ii) settings runs 4 epochs × 4 minibatches = 16
dependent SGD steps, each back-propagating through 35 LSTM steps for 10 independent learners
(vmapped) with 16 / 4 = 4 envs each. This times exactly that chain — forward, backward and
Adam of the same ActorCritic, on synthetic observations, as one ``lax.scan`` under ``jit`` —
without the environment or the rollout, so ``16 envs × 35 steps / time`` is an upper bound on
env-steps/s including updates for one seed on this device, however fast the environment.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402

from benchmarks.harness import save_results, time_compiled  # noqa: E402
from jaxclimate.algos.networks import ActorCritic, initial_carry  # noqa: E402


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--learners", type=int, default=10)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--num-steps", type=int, default=35)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatches", type=int, default=4)
    p.add_argument("--obs", type=int, default=112, help="observation size (scenario ii: 112)")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if args.num_envs % args.minibatches:
        p.error("--minibatches must divide --num-envs")
    L, T, E, H = args.learners, args.num_steps, args.num_envs // args.minibatches, args.hidden
    net = ActorCritic(num_outputs=12, network="lstm", hidden_size=H)  # scenario ii: 4 levers × 3 levels
    params = jax.vmap(lambda k: net.init(k, initial_carry("lstm", H, E), jnp.zeros((T, E, args.obs)), jnp.zeros((T, E), bool)))(
        jax.random.split(jax.random.PRNGKey(0), L)
    )
    optimizer = optax.adam(1e-3)
    opt_state = jax.vmap(optimizer.init)(params)
    obs = jax.random.normal(jax.random.PRNGKey(1), (L, T, E, args.obs))
    resets = jnp.zeros((L, T, E), bool)

    def loss(p, x, r):
        _, logits, _, value = net.apply(p, initial_carry("lstm", H, E), x, r)
        return jnp.mean(jax.nn.log_softmax(logits) ** 2) + jnp.mean(value**2)

    def sgd_step(carry, _):
        p, s = carry
        grads = jax.vmap(jax.grad(loss))(p, obs, resets)
        updates, s = jax.vmap(optimizer.update)(grads, s, p)
        return (optax.apply_updates(p, updates), s), None

    steps = args.epochs * args.minibatches
    timing = time_compiled(lambda p, s: jax.lax.scan(sgd_step, (p, s), None, steps)[0], params, opt_state, repeats=args.repeats)
    ceiling = args.num_envs * T / timing["median_s"]
    print(
        f"{steps} minibatch steps ({L} learners × {E} envs × {T} LSTM steps each): {timing['median_s'] * 1e3:.1f} ms "
        f"per update → at most {ceiling:,.0f} env-steps/s including updates per seed (compile {timing['compile_s']:.1f} s)"
    )
    payload = {
        "config": vars(args) | {"out": str(args.out)},
        "update_s": timing["median_s"],
        "runs_s": timing["runs_s"],
        "compile_s": timing["compile_s"],
        "env_steps_per_s_ceiling": ceiling,
    }
    print(f"wrote {save_results('bench_ippo_update_ceiling', payload, args.out)}")
    return payload


if __name__ == "__main__":
    main()
