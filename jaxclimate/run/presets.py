"""Named hyper-parameter sets: an environment's presets for an algorithm, and their ``-gpu``
variants sized to fill an accelerator."""

from __future__ import annotations

import jax

#: A ``-gpu`` preset's parallel envs per seed, against its base preset's.
GPU_ENV_SCALE = 16


def with_gpu_presets(presets: dict[str, dict], config_cls: type) -> dict[str, dict]:
    """Each on-policy preset and its ``<name>-gpu`` variant, sized to fill an accelerator:
    ``GPU_ENV_SCALE``× the parallel envs and env steps, so the same number of updates, each on
    that many times the samples with minibatches of the same size (``num_minibatches`` scaled
    alike where minibatches are groups of whole sequences)."""
    defaults = config_cls()
    if not all(hasattr(defaults, f) for f in ("num_envs", "total_timesteps", "num_minibatches", "minibatch_size")):
        return dict(presets)
    out = dict(presets)
    for name, preset in presets.items():
        value = lambda key, p=preset: p.get(key, getattr(defaults, key))  # noqa: E731
        sized = {**preset, "num_envs": value("num_envs") * GPU_ENV_SCALE, "total_timesteps": value("total_timesteps") * GPU_ENV_SCALE}
        if value("minibatch_size") == 0:
            sized["num_minibatches"] = value("num_minibatches") * GPU_ENV_SCALE
        out[f"{name}-gpu"] = sized
    return out


def default_preset(presets: dict[str, dict], sized_by_user: bool = False) -> str | None:
    """The environment's first preset, or its ``-gpu`` variant where JAX runs on an accelerator
    and the caller sets neither the env steps nor the envs (those keep the preset's meaning:
    the same steps on 16× the envs would be 16× fewer updates)."""
    first = next(iter(presets), None)
    if first is not None and not sized_by_user and jax.default_backend() != "cpu" and f"{first}-gpu" in presets:
        return f"{first}-gpu"
    return first
