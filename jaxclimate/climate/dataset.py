"""Surrogate training data: scenarios -> CICERO-SCM temperatures, windows, splits.

Generate (resumable; a progress bar; chunks written atomically)::

    python -m jaxclimate.climate.dataset --scenarios 20000 --out data/cicero20k
    python -m jaxclimate.climate.dataset --scenarios 20000 --out data/cicero20k-jax --engine cicero-jax

``--engine oracle`` (default) runs the real CICERO-SCM in a process pool; ``cicero-jax`` runs
CICERO-SCM in JAX (:mod:`jaxclimate.climate.cicero_jax`, float64, the oracle's numbers to
≤ 1e-12 K) as one vectorised program per chunk — seconds instead of a quarter of an hour.

Scenario k uses the authors' random stream ``numpy.random.default_rng(k)`` (see
``scenarios.numpy_scenario``), so any subset is reproducible on its own and an interrupted run
resumes exactly where it stopped: completed chunks are kept, the partial one is redone, and
nothing is lost or duplicated. ``manifest.json`` records the configuration; resuming with a
different configuration is an error.

Samples (paper §3.2): for scenario s and target year t = 2015..2075 the input is the
controllable emissions of the W = 65 preceding years plus year t itself, (66, 5), and the
target is the raw ``dT_glob_air``(t). Splits are by scenario (70/15/15, seeded permutation);
inputs are z-scored per gas with statistics of the training windows (σ + 1e-6).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from jaxclimate._cli import OneLineParser
from jaxclimate._io import atomic_savez, atomic_write_text
from jaxclimate.climate import cicero, scenarios

WINDOW = 65
FIRST_TARGET_INDEX = cicero.SCENARIO_START - cicero.START_YEAR  # 115: year 2015
N_TARGETS = cicero.N_SCENARIO_YEARS  # 61
MANIFEST = "manifest.json"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class GeneratorConfig:
    bounds: tuple[float, float] = scenarios.BOUNDS
    alpha: float = scenarios.ALPHA
    smoothing: str = "log1p"
    chunk_size: int = 250

    def to_json(self) -> dict:
        return {**asdict(self), "bounds": list(self.bounds)}


def _chunk_path(out: Path, index: int) -> Path:
    return out / f"chunk_{index:05d}.npz"


def _write_manifest(out: Path, num_scenarios: int, config: GeneratorConfig, engine: str = "oracle", first_seed: int = 0) -> None:
    manifest = {
        "format_version": FORMAT_VERSION,
        "num_scenarios": num_scenarios,
        "seeds": f"{first_seed}..{first_seed + num_scenarios - 1}",
        **({"first_seed": first_seed} if first_seed else {}),  # absent for the paper's seeds 0..S-1
        "generator": config.to_json(),
        "oracle": {
            "package": "ciceroscm",
            "version": _ciceroscm_version(),
            "run_config": cicero.RUN_CONFIG,
            "pamset_udm": cicero.PAMSET_UDM,
            "pamset_emiconc": cicero.PAMSET_EMICONC,
            "output": "dT_glob_air (K, raw, 1900..2075)",
            **({"engine": "jaxclimate.climate.cicero_jax (float64)"} if engine == "cicero-jax" else {}),
        },
        "arrays": {"seeds": "(n,) int64", "emissions": "(n, 61, 5) float64, 2015..2075", "dT": "(n, 176) float64"},
    }
    path = out / MANIFEST
    if path.exists():
        existing = json.loads(path.read_text())
        if existing != manifest:
            raise ValueError(
                f"{path} describes a different dataset (num_scenarios/generator/oracle differ); use a new --out folder or the same options to resume"
            )
        return
    atomic_write_text(path, json.dumps(manifest, indent=2) + "\n")


def _ciceroscm_version() -> str:
    try:
        from importlib.metadata import version

        return version("ciceroscm")
    except Exception:  # pragma: no cover - version metadata missing
        return "unknown"


def generate_dataset(
    out: str | Path,
    num_scenarios: int,
    *,
    workers: int | None = None,
    config: GeneratorConfig = GeneratorConfig(),
    progress: bool = True,
    max_chunks: int | None = None,
    engine: str = "oracle",
    first_seed: int = 0,
) -> Path:
    """Generate (or resume) ``num_scenarios`` scenarios into ``out``; returns ``out``.
    ``engine``: ``"oracle"`` (ciceroscm) or ``"cicero-jax"`` (the JAX port, float64).
    ``first_seed``: scenario seeds ``first_seed..first_seed + num_scenarios - 1``; from
    ``num_scenarios`` of the paper's dataset on, fresh scenarios of the same generator that share
    none of its validation or test scenarios (more training data, ``fit --more-scenarios``).

    ``max_chunks`` stops after that many new chunks (for tests and time-boxed runs)."""
    if num_scenarios < 1:
        raise ValueError(f"num_scenarios must be >= 1, got {num_scenarios}")
    if config.chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {config.chunk_size}")
    if engine not in ("oracle", "cicero-jax"):
        raise ValueError(f"engine must be 'oracle' or 'cicero-jax', got {engine!r}")
    if first_seed < 0:
        raise ValueError(f"first_seed must be >= 0, got {first_seed}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _write_manifest(out, num_scenarios, config, engine, first_seed)
    n_chunks = -(-num_scenarios // config.chunk_size)
    missing = [i for i in range(n_chunks) if not _chunk_path(out, i).exists()]
    chunk_len = lambda i: min(config.chunk_size, num_scenarios - i * config.chunk_size)  # noqa: E731
    bar = _progress_bar(num_scenarios, num_scenarios - sum(chunk_len(i) for i in missing), progress)
    todo = missing if max_chunks is None else missing[:max_chunks]
    if not todo:
        bar.close()
        return out
    jax_engine = engine == "cicero-jax"
    pool = cicero.OraclePool(workers) if not jax_engine and (workers is None or workers > 1) else None
    oracle = None if pool is not None or jax_engine else cicero.CiceroOracle()
    try:
        for index in todo:
            seeds = first_seed + np.arange(index * config.chunk_size, min((index + 1) * config.chunk_size, num_scenarios))
            emissions = np.stack([scenarios.numpy_scenario(s, tuple(config.bounds), config.alpha, config.smoothing) for s in seeds])
            if jax_engine:
                from jaxclimate.climate import cicero_jax

                dT = cicero_jax.run_batch(emissions)
                bar.update(len(seeds))
            elif pool is not None:
                temps = []
                for t in pool.imap(emissions):
                    temps.append(t)
                    bar.update(1)
                dT = np.stack(temps)
            else:
                dT = np.stack([oracle.run(e) for e in emissions])
                bar.update(len(seeds))
            atomic_savez(_chunk_path(out, index), seeds=seeds, emissions=emissions, dT=dT)
    finally:
        bar.close()
        if pool is not None:
            pool.close()
    return out


def _progress_bar(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit="scenario", desc="CICERO-SCM", disable=not enabled, smoothing=0.05)


def load_dataset(path: str | Path) -> dict[str, np.ndarray]:
    """All completed chunks, ordered by seed: ``seeds`` (n,), ``emissions`` (n, 61, 5),
    ``dT`` (n, 176). Raises if the dataset is incomplete."""
    path = Path(path)
    manifest = json.loads((path / MANIFEST).read_text())
    chunks = sorted(path.glob("chunk_*.npz"))
    parts = [dict(np.load(c)) for c in chunks]
    if not parts:
        raise ValueError(f"{path} holds no completed chunks")
    data = {k: np.concatenate([p[k] for p in parts]) for k in ("seeds", "emissions", "dT")}
    order = np.argsort(data["seeds"])
    data = {k: v[order] for k, v in data.items()}
    n, first = manifest["num_scenarios"], manifest.get("first_seed", 0)
    if len(data["seeds"]) != n or not np.array_equal(data["seeds"], first + np.arange(n)):
        raise ValueError(f"{path} is incomplete: {len(data['seeds'])} of {n} scenarios; run the generator again to resume")
    data["manifest"] = manifest
    return data


# --- windowing and splits -------------------------------------------------------------------------


def window_indices(window: int = WINDOW) -> np.ndarray:
    """(61, window+1) year indices (0 = 1900) of each target's input rows: t−window..t."""
    targets = FIRST_TARGET_INDEX + np.arange(N_TARGETS)
    return targets[:, None] + np.arange(-window, 1)[None, :]


