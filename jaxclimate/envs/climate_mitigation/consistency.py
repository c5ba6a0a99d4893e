"""Policy consistency (paper §3.4; docs/climate_mitigation.md §4): do policies trained on the surrogate see the same
climate as CICERO-SCM would have given them?

1. **Store** — :class:`EpisodeReservoir` rides along inside compiled IPPO training
   (``make_trainer(..., recorder=EpisodeReservoir(...))``) and keeps a uniform sample
   (reservoir sampling, Vitter's Algorithm R) of finished climate-mitigation episodes: global
   controllable emissions and surrogate temperatures for 2016..2065 (decisions + look-ahead).
2. **Replay** — :func:`replay_cicero` runs each trajectory through CICERO-SCM once from the
   1900..2015 SSP2-4.5 history (restart snapshot; bit-identical to stepping 50 times).
3. **Compare** — :func:`consistency_metrics`: RMSE and R² pooled over all episode-years, and
   Kendall's τ-b (and Spearman's ρ) between the per-episode discounted returns
   r_k = −Σ_t γ^t ΔT_k(t) (paper Eq. 44) and the authors' −Σ_t γ^t ΔT_k(t)⁴, γ = 0.999, t over
   the 50 years.

CLI: ``python -m jaxclimate.envs.climate_mitigation.consistency RUN_DIR [--n 1000] [--workers 2] [--engine cicero-jax]`` reads
``RUN_DIR/trajectories.npz`` (written by ``python -m jaxclimate.train``) and writes
``RUN_DIR/consistency.json``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate._cli import OneLineParser
from jaxclimate._io import atomic_write_text
from jaxclimate.climate import cicero
from jaxclimate.core import struct

YEARS = 50  # 2016..2065
FIRST_YEAR = 2016
GAMMA = 0.999


# --- 1. store -------------------------------------------------------------------------------


@struct.dataclass
class ReservoirState:
    emissions: jax.Array  # (capacity, 50, 5) stored episodes
    temperatures: jax.Array  # (capacity, 50)
    seen: jax.Array  # finished episodes offered so far (int32)
    current_emissions: jax.Array  # (num_envs, 35, 5) episodes in progress
    current_temperatures: jax.Array  # (num_envs, 35)


class EpisodeReservoir:
    """A bounded uniform sample of finished climate-mitigation episodes (see module doc).

    ``capacity`` episodes are kept; each finished episode replaces a random slot with
    probability capacity/seen, so the kept set is a uniform sample of all episodes."""

    def __init__(self, capacity: int, num_envs: int, horizon: int = 35, lookahead: int = 15):
        if capacity < 1 or num_envs < 1:
            raise ValueError(f"EpisodeReservoir needs capacity >= 1 and num_envs >= 1, got {capacity}, {num_envs}")
        self.capacity, self.num_envs, self.horizon, self.lookahead = int(capacity), int(num_envs), horizon, lookahead

    def init(self) -> ReservoirState:
        n = self.horizon + self.lookahead
        return ReservoirState(
            emissions=jnp.zeros((self.capacity, n, 5), jnp.float32),
            temperatures=jnp.zeros((self.capacity, n), jnp.float32),
            seen=jnp.zeros((), jnp.int32),
            current_emissions=jnp.zeros((self.num_envs, self.horizon, 5), jnp.float32),
            current_temperatures=jnp.zeros((self.num_envs, self.horizon), jnp.float32),
        )

    def update(self, state: ReservoirState, key: jax.Array, env_state: Any, info: dict, done: jax.Array) -> ReservoirState:
        """Record one vectorised env step (``env_state`` before the step, batched over envs)."""
        rows = jnp.arange(self.num_envs)
        t = jnp.clip(env_state.time, 0, self.horizon - 1)
        cur_e = state.current_emissions.at[rows, t].set(info["global_emissions"].astype(jnp.float32))
        cur_t = state.current_temperatures.at[rows, t].set(info["temperature"].astype(jnp.float32))
        episodes_e = jnp.concatenate([cur_e, info["lookahead_emissions"].astype(jnp.float32)], axis=1)
        episodes_t = jnp.concatenate([cur_t, info["lookahead_temperatures"].astype(jnp.float32)], axis=1)

        def offer(carry, x):  # Algorithm R, one finished episode at a time
            store_e, store_t, seen = carry
            finished, ep_e, ep_t, k = x
            seen_new = seen + finished.astype(jnp.int32)
            j = jax.random.randint(k, (), 0, jnp.maximum(seen_new, 1))
            slot = jnp.where(seen_new <= self.capacity, seen_new - 1, j)
            write = finished & (slot < self.capacity)
            slot = jnp.clip(slot, 0, self.capacity - 1)
            store_e = store_e.at[slot].set(jnp.where(write, ep_e, store_e[slot]))
            store_t = store_t.at[slot].set(jnp.where(write, ep_t, store_t[slot]))
            return (store_e, store_t, seen_new), None

        keys = jax.random.split(key, self.num_envs)
        (store_e, store_t, seen), _ = jax.lax.scan(offer, (state.emissions, state.temperatures, state.seen), (done, episodes_e, episodes_t, keys))
        return ReservoirState(store_e, store_t, seen, cur_e, cur_t)

    @staticmethod
    def contents(state: ReservoirState) -> tuple[np.ndarray, np.ndarray]:
        """The filled part of one reservoir (host arrays): emissions (k, 50, 5), temps (k, 50)."""
        k = int(min(int(state.seen), state.emissions.shape[0]))
        return np.asarray(state.emissions[:k]), np.asarray(state.temperatures[:k])


# --- 2. replay ------------------------------------------------------------------------------


def oracle_inputs(emissions: np.ndarray) -> np.ndarray:
    """Episode emissions (k, 50, 5) for 2016..2065 -> oracle inputs (k, 61, 5) for 2015..2075:
    2015 is the SSP2-4.5 value (the game's history), 2066..2075 continue at baseline growth
    (they cannot affect 2016..2065: the model is causal)."""
    emissions = np.asarray(emissions, np.float64)
    base = cicero.baseline_controllable()
    i2015 = 2015 - cicero.START_YEAR
    k = emissions.shape[0]
    out = np.empty((k, cicero.N_SCENARIO_YEARS, 5))
    out[:, 0] = base[i2015]
    out[:, 1 : 1 + YEARS] = emissions
    growth = base[i2015 + 1 + YEARS :] / base[i2015 + YEARS : -1]  # 2066..2075
    out[:, 1 + YEARS :] = np.maximum(emissions[:, -1:, :] * np.cumprod(growth, axis=0)[None], 0.0)
    return out


def replay_cicero(emissions: np.ndarray, workers: int = 1, engine: str = "oracle") -> np.ndarray:
    """CICERO-SCM temperatures (k, 50) for 2016..2065 of each episode: one oracle run each
    (``engine="oracle"``), or all episodes as one vectorised program of CICERO-SCM in JAX
    (``"cicero-jax"``, float64; the oracle's numbers to ≤ 1e-12 K, seconds for 1,000)."""
    if engine not in ("oracle", "cicero-jax"):
        raise ValueError(f"engine must be 'oracle' or 'cicero-jax', got {engine!r}")
    inputs = oracle_inputs(emissions)
    if engine == "cicero-jax":
        from jaxclimate.climate import cicero_jax

        T = cicero_jax.run_batch(inputs)
    elif workers > 1:
        with cicero.OraclePool(workers) as pool:
            T = pool.map(inputs)
    else:
        T = cicero.CiceroOracle().run_batch(inputs)
    i = FIRST_YEAR - cicero.START_YEAR
    return np.asarray(T)[:, i : i + YEARS]


# --- 3. compare -----------------------------------------------------------------------------


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's τ-b (ties in either variable corrected), O(n²) memory in blocks."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    n = x.size
    concordant = discordant = ties_x = ties_y = 0
    for start in range(0, n, 512):
        dx = np.sign(x[start : start + 512, None] - x[None, :])
        dy = np.sign(y[start : start + 512, None] - y[None, :])
        upper = np.arange(start, min(start + 512, n))[:, None] < np.arange(n)[None, :]
        prod = (dx * dy)[upper]
        concordant += int(np.sum(prod > 0))
        discordant += int(np.sum(prod < 0))
        ties_x += int(np.sum((dx[upper] == 0) & (dy[upper] != 0)))
        ties_y += int(np.sum((dy[upper] == 0) & (dx[upper] != 0)))
    denom = np.sqrt(float(concordant + discordant + ties_x) * float(concordant + discordant + ties_y))
    return float((concordant - discordant) / denom) if denom > 0 else float("nan")


def spearman_rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's ρ (average ranks for ties)."""

    def ranks(v):
        order = np.argsort(v, kind="stable")
        r = np.empty(v.size)
        r[order] = np.arange(v.size)
        sorted_v = np.sort(v)
        for value in np.unique(sorted_v[1:][np.diff(sorted_v) == 0]):  # average tied ranks
            r[v == value] = r[v == value].mean()
        return r

    return float(np.corrcoef(ranks(np.asarray(x)), ranks(np.asarray(y)))[0, 1])


def discounted_temperature_returns(T: np.ndarray, power: int = 1, gamma: float = GAMMA) -> np.ndarray:
    """r_k = −Σ_t γ^t ΔT_k(t)^power over the 50 years (power 1: paper Eq. 44; 4: authors)."""
    T = np.asarray(T, np.float64)
    return -np.sum(gamma ** np.arange(T.shape[1]) * T**power, axis=1)


def consistency_metrics(T_surrogate: np.ndarray, T_cicero: np.ndarray, gamma: float = GAMMA) -> dict[str, float]:
    """RMSE, R² (pooled), Kendall τ-b and Spearman ρ of discounted T and T⁴ returns."""
    a, b = np.asarray(T_surrogate, np.float64), np.asarray(T_cicero, np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"temperature arrays must both be (episodes, years), got {a.shape} and {b.shape}")
    residual = a - b
    out = {
        "episodes": int(a.shape[0]),
        "rmse_K": float(np.sqrt(np.mean(residual**2))),
        "r2": float(1.0 - np.sum(residual**2) / np.sum((b - b.mean()) ** 2)),
        "max_abs_error_K": float(np.max(np.abs(residual))),
    }
    for power, label in ((1, "T"), (4, "T4")):
        ra, rb = discounted_temperature_returns(a, power, gamma), discounted_temperature_returns(b, power, gamma)
        out[f"kendall_tau_{label}"] = kendall_tau_b(ra, rb)
        out[f"spearman_rho_{label}"] = spearman_rho(ra, rb)
    return out


def sample_episodes(stored: int, n: int | None = 1000, seed: int = 42) -> np.ndarray:
    """Sorted indices of ``n`` of ``stored`` episodes (all if fewer), drawn uniformly without
    replacement with ``default_rng(seed)``, as the authors."""
    if stored == 0:
        raise ValueError("no stored episodes to replay")
    n = stored if n is None else min(int(n), stored)
    return np.sort(np.random.default_rng(seed).choice(stored, n, replace=False))


def evaluate(emissions: np.ndarray, T_surrogate: np.ndarray, n: int | None = 1000, seed: int = 42, workers: int = 1, engine: str = "oracle") -> dict:
    """Replay a sample of the stored episodes (:func:`sample_episodes`) through CICERO-SCM and
    compare (see module doc)."""
    k = emissions.shape[0]
    idx = sample_episodes(k, n, seed)
    start = time.perf_counter()
    T_cicero = replay_cicero(emissions[idx], workers=workers, engine=engine)
    metrics = consistency_metrics(T_surrogate[idx], T_cicero)
    metrics["replay_seconds"] = time.perf_counter() - start
    metrics["stored_episodes"] = int(k)
    metrics["engine"] = engine
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m jaxclimate.envs.climate_mitigation.consistency", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a run directory with trajectories.npz (from python -m jaxclimate.train)")
    parser.add_argument("--n", type=int, default=1000, help="episodes to replay (default 1000; all if fewer stored)")
    parser.add_argument("--seed", type=int, default=42, help="sampling seed (default 42, the authors')")
    parser.add_argument("--workers", type=int, default=1, help="oracle worker processes (default 1)")
    parser.add_argument(
        "--engine",
        choices=["oracle", "cicero-jax"],
        default="oracle",
        help="replay with ciceroscm (default) or CICERO-SCM in JAX (same numbers, one vectorised program)",
    )
    args = parser.parse_args(argv)
    path = args.run_dir / "trajectories.npz"
    if not path.exists():
        parser.error(f"{path} not found: train with python -m jaxclimate.train (climate-mitigation) first")
    with np.load(path) as f:
        emissions, temperatures = f["emissions"], f["temperatures"]
    metrics = evaluate(emissions, temperatures, n=args.n, seed=args.seed, workers=args.workers, engine=args.engine)
    atomic_write_text(args.run_dir / "consistency.json", json.dumps(metrics, indent=2) + "\n")
    for key, value in metrics.items():
        print(f"{key:>20}: {value:.6g}" if isinstance(value, float) else f"{key:>20}: {value}")
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    sys.exit(guarded(main, "python -m jaxclimate.envs.climate_mitigation.consistency"))
