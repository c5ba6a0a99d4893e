"""How ``python -m jaxclimate.train`` presents the EBM environments: FedRAIN-Lite's tuned
off-policy settings, and the learned temperature profile with its area-weighted RMSE per 30°
band next to the static climlab baseline (docs/fedrain.md §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from jaxclimate.envs.ebm import physics
from jaxclimate.envs.ebm.evaluation import BAND_NAMES, area_weighted_rmse_bands, static_baseline
from jaxclimate.reporting import TrainingReport, over_seeds
from jaxclimate.run_options import RunOptions


class EBMReport(TrainingReport):
    def presets(self, env, algo: str) -> dict[str, dict[str, Any]]:
        # The configs' defaults are FedRAIN-Lite's values tuned on ebm-v1 (used unchanged for every
        # environment in the paper); "fed05" averages the actors every 5 episodes.
        if algo in ("ddpg", "td3", "tqc"):
            return {"fedrain": {}, "fed05": {"federation_period": 5}, "fed10": {"federation_period": 10}}
        return {}

    def summarize(self, env, env_params, trainer, state, rows, evaluations, options: RunOptions, run_dir: Path) -> dict[str, Any]:
        profiles = np.stack([e["info"]["profile"][-1] for e in evaluations])  # after the episode's last step
        rmse = np.asarray(area_weighted_rmse_bands(profiles, np.asarray(env_params.target)))  # (seeds, 6)
        _, static = static_baseline(env_params)
        return {
            "band_rmse": {
                "bands": list(BAND_NAMES),
                "mean": rmse.mean(axis=0).tolist(),
                "std": rmse.std(axis=0).tolist(),
                "per_seed": rmse.tolist(),
                "static_climlab": np.asarray(static).tolist(),
                "note": "areaWRMSE (°C) after one deterministic episode of each seed's current actors",
            },
            "learned_profiles": profiles.tolist(),
        }

    def summary_lines(self, summary: dict) -> list[str]:
        band = summary["band_rmse"]
        several = len(band["per_seed"]) > 1  # a spread only where there are seeds to spread
        lines = [f"\nareaWRMSE per band (°C), deterministic episode, {over_seeds(len(band['per_seed']))}\n{'band':>9} {'learned':>16} {'static':>8}"]
        for name, m, s, c in zip(band["bands"], band["mean"], band["std"], band["static_climlab"]):
            lines.append(f"{name:>9} {m:>9.3f} {f'± {s:<5.3f}' if several else ' ' * 7} {c:>8.3f}")
        return lines

    def plot(self, env, rows, summary, evaluations, run_dir: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from jaxclimate.envs.ebm import TARGET

        lat = physics.LAT_DEG
        fig, axes = plt.subplots(1, 2, figsize=(13, 4))
        axes[0].plot(lat, TARGET, "k", lw=2, label="NCEP target")
        axes[0].plot(lat, np.asarray(static_baseline()[0]), "k--", label="static climlab")
        for s, profile in enumerate(summary["learned_profiles"]):
            axes[0].plot(lat, profile, lw=0.9, alpha=0.8, label=f"learned, seed {s}" if s < 5 else None)
        axes[0].set(xlabel="latitude (°)", ylabel="temperature (°C)", title=f"{env.name}: profile after 200 steps")
        axes[0].legend(fontsize=7)
        band = summary["band_rmse"]
        x = np.arange(len(band["bands"]))
        seeds = len(band["per_seed"])
        axes[1].bar(x - 0.2, band["mean"], 0.4, yerr=band["std"] if seeds > 1 else None, capsize=3, label=f"learned ({over_seeds(seeds)})")
        axes[1].bar(x + 0.2, band["static_climlab"], 0.4, label="static climlab")
        axes[1].set_xticks(x, band["bands"])
        axes[1].set(ylabel="areaWRMSE (°C)", title="error per 30° band")
        axes[1].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(run_dir / "profile.png", dpi=110)
        plt.close(fig)
