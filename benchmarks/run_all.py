"""Every environment's benchmark and training-throughput measurement in one go.

    python -m benchmarks                          # the full suite (CPU: ~20 min on 2 cores)
    python -m benchmarks --quick                  # a smoke run (CI): tiny batches, one repeat, into results/quick/
    python -m benchmarks --envs 1 256 4096 65536  # a GPU: up to 65,536 parallel envs
    python -m benchmarks --reuse ebm              # the ebm rows from its saved JSON, the rest measured
    JAXCLIMATE_JICE=PATH JAXCLIMATE_PAX=PATH python -m benchmarks   # RICE-N's JAX peers timed beside ours

Runs ``bench_ebm``, ``bench_climate_mitigation``, ``bench_rice_n``, ``bench_invest_esg`` and
``bench_fedrain`` (each still writes its own JSON), then writes one record of the whole:
``suite-<backend>.json`` (every row: environment, variant, parallel envs, env-steps/s,
median and spread over the timed runs, compile time; the device kind and count, jax
version), ``suite-<backend>.md`` (the tables the README quotes) and ``suite-<backend>.png``
(env-steps/s against parallel envs, log–log, one panel per environment, each reference
implementation's speed as a dashed line).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):  # run as a script: python benchmarks/run_all.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jaxclimate._xla import use_cpu_safe_xla_flags  # noqa: E402

use_cpu_safe_xla_flags()

import jax  # noqa: E402

from benchmarks.harness import RESULTS_DIR, device_info  # noqa: E402
from jaxclimate._io import atomic_write_text  # noqa: E402

DEFAULT_ENVS = [1, 16, 256, 1024, 4096]


def _spread(rate: float, median_s: float, runs_s: list[float] | None) -> list[float] | None:
    """[slowest, fastest] env-steps/s over the timed runs (the rate's work over each run's time)."""
    if not runs_s:
        return None
    work = rate * median_s
    return [work / max(runs_s), work / min(runs_s)]


def _row(
    env: str, variant: str, n_envs: int, rate: float, median_s: float, compile_s: float, runs_s: list[float] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "env": env,
        "variant": variant,
        "n_envs": n_envs,
        "env_steps_per_s": rate,
        "median_s": median_s,
        "spread_env_steps_per_s": _spread(rate, median_s, runs_s),
        "compile_s": compile_s,
        **extra,
    }


# --- per benchmark: its module, its arguments, the file it saves, and its payload as suite rows ---------


def _ebm_argv(envs, quick):
    return ["--envs", *map(str, envs)] + (["--steps", "20", "--repeats", "1", "--no-reference"] if quick else [])


def _ebm_rows(p):
    rows = [_row("ebm-v1", p["dtype"], r["n_envs"], r["env_steps_per_s"], r["median_s"], r["compile_s"], r.get("runs_s")) for r in p["jaxclimate"]]
    ref = p.get("reference")
    refs = [{"env": "ebm-v1", "name": f"climlab {ref['climlab_version']} (measured here)", "env_steps_per_s": 1.0 / ref["env_step_s"]}] if ref else []
    return rows, refs, []


def _climate_argv(envs, quick):
    return ["--envs", *map(str, envs)] + (
        [
            "--steps",
            "35",
            "--repeats",
            "1",
            "--no-cicero",
            "--no-full-window-row",
            "--train-steps",
            "140",
            "--train-envs",
            "4",
            "--train-engines",
            "gru",
        ]
        if quick
        else []
    )


def _climate_rows(p):
    # the CICERO-SCM oracle engine (pure_callback) is the reference, timed at one batch size
    engine_rows = [r for r in p["rows"] if "full window" not in r["engine"] and "compile_s" in r]
    rows = [
        _row("climate-mitigation", r["engine"], r["n_envs"], r["env_steps_per_s"], r["median_s"], r["compile_s"], r.get("runs_s"))
        for r in engine_rows
    ]
    ref = p.get("reference")
    refs = [{"env": "climate-mitigation", "name": f"{ref['engine']} (measured here)", "env_steps_per_s": ref["env_steps_per_s"]}] if ref else []
    training = [
        {
            "env": "climate-mitigation",
            "what": f"{t['what']}, {t['engine']}",
            "env_steps_per_s": t["env_steps_per_s"],
            "compile_s": t["compile_s"],
            "median_s": t["median_s"],
        }
        for t in p.get("training", [])
    ]
    return rows, refs, training


def _rice_argv(envs, quick):
    return ["--envs", *map(str, envs), "--variants", "step + mask"] + (
        ["--protocols", "none", "--repeats", "1"] if quick else ["--protocols", "none", "bilateral"]
    )


def _rice_rows(p):
    from benchmarks import bench_rice_n

    rows = [
        _row("rice-n", f"{r['protocol']}, {r['what']}", r["n_envs"], r["env_steps_per_s"], r["median_s"], r["compile_s"], r.get("runs_s"))
        for r in p["rows"]
    ]
    # the JAX peers, where a checkout was given ($JAXCLIMATE_JICE, $JAXCLIMATE_PAX): timed in the same run
    rows += [
        _row(
            "rice-n",
            f"{peer} ({r['regions']} regions), its own step",
            r["n_envs"],
            r["env_steps_per_s"],
            r["median_s"],
            r["compile_s"],
            r.get("runs_s"),
        )
        for peer in ("jice", "pax")
        for r in p.get(peer, {}).get("rows", [])
    ]
    refs = [
        {"env": "rice-n", "name": f"original NumPy RICE-N, {k} (docs/rice_n.md §16)", "env_steps_per_s": v}
        for k, v in bench_rice_n.ORIGINAL_ENV_STEPS_PER_S.items()
    ]
    return rows, refs, []


def _invest_argv(envs, quick):
    return ["--envs", *map(str, envs), "--markets", "exp_default"] + (
        ["--repeats", "1", "--train-updates", "1", "--seeds", "1", "--presets", "paper_sb3", "--hidden", "8"] if quick else []
    )


def _invest_rows(p):
    from benchmarks import bench_invest_esg

    rows = [
        _row("invest-esg", r["market"], r["envs"], r["env_steps_per_s"], r["median_s"], r["compile_s"], r.get("runs_s"))
        for r in p["env_rows"]
        if "fresh" not in r["market"]
    ]
    refs = [
        {
            "env": "invest-esg",
            "name": "original NumPy InvestESG, exp_default (docs/invest_esg.md)",
            "env_steps_per_s": bench_invest_esg.NUMPY_ENV["exp_default"],
        }
    ]
    training = [
        {
            "env": "invest-esg",
            "what": f"IPPO {t['preset']}, {t['seeds']} seeds",
            "env_steps_per_s": t["env_steps_per_s"],
            "compile_s": t["compile_s"],
            "median_s": t["median_s"],
        }
        for t in p["training_rows"]
    ]
    return rows, refs, training


def _fedrain_argv(envs, quick):
    return (
        ["--envs", "ebm-v3-a2", "--seeds", "1", "--steps", "200", "--repeats", "1", "--hidden", "8"]
        if quick
        else ["--envs", "ebm-v1", "ebm-v3-a6", "--seeds", "1", "10", "--steps", "400", "--repeats", "3"]
    )


def _fedrain_rows(p):
    training = [
        {
            "env": r["env"],
            "what": f"federated DDPG, {r['agents']} agent(s) × {r['seeds']} seed(s), agent-steps/s",
            "env_steps_per_s": r["agent_steps_per_s"],
            "compile_s": r["compile_s"],
            "median_s": r["median_s"],
        }
        for r in p["rows"]
    ]
    return [], [], training


# name: (module, saved file stem, argv(envs, quick), rows(payload))
BENCHMARKS: dict[str, tuple[str, str, Callable, Callable]] = {
    "ebm": ("bench_ebm", "bench_ebm-float32", _ebm_argv, _ebm_rows),
    "climate-mitigation": ("bench_climate_mitigation", "bench_climate_mitigation", _climate_argv, _climate_rows),
    "rice-n": ("bench_rice_n", "bench_rice_n", _rice_argv, _rice_rows),
    "invest-esg": ("bench_invest_esg", "bench_invest_esg", _invest_argv, _invest_rows),
    "fedrain": ("bench_fedrain", "bench_fedrain", _fedrain_argv, _fedrain_rows),
}


def run_benchmark(name: str, envs: list[int], quick: bool, out: Path, reuse: bool) -> tuple[list, list, list]:
    """Run one benchmark (or, with ``reuse``, read the JSON it saved in ``out``) as suite rows."""
    import importlib

    module, stem, argv, rows = BENCHMARKS[name]
    saved = out / f"{stem}-{jax.default_backend()}.json"
    if reuse and saved.exists():
        print(f"(reusing {saved})")
        return rows(json.loads(saved.read_text()))
    return rows(importlib.import_module(f"benchmarks.{module}").main(argv(envs, quick) + ["--out", str(out)]))


# --- the record, the table, the plot --------------------------------------------------------------------


def markdown(record: dict) -> str:
    d = record["device"]
    lines = [
        f"Device: {d['device_count']} × {d['device_kind']} ({d['backend']}), jax {d['jax_version']}, "
        f"{'quick smoke run' if record['quick'] else 'full suite'}, {record['wall_s']:.0f} s in all"
        + (f" (rows of {', '.join(record['reused'])} read from their saved JSON)" if record.get("reused") else "")
        + ".",
        "",
        "| environment | variant | parallel envs | env-steps/s (median) | spread over runs | compile s |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for r in record["rows"]:
        spread = r["spread_env_steps_per_s"]
        spread_text = f"{spread[0]:,.0f}–{spread[1]:,.0f}" if spread else "—"
        lines.append(f"| {r['env']} | {r['variant']} | {r['n_envs']:,} | {r['env_steps_per_s']:,.0f} | {spread_text} | {r['compile_s']:.1f} |")
    if record["references"]:
        lines += ["", "| environment | reference | env-steps/s |", "|---|---|---:|"]
        lines += [f"| {r['env']} | {r['name']} | {r['env_steps_per_s']:,.1f} |" for r in record["references"]]
    if record["training"]:
        lines += ["", "| training | what | steps/s incl. updates | compile s |", "|---|---|---:|---:|"]
        lines += [f"| {t['env']} | {t['what']} | {t['env_steps_per_s']:,.0f} | {t['compile_s']:.1f} |" for t in record["training"]]
    return "\n".join(lines)


def plot(record: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = list(dict.fromkeys(r["env"] for r in record["rows"]))
    if not envs:
        return
    fig, axes = plt.subplots(1, len(envs), figsize=(4.2 * len(envs), 3.8), squeeze=False)
    for ax, env in zip(axes[0], envs):
        rows = [r for r in record["rows"] if r["env"] == env]
        for variant in dict.fromkeys(r["variant"] for r in rows):
            pts = sorted((r["n_envs"], r["env_steps_per_s"]) for r in rows if r["variant"] == variant)
            ax.plot(*zip(*pts), marker="o", label=variant)
        for ref in (r for r in record["references"] if r["env"] == env):
            ax.axhline(ref["env_steps_per_s"], ls="--", color="gray")
            ax.annotate(ref["name"], (0.02, ref["env_steps_per_s"]), xycoords=("axes fraction", "data"), fontsize=6, va="bottom", color="gray")
        ax.set(xscale="log", yscale="log", xlabel="parallel envs", ylabel="env-steps/s", title=env)
        ax.legend(fontsize=6)
    d = record["device"]
    fig.suptitle(f"jaxclimate, {d['device_count']} × {d['device_kind']}, jax {d['jax_version']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("--quick", action="store_true", help="smoke run: parallel envs 1 and 2, one repeat, tiny training")
    p.add_argument("--envs", type=int, nargs="+", help=f"parallel env counts (default {DEFAULT_ENVS}; --quick: 1 2)")
    p.add_argument("--only", nargs="+", choices=list(BENCHMARKS), help="run only these benchmarks")
    p.add_argument(
        "--reuse", nargs="+", choices=list(BENCHMARKS), default=[], help="read these benchmarks' saved JSON in --out instead of running them again"
    )
    p.add_argument(
        "--out", type=Path, default=None, help="results folder (default benchmarks/results; --quick: benchmarks/results/quick, never the records)"
    )
    args = p.parse_args(argv)
    envs = args.envs or ([1, 2] if args.quick else DEFAULT_ENVS)
    if min(envs) < 1:
        p.error("--envs must be >= 1")
    # a smoke run never replaces the records: its numbers go to a scratch folder
    out = args.out if args.out is not None else RESULTS_DIR / "quick" if args.quick else RESULTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    record: dict[str, Any] = {
        "device": device_info(),
        "quick": args.quick,
        "envs": envs,
        "rows": [],
        "references": [],
        "training": [],
        "benchmarks": {},
        "reused": args.reuse,
    }
    start = time.perf_counter()
    for name in BENCHMARKS:
        if args.only and name not in args.only:
            continue
        print(f"\n=== {name} ===", flush=True)
        t0 = time.perf_counter()
        rows, refs, training = run_benchmark(name, envs, args.quick, out, name in args.reuse)
        record["rows"] += rows
        record["references"] += refs
        record["training"] += training
        record["benchmarks"][name] = {"wall_s": time.perf_counter() - t0}
    record["wall_s"] = time.perf_counter() - start
    stem = f"suite{'-quick' if args.quick else ''}-{record['device']['backend']}"
    atomic_write_text(out / f"{stem}.json", json.dumps(record, indent=1) + "\n")
    atomic_write_text(out / f"{stem}.md", markdown(record) + "\n")
    plot(record, out / f"{stem}.png")
    print("\n" + markdown(record))
    print(f"\nwrote {out / stem}.json, .md, .png")
    return record


if __name__ == "__main__":
    main()
