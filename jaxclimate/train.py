"""``python -m jaxclimate.train``: train any registered algorithm on any jaxclimate environment.

With no arguments it trains recurrent IPPO (LSTM, one network per country, as the paper) on
``climate-mitigation`` scenario (i) with the shipped GRU surrogate — about a minute on a
2-core CPU — and writes a run directory:

* ``config.json`` — everything needed to resume or repeat the run;
* ``metrics.jsonl`` — one JSON line per update (env steps, mean returns per agent and seed,
  the algorithm's losses, and the environment's episode metrics where it reports them);
* ``checkpoints/`` — orbax checkpoints of the full training state every few chunks;
* ``summary.json``, ``returns.png`` (``returns-<group>.png`` with several agent groups) and
  whatever the environment's training report adds (the climate game: ``levers.png``,
  ``temperature.png``, ``trajectories.npz`` for ``python -m jaxclimate.envs.climate_mitigation.consistency``;
  InvestESG: the paper's P100 / W100 curves and the learned policy; the EBM: the learned
  temperature profile and band errors);
* ``tensorboard/`` and ``wandb/`` with ``--logger tensorboard,wandb`` (the same scalars as
  ``metrics.jsonl``, named as :mod:`jaxclimate.loggers` lists).

``--algo`` picks the algorithm (``ippo``, ``ddpg``, ``td3``, ``tqc``, ``apg``), ``--preset`` a named
hyper-parameter set the environment provides for it (the papers' settings; the first is the
default), ``--set KEY=VALUE`` any field of the algorithm's config. Training runs as compiled
chunks under a host loop that shows progress. ``--resume RUN_DIR`` continues from the last
checkpoint and ends exactly where an uninterrupted run would; Ctrl-C saves a checkpoint at the
last finished chunk and exits. Seeds run in one program (``vmap``). Compiled programs are kept in
JAX's persistent compilation cache (``~/.cache/jaxclimate/xla``; see :mod:`jaxclimate._cache`), so
a second run of the same configuration starts without recompiling; ``--no-compile-cache`` (or
``JAXCLIMATE_COMPILE_CACHE=0``) turns it off.

Examples::

    python -m jaxclimate.train                                   # climate game, scenario (i), 1 seed
    python -m jaxclimate.train --scenario ii --seeds 4 --total-timesteps 1000000
    python -m jaxclimate.train --network mlp --set lr=3e-4 --set ent_coef=0.02
    python -m jaxclimate.train --env invest-esg --preset paper_sb3 --seeds 3
    python -m jaxclimate.train --env invest-esg --env-set config=exp_a3 --env-set event_mode=reference_events
    python -m jaxclimate.train --env ebm-v3-a6 --algo ddpg --fed 5 --seeds 10
    python -m jaxclimate.train --env rice-n --env-set protocol=my_protocols.py:MedianFloor   # docs/protocols.md
    python -m jaxclimate.train --env rice-n --env-set protocol=club --env-set negotiation.<field>=VALUE
    python -m jaxclimate.train --env ebm-v1 --logger tensorboard,wandb    # + TensorBoard and W&B
    python -m jaxclimate.train --resume runs/climate-mitigation-i-ippo-20261121-120000
"""

from __future__ import annotations

import sys
from typing import Any

from jaxclimate._cli import guarded, prepare_process, start_cpu_processes, wait_for
from jaxclimate.run import flags

MODULE = "jaxclimate.train"
PROG = f"python -m {MODULE}"


def build_options(argv: list[str] | None = None):
    """The run's options from this command line (:func:`jaxclimate.run.flags.build_options`)."""
    return flags.build_options(argv, PROG, __doc__)


def run(options, stop_after_chunks: int | None = None) -> dict[str, Any]:
    """:func:`jaxclimate.run.train`, its refusals as the command line's one-line errors."""
    from jaxclimate.run.training import RunExistsError, train

    try:
        return train(options, stop_after_chunks=stop_after_chunks)
    except (RunExistsError, MemoryError) as err:
        raise SystemExit(f"{PROG}: error: {err}") from None


def main(argv: list[str] | None = None) -> int:
    argv, children = start_cpu_processes(sys.argv[1:] if argv is None else list(argv), MODULE)
    code = 1
    try:
        prepare_process(argv)
        from jaxclimate import distributed

        options = build_options(argv)
        if distributed.is_writer():
            print(f"run directory: {options.run_dir}")
        result = run(options)
        code = 130 if result.get("interrupted") else 1 if result.get("non_finite") else 0
    finally:
        if children:  # they wait at jax.distributed's shutdown barrier for this process: reach it first
            import jax

            jax.distributed.shutdown()
        code = code or wait_for(children, failed=code != 0)
    return code


if __name__ == "__main__":
    sys.exit(guarded(main, PROG))
