"""A training run's options, typed: what ``python -m jaxclimate.train`` was asked to do.

:func:`jaxclimate.train.build_options` makes them from the command line (validated there, each
bad value one line naming its flag); the run records them in ``config.json``
(:meth:`RunOptions.recorded`), and ``--resume``, :func:`jaxclimate.policy.load_policy` and
``jaxclimate.evaluate`` read them back (:meth:`RunOptions.from_record`). The algorithm's own
settings stay a plain mapping of its config class's fields (``config``): the algorithm's
config dataclass is their type, and it validates them when the run is made.
"""

from __future__ import annotations

import dataclasses
from typing import Any

#: options of one session that config.json does not keep (a resumed run takes them anew)
SESSION_ONLY = ("resume", "quiet", "no_plots")


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """Everything a training run needs besides its code.

    Attributes:
      env: the registered environment id (``jaxclimate.make``'s first argument).
      env_overrides: keyword arguments of ``make`` (environment parameters and constructor
        options such as ``scenario`` or ``engine``).
      algo: the registered algorithm (``ippo``, ``ddpg``, ``td3``, ``tqc``, ``apg``).
      config: the algorithm's config fields (``algo``'s config class takes them).
      preset: the named preset the config started from, if any.
      seeds: independent seeds trained in one program; ``seed``: the first one's key.
      chunks: compiled chunks the updates are split into; ``checkpoint_every``: chunks between
        checkpoints (always one at the end).
      reservoir: the climate game's training episodes kept per seed (its consistency replay).
      rollout: the environment's rollout-hook options (``--rollout-set``).
      uncertainty: train over this named distribution of the environment's parameters (a key
        of ``env.uncertainties``; each episode draws its own); evaluation stays nominal.
      run_dir: where the run's files go.
      loggers: extra metric loggers (``tensorboard``, ``wandb``); ``wandb_project`` W&B's project.
      resume, quiet, no_plots: this session only (not recorded).
    """

    env: str
    config: dict[str, Any]
    run_dir: str
    env_overrides: dict[str, Any] = dataclasses.field(default_factory=dict)
    algo: str = "ippo"
    preset: str | None = None
    seeds: int = 1
    seed: int = 0
    chunks: int = 20
    checkpoint_every: int = 5
    reservoir: int = 2000
    rollout: dict[str, Any] = dataclasses.field(default_factory=dict)
    uncertainty: str | None = None
    loggers: tuple[str, ...] = ()
    wandb_project: str | None = "jaxclimate"
    resume: bool = False
    quiet: bool = False
    no_plots: bool = False

    def replace(self, **changes: Any) -> RunOptions:
        return dataclasses.replace(self, **changes)

    def recorded(self) -> dict[str, Any]:
        """What ``config.json`` keeps: every option but this session's."""
        record = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in SESSION_ONLY}
        record["loggers"] = list(self.loggers)
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any], **session: Any) -> RunOptions:
        """Options read back from a run's ``config.json`` (``session``: this session's flags,
        e.g. ``resume=True``). Keys the record has beyond the options (``resolved``) are ignored;
        run folders of earlier versions (the config under ``ippo``, no ``algo``) still load."""
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in record.items() if k in known}
        if "config" not in values and "ippo" in record:
            values["config"] = record["ippo"]
        values["loggers"] = tuple(values.get("loggers") or ())
        values["rollout"] = dict(values.get("rollout") or {})
        return cls(**{**values, **session})
