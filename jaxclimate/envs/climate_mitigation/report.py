"""How ``python -m jaxclimate.train`` presents the climate-mitigation game: the paper's IPPO
settings, the reservoir of training episodes for the policy-consistency replay, the learned
levers and the temperature path of the learned policy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate._io import atomic_savez
from jaxclimate.reporting import TrainingReport
from jaxclimate.run_options import RunOptions

LEVERS = ("energy", "methane", "agriculture", "adaptation")

#: Recurrent IPPO with one LSTM per country (the paper's setting), ~1 min on 2 CPU cores.
IPPO_PAPER = dict(
    total_timesteps=120_000,
    num_envs=16,
    num_steps=35,
    network="lstm",
    hidden_size=64,
    lr=1e-3,
    gamma=0.999,
    gae_lambda=0.95,
    ent_coef=0.01,
    update_epochs=4,
    num_minibatches=4,
)


#: Why a mitigating policy can run warmer than doing nothing for decades. Checked with CICERO-SCM
#: in JAX on SSP2-4.5 emissions: cutting fossil CO2 and SO2 together by 0 -> 80 % over 2016-2065
#: is 0.06 K warmer than no action in 2040 and 0.03 K cooler only by 2060; CO2 alone is 0.06 K
#: cooler in 2040.
AEROSOL_CAPTION = (
    "The energy lever cuts fossil CO2 and SO2 alike; SO2's aerosols cool, so cutting both can run warmer than no "
    "action for decades (aerosol unmasking) before the CO2 cut wins. Grey: the 15-year look-ahead at baseline growth."
)


class ClimateMitigationReport(TrainingReport):
    def presets(self, env, algo: str) -> dict[str, dict[str, Any]]:
        return {"paper": dict(IPPO_PAPER)} if algo == "ippo" else {}

    def recorder(self, env, config, options: RunOptions) -> Any:
        from jaxclimate.envs.climate_mitigation.consistency import EpisodeReservoir

        size = options.reservoir
        return EpisodeReservoir(size, config.num_envs) if size > 0 and hasattr(config, "num_envs") else None

    def summarize(self, env, env_params, trainer, state, rows, evaluations, options: RunOptions, run_dir: Path) -> dict[str, Any]:
        actions = np.stack([e["actions"]["countries"] for e in evaluations])  # (seeds, 35, N, 4)
        efforts = self.lever_values(actions, env_params)
        temperatures = [policy_temperatures(e) for e in evaluations]
        summary: dict[str, Any] = {
            "mean_levers": {lever: efforts[..., i].mean(axis=(0, 1)).tolist() for i, lever in enumerate(LEVERS)},
            "policy_temperature_2050": float(np.mean([t[34] for t in temperatures])),
            "policy_temperature_2065": float(np.mean([t[-1] for t in temperatures])),
            "policy_temperatures": [t.tolist() for t in temperatures],
            "bau_temperatures": bau_temperatures(self.game(env), env_params).tolist(),
        }
        summary["bau_temperature_2065"] = summary["bau_temperatures"][-1]
        if getattr(state, "recorder", None) is not None:
            from jaxclimate.envs.climate_mitigation.consistency import EpisodeReservoir

            stores = [EpisodeReservoir.contents(jax.tree_util.tree_map(lambda x: x[s], state.recorder)) for s in range(options.seeds)]
            atomic_savez(
                run_dir / "trajectories.npz",
                emissions=np.concatenate([e for e, _ in stores]),
                temperatures=np.concatenate([t for _, t in stores]),
                first_year=np.asarray(2016),
            )
            summary["stored_episodes"] = int(sum(len(e) for e, _ in stores))
        return summary

    def lever_values(self, actions: np.ndarray, env_params) -> np.ndarray:
        """The levers' values (efforts 0–1, adaptation spending) of the game's level indices."""
        efforts, adaptation = np.asarray(env_params.effort_levels), np.asarray(env_params.adaptation_levels)
        return np.concatenate([efforts[actions[..., :3]], adaptation[actions[..., 3:]]], axis=-1)

    def game(self, env):
        """The game itself (its no-action episode is the baseline of the temperature plot)."""
        return env

    def summary_lines(self, summary: dict) -> list[str]:
        lines = [f"\nlearned lever levels (mean over the episode and seeds)\n{'agent':<12}" + "".join(f"{lever:>13}" for lever in LEVERS)]
        levers = summary["mean_levers"]
        for i in range(len(levers["energy"])):  # named as the returns table and the interfaces name them
            lines.append(f"{f'countries_{i}':<12}" + "".join(f"{levers[lever][i]:>13.3f}" for lever in LEVERS))
        lines.append(
            f"\nlearned policy: ΔT 2050 {summary['policy_temperature_2050']:.3f} K, 2065 "
            f"{summary['policy_temperature_2065']:.3f} K (no action: {summary['bau_temperature_2065']:.3f} K in 2065)"
        )
        return lines

    def plot(self, env, rows, summary, evaluations, run_dir: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        levers = summary["mean_levers"]
        n = len(levers["energy"])
        fig, ax = plt.subplots(figsize=(7, 4))
        width = 0.8 / len(LEVERS)
        for j, lever in enumerate(LEVERS):
            ax.bar(np.arange(n) + j * width, levers[lever], width, label=lever)
        ax.set(xlabel="country", ylabel="mean level (effort 0–1; adaptation spending)", title="learned policy: mean lever levels")
        ax.set_xticks(np.arange(n) + 0.4 - width / 2, [f"countries_{i}" for i in range(n)], fontsize=7)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(run_dir / "levers.png", dpi=120)
        plt.close(fig)
        bau = np.asarray(summary["bau_temperatures"])
        years = np.arange(2016, 2016 + len(bau))
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot(years, bau, "k--", label="no action (SSP2-4.5 growth)")
        for s, temps in enumerate(summary["policy_temperatures"]):
            ax.plot(years[: len(temps)], temps, label=f"learned policy, seed {s}")
        ax.axvspan(2050.5, years[-1], color="grey", alpha=0.15, label="look-ahead")
        ax.set(xlabel="year", ylabel="ΔT (K)", title="temperature under the learned policy (surrogate engine)")
        ax.legend(fontsize=8)
        fig.text(0.01, 0.01, AEROSOL_CAPTION, fontsize=6.5, color="0.35", wrap=True)
        fig.tight_layout(rect=(0, 0.09, 1, 1))
        fig.savefig(run_dir / "temperature.png", dpi=120)
        plt.close(fig)


def policy_temperatures(evaluation: dict) -> np.ndarray:
    """Temperatures 2016..2065 of an evaluation episode: the 35 decision years and the
    look-ahead reported at the last step."""
    info = evaluation["info"]
    return np.concatenate([info["temperature"], info["lookahead_temperatures"][-1]])


def bau_temperatures(env, env_params) -> np.ndarray:
    """Temperatures 2016..2065 when nobody acts (all levers at level 0): the episode as one
    compiled ``lax.scan``, cut on the host after its terminal step."""
    zeros = {g: jnp.zeros((n, 4), jnp.int32) for g, n in env.agents.items()}
    steps = int(np.max(np.asarray(env_params.max_steps)))

    def episode(params):
        _, state = env.reset(jax.random.PRNGKey(0), params)

        def body(state, _):
            _, state, _, terminated, _, info = env.step(jax.random.PRNGKey(0), state, zeros, params)
            return state, (info["temperature"], info["lookahead_temperatures"], terminated)

        return jax.lax.scan(body, state, None, length=steps)[1]

    temperatures, lookahead, terminated = jax.device_get(jax.jit(episode)(env_params))
    ended = np.flatnonzero(terminated)
    if not ended.size:
        raise ValueError(f"the no-action episode did not terminate within max_steps={steps}")
    end = int(ended[0])
    return np.concatenate([temperatures[: end + 1], lookahead[end]])


class ClimateMitigationLeversReport(ClimateMitigationReport):
    """``climate-mitigation-levers``, the game's continuous relaxation: the same levers and
    temperatures, its actions already the levers' values; no IPPO preset of the paper's."""

    def presets(self, env, algo: str) -> dict[str, dict[str, Any]]:
        return {}

    def recorder(self, env, config, options: RunOptions) -> Any:
        return None  # the consistency replay reads the discrete game's runs

    def lever_values(self, actions: np.ndarray, env_params) -> np.ndarray:
        return np.asarray(actions, float)

    def game(self, env):
        return env.base