def make_windows(emissions_2015_2075: np.ndarray, dT: np.ndarray, window: int = WINDOW) -> tuple[np.ndarray, np.ndarray]:
    """Dense samples: X (n·61, window+1, 5) float32 and y (n·61,) float32."""
    full = scenarios.full_history(emissions_2015_2075)  # (n, 176, 5)
    idx = window_indices(window)
    X = full[:, idx]  # (n, 61, W+1, 5)
    y = dT[:, FIRST_TARGET_INDEX : FIRST_TARGET_INDEX + N_TARGETS]
    return X.reshape(-1, window + 1, 5).astype(np.float32), y.reshape(-1).astype(np.float32)


def split_scenarios(num_scenarios: int, seed: int = 0, fractions=(0.70, 0.15, 0.15)) -> dict[str, np.ndarray]:
    """Seeded scenario-level permutation split into train/val/test (paper: 70/15/15)."""
    if not np.isclose(sum(fractions), 1.0) or min(fractions) < 0:
        raise ValueError(f"fractions must be non-negative and sum to 1, got {fractions}")
    perm = np.random.default_rng(seed).permutation(num_scenarios)
    n_test = int(round(fractions[2] * num_scenarios))
    n_val = int(round(fractions[1] * num_scenarios))
    test, val, train = perm[:n_test], perm[n_test : n_test + n_val], perm[n_test + n_val :]
    return {"train": np.sort(train), "val": np.sort(val), "test": np.sort(test)}


