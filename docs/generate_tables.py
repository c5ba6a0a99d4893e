"""Write the tables of docs/results.md (and of the other pages ``PAGES`` lists) that come from the
records, so the pages cannot drift from what was measured.

Each generated table sits between two comments in the page, ``<!-- table:NAME -->`` and
``<!-- /table:NAME -->``; ``TABLES`` (and each other page's ``*_TABLES``, paired with its page in
``PAGES``) maps each NAME to the function that builds it. Each function's docstring names its
record(s) and the field behind each column; the page's wording (row labels, which numbers are
bold and why) is spelled out beside it.

    python docs/generate_tables.py           # rewrite the generated tables of the pages
    python docs/generate_tables.py --check   # exit 1, naming (and diffing) each table that differs

A table without a record stays hand-written, without markers: the climate-mitigation GRU table
(its run's JSON was replaced by the suite's later run of the same script, which feeds the
CICERO-SCM-in-JAX table).
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import sys
from functools import cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "results.md"
BENCH = ROOT / "benchmarks" / "results"
H200 = BENCH / "accelerator-nvidia-h200"
H100 = BENCH / "accelerator-nvidia-h100" / "run2"  # the newest H100 run
BASELINES = ROOT / "baselines" / "results"
PAPER_FEDRAIN = ROOT / "baselines" / "data" / "fedrain_paper_tables.json"


@cache
def record(path: Path) -> dict:
    """A record, read once per run (several tables read the same one)."""
    return json.loads(path.read_text())


# --- formatting: how the page writes numbers ----------------------------------------------------


def count(x: float) -> str:
    """1234.5 -> '1,235'."""
    return f"{x:,.0f}"


def kilo(x: float, digits: int = 0) -> str:
    """207_000 -> '207 k' (``digits`` decimals)."""
    return f"{x / 1e3:,.{digits}f} k"


def mega(x: float, digits: int = 2) -> str:
    """1_580_000 -> '1.58 M'."""
    return f"{x / 1e6:.{digits}f} M"


def signed(x: float, spec: str) -> str:
    """A number with the page's minus sign (U+2212): signed(-28, "+,.0f") -> '−28'."""
    return format(x, spec).replace("-", "−")