def normalisation_stats(emissions_2015_2075: np.ndarray, train: np.ndarray, window: int = WINDOW):
    """Per-gas μ and σ (+1e-6) over all rows of all training windows (paper §3.2)."""
    full = scenarios.full_history(emissions_2015_2075[train])
    rows = full[:, window_indices(window)].reshape(-1, 5)
    return rows.mean(axis=0), rows.std(axis=0) + 1e-6


def main(argv=None) -> int:
    p = OneLineParser(prog="python -m jaxclimate.climate.dataset", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", type=int, default=20000, help="number of scenarios S (seeds 0..S-1)")
    p.add_argument("--first-seed", type=int, default=0, help="seeds FIRST..FIRST+S-1 (e.g. 20000: fresh scenarios beside the paper's 20,000)")
    p.add_argument("--out", type=Path, required=True, help="output folder (created; resumed if it exists)")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: all cores)")
    p.add_argument("--chunk-size", type=int, default=250, help="scenarios per saved chunk")
    p.add_argument("--alpha", type=float, default=scenarios.ALPHA, help="smoothing α")
    p.add_argument("--bounds", type=float, nargs=2, default=list(scenarios.BOUNDS), help="multiplier bounds")
    p.add_argument("--smoothing", choices=["log1p", "geometric"], default="log1p")
    p.add_argument(
        "--engine",
        choices=["oracle", "cicero-jax"],
        default="oracle",
        help="oracle: ciceroscm in worker processes; cicero-jax: CICERO-SCM in JAX (float64, one program per chunk)",
    )
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    config = GeneratorConfig(tuple(args.bounds), args.alpha, args.smoothing, args.chunk_size)
    start = time.perf_counter()
    try:
        generate_dataset(
            args.out,
            args.scenarios,
            workers=args.workers,
            config=config,
            progress=not args.no_progress,
            engine=args.engine,
            first_seed=args.first_seed,
        )
    except KeyboardInterrupt:
        print(f"\ninterrupted: completed chunks are kept in {args.out}; run the same command to resume", file=sys.stderr)
        return 130
    except (ValueError, ImportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{args.scenarios} scenarios in {args.out} ({time.perf_counter() - start:.1f} s this run)")
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    sys.exit(guarded(main, "python -m jaxclimate.climate.dataset"))