def sci(x: float) -> str:
    """1.2149e-07 -> '1.2e-7'."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def bold(text: str, yes: bool = True) -> str:
    """The page sets its headline numbers in bold; the condition says which and why."""
    return f"**{text}**" if yes else text


def table(header: list[str], rows: list[list[str]], left: int = 1) -> str:
    """A Markdown table; the first ``left`` columns are text (left-aligned), the rest numbers."""
    align = "|" + "|".join("---" if i < left else "---:" for i in range(len(header))) + "|"
    return "\n".join([line(header), align, *map(line, rows)])


def line(cells: list[str]) -> str:
    """One table row; an empty cell is written '| |', as the page writes it."""
    return "|" + "|".join(f" {c} " if c else " " for c in cells) + "|"


# --- the benchmark suite (python -m benchmarks): env-steps/s per environment and batch size ---------


def device_line(rec: dict) -> str:
    """The machine a suite record ran on, as its `device` field has it."""
    d = rec["device"]
    cores = f"{d['cpu_count']}-core CPU" if d["backend"] == "cpu" else f"{d['device_count']} × {d['device_kind']}"
    return f"{cores}, jax {d['jax_version']}, env-steps/s (median):"


def suite_table(path: Path) -> str:
    """One row per (`env`, `variant`) of `rows`, one column per `n_envs` (the record's `envs`), cells `env_steps_per_s`."""
    rec = record(path)
    rates = {(r["env"], r["variant"], r["n_envs"]): r["env_steps_per_s"] for r in rec["rows"]}
    kinds = list(dict.fromkeys((r["env"], r["variant"]) for r in rec["rows"]))
    header = ["environment", "variant", *[f"{count(n)} env{'s' * (n > 1)}" for n in rec["envs"]]]
    rows = [[env, variant, *[count(rates[env, variant, n]) if (env, variant, n) in rates else "—" for n in rec["envs"]]] for env, variant in kinds]
    return device_line(rec) + "\n\n" + table(header, rows, left=2)


def suite_cpu() -> str:
    return suite_table(BENCH / "suite-cpu.json")


def suite_h200() -> str:
    return suite_table(H200 / "suite" / "suite-gpu.json")


def suite_training() -> str:
    """`training` rows of both suites, matched on (`env`, `what`): `env_steps_per_s` (agent-steps/s for DDPG, as `what` says)."""
    cpu, gpu = record(BENCH / "suite-cpu.json"), record(H200 / "suite" / "suite-gpu.json")
    on_gpu = {(r["env"], r["what"]): r["env_steps_per_s"] for r in gpu["training"]}
    rows = [
        [r["env"], r["what"], count(r["env_steps_per_s"]), count(on_gpu[r["env"], r["what"]]) if (r["env"], r["what"]) in on_gpu else "—"]
        for r in cpu["training"]
    ]
    return table(["environment", "training run", "CPU, steps/s incl. updates", "H200"], rows, left=2)


def acceptance_h100() -> str:
    """The H100 acceptance run's `roofline.json` rows (`env_steps_per_s` against `target_env_steps_per_s`,
    `fraction_of_roofline` against the 30 % target, `bound`) and `training.json` rows (the rate, the row's
    seconds: `whole_row_s` where it ran end to end, else `projected_row_s` or `paper_run_s`; `meets_target`).
    Bold: a roofline fraction that reaches 30 %."""
    roofline, training = record(H100 / "roofline.json"), record(H100 / "training.json")
    rows = []
    for r in roofline["rows"]:
        fraction = r["fraction_of_roofline"]
        met = r["env_steps_per_s"] >= r["target_env_steps_per_s"] and fraction >= 0.3
        target = f"≥ 10^{round(math.log10(r['target_env_steps_per_s']))} env-steps/s, ≥ 30 %"
        share = bold(f"{100 * fraction:.1f} %", fraction >= 0.3)
        rows.append(
            [
                f"{r['env']}, {count(r['n_envs'])} envs",
                f"{count(r['env_steps_per_s'])} env-steps/s, {share} ({r['bound']})",
                target,
                "yes" if met else "no",
            ]
        )
    for r in training["rows"]:
        unit = "env-steps/s" if "env_steps_per_s" in r else "agent-steps/s"
        rate = r.get("env_steps_per_s", r.get("agent_steps_per_s"))
        seconds, how = (r["whole_row_s"], "run") if "whole_row_s" in r else (r.get("projected_row_s") or r["paper_run_s"], "projected")
        rows.append([r["row"], f"{count(rate)} {unit}; {seconds:.0f} s ({how})", r["target"], "yes" if r["meets_target"] else "no"])
    peaks = roofline["peaks"]
    ceiling = f"{peaks['bytes_per_s'] / 1e9:,.0f} GB/s and {peaks['float32_flop_per_s'] / 1e12:.1f} TFLOP/s in float32 at HIGHEST"
    return f"Roofline measured in the same run: {ceiling}.\n\n" + table(["row", "H100 (of roofline)", "target", "met"], rows)


# --- the scripts' fuller runs --------------------------------------------------------------------


def ebm_cpu() -> str:
    """bench_ebm-float32/-float64: `jaxclimate` rows, `env_steps_per_s` and `speedup_vs_env_step` (× climlab's env step)."""
    f32 = record(BENCH / "bench_ebm-float32-cpu.json")["jaxclimate"]
    f64 = record(BENCH / "bench_ebm-float64-cpu.json")["jaxclimate"]
    rows = []
    for a, b in zip(f32, f64, strict=True):
        assert a["n_envs"] == b["n_envs"], "the two records measured different batch sizes"
        headline = a["n_envs"] == 1024  # the batch size the README quotes
        rows.append(
            [
                str(a["n_envs"]),
                kilo(a["env_steps_per_s"]),
                bold(count(a["speedup_vs_env_step"]), headline),
                kilo(b["env_steps_per_s"]),
                count(b["speedup_vs_env_step"]),
            ]
        )
    return table(["parallel envs", "float32 env-steps/s", "× climlab env step", "float64 env-steps/s", "× climlab env step"], rows, left=0)


def cicero_jax_cpu() -> str:
    """bench_climate_mitigation: engine 'CICERO-SCM in JAX' rows (`env_steps_per_s`, `ms_per_env_step`,
    `speedup_vs_cicero`) beside the 'surrogate (gru)' row of the same `n_envs`."""
    rows_ = record(BENCH / "bench_climate_mitigation-cpu.json")["rows"]
    gru = {r["n_envs"]: r["env_steps_per_s"] for r in rows_ if r["engine"] == "surrogate (gru)"}
    rows = [
        [
            str(r["n_envs"]),
            count(r["env_steps_per_s"]),
            f"{r['ms_per_env_step']:.2g}",
            bold(count(r["speedup_vs_cicero"]), r["speedup_vs_cicero"] >= 10_000),  # past the 10,000× aim
            count(gru[r["n_envs"]]),
        ]
        for r in rows_
        if r["engine"] == "CICERO-SCM in JAX"
    ]
    header = ["parallel envs", "CICERO-SCM in JAX env-steps/s", "ms per env-step", "× CICERO-SCM engine", "GRU surrogate, same run"]
    return table(header, rows, left=0)


#: bench_rice_n's (`protocol`, `what`) -> the page's description of the row
RICE_N_ROWS = {
    ("none", "dynamics only"): "dynamics only",
    ("none", "step"): "`env.step`, flat observation (27 × 1043 per env)",
    ("none", "step + mask"): "`env.step`, flat + padded action mask",
    ("none", "step, factored"): "**`env.step`, factored observation** (1007 + 27 × 36)",
    ("none", "step + mask, factored"): "`env.step`, factored + padded action mask",
    ("bilateral", "dynamics only"): "dynamics only",
    ("bilateral", "step"): "`env.step`, flat (27 × 1207)",
    ("bilateral", "step + mask"): "`env.step`, flat + padded (27, 138, 10) mask",
    ("bilateral", "step, factored"): "`env.step`, factored (1008 + 27 × 199)",
    ("bilateral", "step + mask, factored"): "`env.step`, factored + padded mask",
}


def rice_n_cpu() -> str:
    """bench_rice_n: `env_steps_per_s` of each (`protocol`, `what`) at every `n_envs`, and `speedup_vs_original` at 1,024."""
    rec = record(BENCH / "bench_rice_n-cpu.json")
    by = {(r["protocol"], r["what"], r["n_envs"]): r for r in rec["rows"]}
    envs = rec["config"]["envs"]
    rows = []
    for (protocol, what), label in RICE_N_ROWS.items():
        ratio = by[protocol, what, 1024]["speedup_vs_original"]
        headline = (protocol, what) == ("none", "step, factored")  # the layout the page recommends
        rows.append([protocol, label, *[kilo(by[protocol, what, n]["env_steps_per_s"], 1) for n in envs], bold(count(ratio), headline)])
    header = ["protocol", "timed", *[f"{n} env{'s' * (n > 1)}" for n in envs], "× original at 1024"]
    return table(header, rows, left=2)


def rice_n_peers_cpu() -> str:
    """bench_rice_n-jice-pax: one row per (`impl`, `what`, `regions`) of `jice.rows`, `pax.rows` and `rows`, one
    column per `n_envs` with `env_steps_per_s` and, for ours, `ratio_vs_jice` / `ratio_vs_pax` (each peer timed
    in the same run, in interleaved rounds)."""
    rec = record(BENCH / "bench_rice_n-jice-pax-cpu.json")
    envs = rec["config"]["envs"]
    measured = rec["jice"]["rows"] + rec["pax"]["rows"] + rec["rows"]  # the peers' rows first
    kinds = list(dict.fromkeys((r["impl"], r["what"], r["regions"]) for r in measured))
    by = {(r["impl"], r["what"], r["regions"], r["n_envs"]): r for r in measured}
    labels = {"jice": "jice (RICE-N authors' JAX port)", "pax": "pax (UCL DARK's JAX Rice)"}
    rows = []
    for impl, what, regions in kinds:
        cells = []
        for n in envs:
            r = by[impl, what, regions, n]
            ratios = [f"{r[f'ratio_vs_{peer}']:.2f}× {peer}" for peer in ("jice", "pax") if f"ratio_vs_{peer}" in r]
            cells.append(kilo(r["env_steps_per_s"], 1) + (f" ({', '.join(ratios)})" if ratios else ""))
        label = labels.get(impl) or f"ours, {what.replace('step, ', '')}".replace("ours, step", "ours, flat")
        rows.append([label, str(regions), *cells])
    header = ["implementation, observation", "regions", *[f"{n:,} envs" for n in envs]]
    return table(header, rows, left=2)


#: the YNN fusion settings of the flag-sensitivity records (benchmarks/harness.py::xla_variant_suffix)
YNN_SETTINGS = (("", "default (dots, reductions)"), ("-ynn_dot", "dots only"), ("-ynn_off", "off"))


def rice_n_peers_ynn_cpu() -> str:
    """bench_rice_n-jice[-ynn_dot|-ynn_off]: one row per YNN fusion setting, jice's `env_steps_per_s` and our
    factored rows' `ratio_vs_jice` with its quartiles at each (`regions`, `n_envs`), timed in the same run."""
    records = {label: record(BENCH / f"bench_rice_n-jice{suffix}-cpu.json") for suffix, label in YNN_SETTINGS}
    rows = []
    for label, rec in records.items():
        jice = " / ".join(kilo(r["env_steps_per_s"]) for r in rec["jice"]["rows"])
        ours = sorted((r for r in rec["rows"] if r["what"] == "step, factored"), key=lambda r: (r["regions"], r["n_envs"]))
        cells = [f"{r['ratio_vs_jice']:.2f}× ({r['ratio_vs_jice_quartiles'][0]:.2f}–{r['ratio_vs_jice_quartiles'][1]:.2f})" for r in ours]
        rows.append([label, jice, *cells])
    config = records[YNN_SETTINGS[0][1]]["config"]  # the same command under each setting
    envs = config["envs"]
    heads = [f"ours {k} regions, {n:,} envs" for k in config["regions"] for n in envs]
    return table(["XLA:CPU YNN fusions", f"jice env-steps/s ({' / '.join(f'{n:,}' for n in envs)} envs)", *heads], rows, left=2)


def rice_n_training_cpu() -> str:
    """bench_rice_n_training: per row `impl`, `observation`, `regions`, `observation_features`, `env_steps_per_s`,
    `ratio_vs_jice` (median per-round ratio) and `kernel_s` as shares of its `total` (the profiled run)."""
    rec = record(BENCH / "bench_rice_n_training-cpu.json")
    rows = []
    for r in rec["rows"]:
        label = "jice's PPO" if r["impl"] == "jice" else f"our IPPO, {r['observation']}"
        kernels = r["kernel_s"]
        shares = [f"{kernels[k] / kernels['total']:.0%}" for k in ("matmul", "random numbers", "initialisation", "other")]
        ratio = f"{r['ratio_vs_jice']:.2f}×" if "ratio_vs_jice" in r else "—"
        rows.append([label, str(r["regions"]), count(r["observation_features"]), count(r["env_steps_per_s"]), ratio, *shares])
    header = ["program", "regions", "features per region", "env-steps/s", "× jice", "matmul", "random numbers", "network init", "other kernels"]
    return table(header, rows, left=3)


def rice_n_protocols() -> str:
    """rice_n_protocols `results`: per protocol the seeds' mean `points`, `hypervolume`, mean `temperature_2100`,
    `competition` (Episode Reward, Temperature Rise, Gross Output, Abatement Cost) and `env_steps_per_s_incl_updates`."""
    rec = record(BASELINES / "rice_n_protocols.json")
    rows = []
    for r in rec["results"]:
        c, e = (mean([p[k] for p in r["points"]]) for k in (0, 1))
        m = r["competition"]
        rows.append(
            [
                r["protocol"],
                f"({c:.3f}, {e:.3f})",
                f"{r['hypervolume']:.3f}",
                f"{mean(r['temperature_2100']):.2f} °C",
                f"{m['Episode Reward']:.2f}",
                f"{m['Temperature Rise']:.2f}",
                count(m["Gross Output"]),
                f"{m['Abatement Cost']:.2f}",
                f"{r['mean_mitigation']:.2f}",
                count(r["env_steps_per_s_incl_updates"]),
            ]
        )
    header = [
        "protocol",
        "mean point (climate, economic)",
        "HV of the seeds",
        "T_AT(2100)",
        "Episode Reward",
        "Temperature Rise",
        "Gross Output",
        "Abatement Cost",
        "mean μ",
        "env-steps/s incl. updates",
    ]
    return table(header, rows, left=1)


#: the bench_invest_esg `env_rows` the page shows: (`market`, `envs`) -> the page's market column
INVEST_ESG_ROWS = {
    ("exp_default", 1): "5 × 3",
    ("exp_default", 256): "5 × 3",
    ("exp_default", 1024): "5 × 3",
    ("exp_default", 4096): "5 × 3",
    ("exp_default (fresh random actions)", 4096): "5 × 3, fresh `jax.random` actions every step",
    ("scale_10x10", 1024): "10 × 10",
    ("scale_10x10", 4096): "10 × 10",
}


def invest_esg_cpu() -> str:
    """bench_invest_esg `env_rows`: `env_steps_per_s`, `x_numpy` (the NumPy env timed in the same run) and
    `x_authors_jax_1024` (against `quoted.authors_jax_env_1024`)."""
    rec = record(BENCH / "bench_invest_esg-cpu.json")
    by = {(r["market"], r["envs"]): r for r in rec["env_rows"]}
    quoted = rec["quoted"]["authors_jax_env_1024"]
    rows = []
    for (market, envs), label in INVEST_ESG_ROWS.items():
        r = by[market, envs]
        rate = mega(r["env_steps_per_s"]) if r["env_steps_per_s"] >= 1e6 else kilo(r["env_steps_per_s"])
        x_numpy, x_authors = count(r["x_numpy"]), f"{r['x_authors_jax_1024']:.2f}"
        if (market, envs) == ("scale_10x10", 1024):  # the first row of the larger market names its own references
            x_numpy += f" (NumPy: {kilo(r['numpy_env_steps_per_s'], 1)})"
            x_authors += f" (authors: {mega(quoted['scale_10x10'])})"
        cells = [count(envs), rate, x_numpy, x_authors]
        headline = (market, envs) == ("exp_default", 1024)  # where the authors' JAX figure was measured
        rows.append([label, *[bold(c, headline) for c in cells]])
    header = [
        "market",
        "parallel envs",
        "env-steps/s",
        "× original NumPy env (same run)",
        f"× authors' JAX env ({quoted['exp_default'] / 1e6:.2f}M at 1,024, quoted)",
    ]
    return table(header, rows)


def fedrain_cpu() -> str:
    """bench_fedrain `rows`, the 1- and 10-seed rows of each env side by side: `agent_steps_per_s`, `mflop_per_agent_step`,
    `fraction_of_peak` (of `matmul_peak_gflop_s_per_device`), `projected_row_minutes`, `row_at_peak_minutes`."""
    rec = record(BENCH / "bench_fedrain-cpu.json")
    by = {(r["env"], r["seeds"]): r for r in rec["rows"]}
    rows = []
    for env in dict.fromkeys(r["env"] for r in rec["rows"]):
        one, ten = by[env, 1], by[env, 10]
        six = ten["agents"] == 6  # the rows the 10-minute aim is about
        rows.append(
            [
                env,
                str(ten["agents"]),
                f"{one['agent_steps_per_s']:.0f} / {ten['agent_steps_per_s']:.0f}",
                f"{ten['mflop_per_agent_step']:.0f} MFLOP",
                f"{100 * one['fraction_of_peak']:.0f} / {100 * ten['fraction_of_peak']:.0f} %",
                f"{ten['projected_row_minutes']:.1f} min",
                bold(f"{ten['row_at_peak_minutes']:.1f} min", six),
            ]
        )
    header = [
        "env",
        "agents",
        "agent-steps/s, 1 / 10 seeds",
        "matmul work per agent-step",
        f"share of the core's peak ({rec['matmul_peak_gflop_s_per_device']:.1f} GFLOP/s)",
        "10-seed row, projected",
        "row at both cores' peak",
    ]
    return table(header, rows)


# --- learning results (baselines/results) --------------------------------------------------------------

#: gradient_alignment's policy names -> the page's
ALIGNMENT_POLICIES = {"random": "random", "trained on the surrogate": "trained on the GRU"}


def gradient_alignment() -> str:
    """gradient_alignment `scenarios[].policies`: `one_minus_cosine`, `norm_ratio_surrogate_over_cicero`,
    `cosine_noise_floor_two_surrogate_estimates`, `mean_return_surrogate` / `mean_return_cicero`."""
    rows = []
    for sc in record(BASELINES / "gradient_alignment.json")["scenarios"]:
        for policy, label in ALIGNMENT_POLICIES.items():
            p = sc["policies"][policy]
            rows.append(
                [
                    f"({sc['scenario']}), {label}",
                    sci(p["one_minus_cosine"]),
                    f"{p['norm_ratio_surrogate_over_cicero']:.4f}",
                    f"{p['cosine_noise_floor_two_surrogate_estimates']:.4f}",
                    f"{signed(p['mean_return_surrogate'], '.3f')} / {signed(p['mean_return_cicero'], '.3f')}",
                ]
            )
    header = ["scenario, policy", "1 − cos(∇J_GRU, ∇J_CICERO)", "‖∇J_GRU‖ / ‖∇J_CICERO‖", "estimator noise floor (cos)", "mean return GRU / CICERO"]
    return table(header, rows)


def rice_n_training() -> str:
    """rice_n `results`, one row per protocol; means over the seeds of `mean_episode_return_first_update`/`_last_update`
    and `temperature_2100`; `points` per seed, `hypervolume`, `mean_mitigation` (μ), `wall_seconds`."""
    rec = record(BASELINES / "rice_n.json")
    rows = []
    for r in rec["results"]:
        shared = r["protocol"] == "bilateral"  # its last minutes shared the cores (the record's `note`; the page's *)
        rows.append(
            [
                r["protocol"],
                f"{mean(r['mean_episode_return_first_update']):.2f} → {mean(r['mean_episode_return_last_update']):.2f}",
                " ".join(f"({c:.2f}, {e:.2f})" for c, e in r["points"]),
                f"{r['hypervolume']:.3f}",
                f"{mean(r['temperature_2100']):.2f} °C",
                f"{r['mean_mitigation']:.2f}",
                f"{r['wall_seconds']:.0f} s" + "*" * shared,
            ]
        )
    header = ["protocol", "mean episode return (first → last update)", "seed points (climate, economic)", "HV", "T_AT(2100)", "mean μ", "wall"]
    return table(header, rows, left=3)


#: invest_esg_authors_jax `settings` -> the page's setting names
FIG3_SETTINGS = {
    "status_quo": "status quo",
    "mandate": "mandate (ESG disclosure)",
    "alpha0.5": "mandate + α = 0.5",
    "alpha1": "mandate + α = 1",
    "alpha10": "mandate + α = 10",
    "alpha100": "mandate + α = 100",
}


def invest_esg_fig3() -> str:
    """invest_esg_authors_jax `settings[].final`: `final_climate_risk` (P100), `final_market_wealth` (W100) and
    `total_mitigation` as mean ± stderr, `climate_events` mean, `top_company_share`. Bold: the lowest P100, the
    highest W100 and the most concentrated investment."""
    final = {name: record(BASELINES / "invest_esg_authors_jax.json")["settings"][name]["final"] for name in FIG3_SETTINGS}
    best_p = min(final, key=lambda n: final[n]["final_climate_risk"]["mean"])
    best_w = max(final, key=lambda n: final[n]["final_market_wealth"]["mean"])
    top_share = max(final, key=lambda n: final[n]["top_company_share"])
    rows = []
    for name, label in FIG3_SETTINGS.items():
        f = final[name]
        p, w, m = f["final_climate_risk"], f["final_market_wealth"], f["total_mitigation"]
        rows.append(
            [
                label,
                bold(f"{p['mean']:.3f} ± {p['stderr']:.3f}", name == best_p),
                bold(f"{count(w['mean'])} ± {count(w['stderr'])}", name == best_w),
                f"{m['mean']:.0f} ± {m['stderr']:.0f}",
                f"{f['climate_events']['mean']:.1f}",
                bold(f"{f['top_company_share']:.2f}", name == top_share),
            ]
        )
    header = ["setting", "P100 (final climate risk)", "W100 (final wealth)", "total mitigation", "climate events", "largest investment share"]
    return table(header, rows)


#: invest_esg_schelling investor types -> the page's names
SCHELLING_INVESTORS = {"esg": "ESG-conscious", "greedy": "greedy", "passive": "passive", "none": "none"}


def invest_esg_schelling() -> str:
    """invest_esg_schelling `return[investors].difference`: cooperate − defect for k = 0 … 4 other cooperators."""
    rec = record(BASELINES / "invest_esg_schelling.json")
    rows = [[label, *[signed(x, "+,.0f") for x in rec["return"][kind]["difference"]]] for kind, label in SCHELLING_INVESTORS.items()]
    return table(["investors", *[("cooperate − defect, k = 0" if k == 0 else f"k = {k}") for k in rec["k"]]], rows)


# --- FedRAIN-Lite: areaWRMSE per 30° band (baselines/fedrain.py) ------------------------------------------

#: the 30° bands, south to north (the records' and the paper's order)
BANDS = ["90°S–60°S", "60°S–30°S", "30°S–0°", "0°–30°N", "30°N–60°N", "60°N–90°N"]
#: rows whose wall time the page marks with * (they ran beside other work, as the page says)
FEDRAIN_SHARED = {("ddpg", "default"): {"ebm-v2-a6/nofed", "ebm-v3-a6/fed10"}}
#: env -> the paper's experiment (its Tables B.3–B.6); the ebm-v1 row is printed in the first of them
PAPER_EXPERIMENT = {
    "ebm-v1": "ebm-v2-optim-L-20k-a2",
    "ebm-v2-a2": "ebm-v2-optim-L-20k-a2",
    "ebm-v2-a6": "ebm-v2-optim-L-20k-a6",
    "ebm-v3-a2": "ebm-v3-optim-L-20k-a2",
    "ebm-v3-a6": "ebm-v3-optim-L-20k-a6",
}


def paper_means(env: str, regime: str, algo: str) -> list[float]:
    """The paper's band means of a row (baselines/data/fedrain_paper_tables.json, read as baselines/fedrain.py reads it)."""
    bands = record(PAPER_FEDRAIN)["experiments"][PAPER_EXPERIMENT[env]]["algorithms"][algo.upper()]
    return [cells["ebm-v1" if env == "ebm-v1" else regime]["mean"] for cells in bands.values()]


def fedrain_label(row: dict) -> str:
    return "ebm-v1 (1 agent)" if row["env"] == "ebm-v1" else f"{row['env']} {row['regime']}"


def wall(row: dict, shared: bool) -> str:
    return f"{count(row['train_s'])} s" + "*" * shared


def fedrain_paper(algo: str, local: str, global_: str, global_std: bool, static: bool) -> str:
    """fedrain_{algo}_paper `rows`: each band's `local` mean ± std over seeds with the paper's mean in brackets, then
    (federated rows) the `global` actor's mean (± std where ``global_std``); `train_s`; ``static``: the
    `static_climlab` row first. ``local``/``global_``: how the table names the two actors."""
    rec = record(BASELINES / f"fedrain_{algo}_paper.json")
    rows = [["static climlab", *[f"{x:.2f}" for x in rec["static_climlab"]], ""]] if static else []
    for row in rec["rows"].values():
        paper = paper_means(row["env"], row["regime"], algo)
        federated = row["regime"] != "nofed"
        loc = zip(row["local"]["mean"], row["local"]["std"], paper, strict=True)
        rows.append(
            [fedrain_label(row) + (f", {local}" if federated else ""), *[f"{m:.2f} ± {s:.2f} ({p:.2f})" for m, s, p in loc], wall(row, False)]
        )
        if federated:
            glob = zip(row["global"]["mean"], row["global"]["std"], strict=True)
            rows.append([f"{fedrain_label(row)}, {global_}", *[f"{m:.2f} ± {s:.2f}" if global_std else f"{m:.2f}" for m, s in glob], ""])
    return table([f"{algo.upper()} row", *BANDS, "wall"], rows)


def fedrain_default(algo: str) -> str:
    """fedrain_{algo}_default `rows`: each band's `local` mean ± std, the `global` actor's mean, the mean over bands
    of the local means against the same row of fedrain_{algo}_paper, `train_s`."""
    default, paper = (record(BASELINES / f"fedrain_{algo}_{c}.json")["rows"] for c in ("default", "paper"))
    shared = FEDRAIN_SHARED.get((algo, "default"), set())
    rows = []
    for key, row in default.items():
        federated = row["regime"] != "nofed"
        band_mean = f"{mean(row['local']['mean']):.2f} vs {mean(paper[key]['local']['mean']):.2f}"
        rows.append(
            [
                fedrain_label(row) + (", local" if federated else ""),
                *[f"{m:.2f} ± {s:.2f}" for m, s in zip(row["local"]["mean"], row["local"]["std"], strict=True)],
                band_mean,
                wall(row, key in shared),
            ]
        )
        if federated:
            rows.append([f"{fedrain_label(row)}, global", *[f"{m:.2f}" for m in row["global"]["mean"]], "", ""])
    return table([f"{algo.upper()} row, default semantics", *BANDS, "band mean: default vs paper conditions", "wall"], rows)


# --- the calibrated static column (baselines/ebm_calibrated.py), on its own page ----------------------------

CALIBRATED_PAGE = ROOT / "docs" / "ebm_calibrated.md"
CALIBRATED = BASELINES / "ebm_calibrated.json"


def band_cells(values: list[float], better_than: list[float] | None = None) -> list[str]:
    """Band errors to 2 decimals; bold where ``better_than`` is given and the value is below it."""
    return [bold(f"{v:.2f}", better_than is not None and v < b) for v, b in zip(values, better_than or values, strict=True)]


def ebm_calibrated() -> str:
    """ebm_calibrated `rows`: `climlab_default.band_rmse` once, then per (env, condition) `calibrated.band_rmse` and
    each algorithm's `learned[algo].best_row.band_mean` (the DDPG/TD3 row best by the same objective), with the
    objective Σ band² (`calibrated.objective`, `best_row.objective`). Bold: a learned band mean below the calibrated one."""
    rows_ = record(CALIBRATED)["rows"]
    default = next(iter(rows_.values()))["climlab_default"]
    rows = [["climlab default (every env)", "", *band_cells(default["band_rmse"]), f"{default['objective']:.1f}"]]
    for row in rows_.values():
        calibrated = row["calibrated"]["band_rmse"]
        rows.append([f"{row['env']}, {row['condition']}", "calibrated static", *band_cells(calibrated), f"{row['calibrated']['objective']:.2f}"])
        for algo, learned in row["learned"].items():
            best = learned["best_row"]
            label = f"{algo.upper()} {best['row'].split('/', 1)[1]}"
            rows.append(["", label, *band_cells(best["band_mean"], calibrated), f"{best['objective']:.1f}"])
    return table(["environment, condition", "column", *BANDS, "Σ band² (°C²)"], rows, left=2)


# --- JaxMARL's own IPPO scripts on every environment (baselines/jaxmarl_ippo.py), on docs/interfaces.md ----

INTERFACES_PAGE = ROOT / "docs" / "interfaces.md"
JAXMARL_IPPO = BASELINES / "jaxmarl_ippo.json"


def jaxmarl_ippo() -> str:
    """jaxmarl_ippo `rows`, one line per environment: for the script that ran (`status` "ran"), its name, the
    view's options (`view`), `env_steps`, and the evaluated returns `trained_return` ± `trained_return_se`,
    `random_return` and `constant_return` (`constant_action`: a joint action's index, or "centre" of the unit box);
    where no script ran, each script's `error`. Extra rows (the continuous script on the raw box) are labelled by
    their view. Bold: a trained return above random's."""
    rows, seen = [], set()
    for row in record(JAXMARL_IPPO)["rows"]:
        script = row["script"].rsplit("/", 1)[1]
        options = ", ".join(f"{k}={v}" for k, v in row["view"].items() if k != "infos") or "raw box"
        if row["status"] == "ran":
            constant = "box centre" if row["constant_action"] == "centre" else f"joint action {row['constant_action']}"
            label = row["env"] if row["env"] not in seen else f"{row['env']} (raw box)"
            cells = [
                label,
                f"`{script}` ({options})",
                count(row["env_steps"]),
                bold(f"{signed(row['trained_return'], '.4g')} ± {row['trained_return_se']:.2g}", row["trained_return"] > row["random_return"]),
                signed(row["random_return"], ".4g"),
                f"{signed(row['constant_return'], '.4g')} ({constant})",
            ]
            rows.append(cells)
            seen.add(row["env"])
    refused = {}
    for row in record(JAXMARL_IPPO)["rows"]:
        if row["status"] != "ran" and row["env"] not in seen:
            why = row["error"].split(": ", 1)[1].split(" (one logit each)")[0]
            refused.setdefault(row["env"], []).append(f"`{row['script'].rsplit('/', 1)[1]}`: {why}")
    for env_id, errors in refused.items():
        rows.append([env_id, "none — " + "; ".join(errors), "", "", "", ""])
    return table(["environment", "JaxMARL script that runs unchanged (view)", "env steps", "trained", "random", "constant"], rows, left=2)


# --- analytic policy gradients (baselines/apg_*.py), on docs/apg.md ------------------------------------

APG_PAGE = ROOT / "docs" / "apg.md"


def apg_ebm() -> str:
    """apg_ebm `rows`: per env/condition, each budget's `apg[].objective` (Σ band² of the seeds' mean, °C²; mean
    over seeds of each seed's Σ band²) with `env_steps_per_seed` as the column, then `reference.calibrated.objective`
    and `reference.learned[algo].objective` (the best DDPG/TD3 row, 20,000 env steps per seed). Bold: an APG value
    below the best DDPG/TD3 row's."""
    rows_ = record(BASELINES / "apg_ebm.json")["rows"]
    budgets = [r["env_steps_per_seed"] for r in next(iter(rows_.values()))["apg"]]
    rows = []
    for key, row in rows_.items():
        learned = row["reference"]["learned"]
        best = min(v["objective"] for v in learned.values())
        cells = [bold(f"{r['objective']:.1f}", r["objective"] < best) for r in row["apg"]]
        rows.append(
            [
                key.replace("/", ", "),
                *cells,
                f"{row['reference']['calibrated']['objective']:.1f}",
                *[f"{learned[a]['objective']:.1f}" for a in ("ddpg", "td3")],
            ]
        )
    header = ["environment, condition", *[f"APG {kilo(b)}" for b in budgets], "calibrated static", "best DDPG", "best TD3"]
    return table(header, rows)


def apg_rice_n() -> str:
    """apg_rice_n: each budget's `apg[]` row — `welfare` (mean ± std over seeds), the mean of `index_points`
    (climate, economic) — then `reference.planner`, `.best_constant`, `.business_as_usual` (`welfare`,
    `climate_index`, `economic_index`)."""
    rec = record(BASELINES / "apg_rice_n.json")
    rows = []
    for r in rec["apg"]:
        climate, economic = np.mean(r["index_points"], axis=0)
        rows.append(
            [
                f"APG, closed loop, {kilo(r['env_steps_per_seed'])} env steps",
                f"{np.mean(r['welfare']):.2f} ± {np.std(r['welfare']):.2f}",
                f"{climate:.3f}",
                f"{economic:.3f}",
            ]
        )
    for name, label in (
        ("planner", "planner, open loop"),
        ("best_constant", "best constant policy"),
        ("business_as_usual", "business as usual (s 0.2, μ 0)"),
    ):
        ref = rec["reference"][name]
        rows.append([label, f"{ref['welfare']:.2f}", f"{ref['climate_index']:.3f}", f"{ref['economic_index']:.3f}"])
    return table(["policy (DICE-2016)", "W", "climate index", "economic index"], rows)


def apg_climate_game() -> str:
    """apg_climate_game: each `apg[]` row — `setting`, `env_steps_per_seed`, `total_return` (mean over seeds of the
    deterministic episode's summed return), `gap_closed` — then `reference.{planner, ippo, best_constant,
    business_as_usual}.total_return` with the share of the gap from business as usual to the planner."""
    rec = record(BASELINES / "apg_climate_game.json")
    low, high = rec["reference"]["business_as_usual"]["total_return"], rec["reference"]["planner"]["total_return"]
    rows = []
    for r in rec["apg"]:
        rows.append(
            [
                f"APG, closed loop, {r['setting']} actor, {kilo(r['env_steps_per_seed'])} env steps",
                signed(np.mean(r["total_return"]), ".1f"),
                f"{r['gap_closed']:.0%}",
            ]
        )
    labels = (
        ("planner", "planner, open loop"),
        ("ippo", "IPPO, the paper's learners (GRU)"),
        ("best_constant", "best constant discrete policy"),
        ("business_as_usual", "business as usual (no lever)"),
    )
    for name, label in labels:
        value = rec["reference"][name]["total_return"]
        rows.append([label, signed(value, ".1f"), f"{(value - low) / (high - low):.0%}"])
    return table(["policy (scenario ii, GRU surrogate)", "summed return", "gap closed"], rows)


def apg_gradients() -> str:
    """apg_gradients `rows`: per family and quantity (`unit`), the norm at the first and last `horizons`, the
    largest over them, and last / first."""
    rows = []
    for name, row in record(BASELINES / "apg_gradients.json")["rows"].items():
        norms, horizons = row["norms"], row["horizons"]
        peak = int(np.argmax(norms))
        rows.append(
            [
                name,
                row["unit"],
                f"{norms[0]:.3g}",
                f"{norms[-1]:.3g} (T = {horizons[-1]})",
                f"{norms[peak]:.3g} (T = {horizons[peak]})",
                f"{norms[-1] / norms[0]:.3g}",
            ]
        )
    return table(["family", "quantity", "T = 1", "whole episode", "largest", "episode / T = 1"], rows, left=2)


def apg_shac() -> str:
    """apg_shac `rows`: per env and `unroll_length`, the mean over seeds (± std) of each seed's deterministic score
    without and with the critic (the whole-episode window has no critic row)."""
    rows, found = [], {}
    for r in record(BASELINES / "apg_shac.json")["rows"]:
        found[(r["env"], r["unroll_length"], r["critic"])] = r
    for (env, window, critic), r in found.items():
        if critic:
            continue
        with_critic = found.get((env, window, True))
        spread = lambda row: f"{np.mean(row['per_seed']):.6g} ± {np.std(row['per_seed']):.2g}"  # noqa: E731
        rows.append(
            [env, r["score"], str(window), spread(r), spread(with_critic) if with_critic else "(whole episode)", kilo(r["env_steps_per_seed"])]
        )
    return table(["environment", "score", "window T", "no critic", "SHAC's critic", "env steps per seed"], rows, left=2)


ROBUST_PAGE = ROOT / "docs" / "robustness.md"


def robust_distributions() -> str:
    """apg_robust `cases[].distribution`: per factor its nominal value, distribution (multipliers) and source."""
    rows, seen = [], set()
    for case in record(BASELINES / "apg_robust.json")["cases"]:
        for d in case["distribution"]:
            if (case["env"], d["factor"]) not in seen:
                seen.add((case["env"], d["factor"]))
                rows.append([case["env"], d["factor"], d["nominal"], d["distribution"], d["source"]])
    return table(["environment", "factor", "nominal", "multiplier of the nominal value", "source"], rows, left=5)


def robust_results() -> str:
    """apg_robust `cases[].rows`: per policy `score_nominal`, `score_mean`, `score_worst_decile` (mean of the lowest
    10 % of the held-out draws; each the mean over seeds of the per-seed value), `temperature_mean` and
    `temperature_p90` at the case's `horizon`. Bold: the better of the two APG rows."""
    rows = []
    for case in record(BASELINES / "apg_robust.json")["cases"]:
        apg = case["rows"][:2]
        best = {k: max(r[k] for r in apg) for k in ("score_nominal", "score_mean", "score_worst_decile")}
        for r in case["rows"]:
            cell = lambda k: bold(f"{r[k]:.4g}", r in apg and r[k] == best[k])  # noqa: E731
            rows.append(
                [
                    f"{case['env']} ({case['draws']} draws)",
                    r["policy"],
                    cell("score_nominal"),
                    cell("score_mean"),
                    cell("score_worst_decile"),
                    f"{r['temperature_mean']:.2f} K (p90 {r['temperature_p90']:.2f})",
                ]
            )
    return table(["case", "policy", "nominal model", "mean over draws", "worst decile", "ΔT at the horizon"], rows, left=2)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def ebm_calibrated_learned() -> str:
    """ebm_calibrated `rows[].learned[algo]`, per band: `rows_below_calibrated` (of the rows listed in `rows`),
    `seeds_below_calibrated` (of `seed_evaluations`: every seed of every row and actor) and `best_seed`, the lowest
    single-seed error. Bold: a band where some learned profile is below the calibrated static one."""
    rows = []
    for row in record(CALIBRATED)["rows"].values():
        for algo, learned in row["learned"].items():
            cells = zip(learned["rows_below_calibrated"], learned["seeds_below_calibrated"], learned["best_seed"], strict=True)
            rows.append(
                [
                    f"{row['env']}, {row['condition']}",
                    f"{algo.upper()} ({plural(len(learned['rows']), 'row')}, {learned['seed_evaluations']} seeds)",
                    *[bold(f"{r} / {n} ({b:.2f})", r + n > 0) for r, n, b in cells],
                ]
            )
    return table(["environment, condition", "learner", *BANDS], rows, left=2)


def ebm_calibrated_fit() -> str:
    """ebm_calibrated `rows`: `calibrated.objective` and the range of `restart_objectives`, `lbfgs_check.objective`
    where run, `gradient_norm` / `projected_gradient_norm`, `fitted.at_lower_bound`/`at_upper_bound` of
    `fitted.components`, the fitted D and a0/a2 (`fitted.model_parameters`, over models), `iterations` × `restarts`,
    `compile_s` / `run_s`."""
    rows = []
    for row in record(CALIBRATED)["rows"].values():
        fitted, model = row["fitted"], row["fitted"]["model_parameters"]
        span = lambda xs: f"{min(xs):.3f}" if max(xs) - min(xs) < 5e-4 else f"{min(xs):.3f}–{max(xs):.3f}"  # noqa: E731
        restarts = row["restart_objectives"]
        rows.append(
            [
                f"{row['env']}, {row['condition']}",
                f"{row['calibrated']['objective']:.3f} ({min(restarts):.3f}–{max(restarts):.3f})",
                f"{row['lbfgs_check']['objective']:.3f}" if "lbfgs_check" in row else "—",
                f"{row['gradient_norm']:.1f} / {row['projected_gradient_norm']:.3f}",
                f"{fitted['at_lower_bound']} / {fitted['at_upper_bound']} of {fitted['components']}",
                span(model["D"]),
                f"{span(model['a0'])}, {span(model['a2'])}" + ("" if fitted["albedo_acts"] else " (fixed)"),
                f"{row['iterations']:,} × {row['restarts']}",
                f"{row['compile_s']:.1f} / {row['run_s']:.0f} s",
            ]
        )
    header = [
        "environment, condition",
        "J (restarts)",
        "J, float64 L-BFGS-B",
        "‖∇J‖ / ‖P∇J‖",
        "on lower / upper bound",
        "D",
        "a0, a2",
        "iterations × restarts",
        "compile / run",
    ]
    return table(header, rows, left=1)


CALIBRATED_TABLES = {"ebm-calibrated": ebm_calibrated, "ebm-calibrated-learned": ebm_calibrated_learned, "ebm-calibrated-fit": ebm_calibrated_fit}

TABLES = {
    "suite-cpu": suite_cpu,
    "suite-h200": suite_h200,
    "suite-training": suite_training,
    "acceptance-h100": acceptance_h100,
    "ebm-cpu": ebm_cpu,
    "cicero-jax-cpu": cicero_jax_cpu,
    "rice-n-cpu": rice_n_cpu,
    "invest-esg-cpu": invest_esg_cpu,
    "fedrain-ddpg-throughput-cpu": fedrain_cpu,
    "gradient-alignment": gradient_alignment,
    "rice-n-training": rice_n_training,
    "rice-n-peers-cpu": rice_n_peers_cpu,
    "rice-n-peers-ynn-cpu": rice_n_peers_ynn_cpu,
    "rice-n-training-cpu": rice_n_training_cpu,
    "rice-n-protocols": rice_n_protocols,
    "invest-esg-fig3": invest_esg_fig3,
    "invest-esg-schelling": invest_esg_schelling,
    "fedrain-ddpg-paper": lambda: fedrain_paper("ddpg", "local actors", "global (averaged) actor", global_std=False, static=True),
    "fedrain-td3-paper": lambda: fedrain_paper("td3", "local", "global", global_std=True, static=False),
    "fedrain-td3-default": lambda: fedrain_default("td3"),
    "fedrain-ddpg-default": lambda: fedrain_default("ddpg"),
}

# --- the page --------------------------------------------------------------------------------------

BLOCK = re.compile(r"(?P<open><!-- table:(?P<name>[\w-]+) -->)(?P<body>.*?)(?P<close><!-- /table:(?P=name) -->)", re.S)


def rendered(text: str) -> dict[str, str]:
    """Each marked table of ``text``, as the page has it (without the blank lines around it)."""
    return {m["name"]: m["body"].strip("\n") for m in BLOCK.finditer(text)}


# --- the surrogate's training stages (baselines/surrogate_long_run.py), on docs/climate_mitigation.md §5.6 ----

SURROGATE_PAGE = ROOT / "docs" / "climate_mitigation.md"


def surrogate_stages() -> str:
    """baselines/results/surrogate_long_run/evaluations.jsonl, one row per evaluation, as the script's own
    ``table`` command prints it (one builder for both): `passes`, `test_rmse`, `paper_split_rmse.train`, each
    held-out source's `policy_paths[].rmse_K` · `kendall_tau_T`, the trained-IPPO episodes' RMSE pooled per scenario."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("surrogate_long_run", ROOT / "baselines" / "surrogate_long_run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.table()


#: each page with generated tables -> its generators
INTERFACES_TABLES = {"jaxmarl-ippo": jaxmarl_ippo}
APG_TABLES = {
    "apg-ebm": apg_ebm,
    "apg-rice-n": apg_rice_n,
    "apg-climate-game": apg_climate_game,
    "apg-gradients": apg_gradients,
    "apg-shac": apg_shac,
}
ROBUST_TABLES = {"robust-distributions": robust_distributions, "robust-results": robust_results}
SURROGATE_TABLES = {"surrogate-stages": surrogate_stages}
PAGES = {
    PAGE: TABLES,
    CALIBRATED_PAGE: CALIBRATED_TABLES,
    INTERFACES_PAGE: INTERFACES_TABLES,
    APG_PAGE: APG_TABLES,
    ROBUST_PAGE: ROBUST_TABLES,
    SURROGATE_PAGE: SURROGATE_TABLES,
}


def regenerate(text: str, tables: dict = TABLES) -> str:
    """``text`` with every marked table rebuilt from its record; a marker without a generator is an error."""
    unknown = set(rendered(text)) - set(tables)
    if unknown:
        raise SystemExit(f"{PAGE.name if tables is TABLES else 'page'}: no generator for table(s) {sorted(unknown)}")
    return BLOCK.sub(lambda m: f"{m['open']}\n\n{tables[m['name']]()}\n\n{m['close']}", text)


def stale(text: str, tables: dict = TABLES) -> list[str]:
    """Names of the tables whose page text differs from the record's, and of generators whose table the page lacks."""
    have, want = rendered(text), rendered(regenerate(text, tables))
    return [name for name in tables if name not in have or have[name] != want[name]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 naming each table that differs from its record")
    args = parser.parse_args(argv)
    return max(check_page(page, tables) if args.check else write_page(page, tables) for page, tables in PAGES.items())


def write_page(page: Path, tables: dict) -> int:
    new = regenerate(page.read_text(), tables)
    page.write_text(new)
    print(f"wrote {len(rendered(new))} tables of {page}")
    return 0


def check_page(page: Path, tables: dict) -> int:
    """Exit status 1 (naming and diffing each table) where ``page`` differs from its records."""
    text = page.read_text()
    names, have, want = stale(text, tables), rendered(text), rendered(regenerate(text, tables))
    for name in names:
        print(f"{page.name}: {name}: {'missing from the page' if name not in have else 'differs from its record'}")
        if name in have:
            print("\n".join(difflib.unified_diff(have[name].splitlines(), want[name].splitlines(), "page", "record", lineterm="")))
    return 1 if names else 0


if __name__ == "__main__":
    sys.exit(main())
