"""The run library: what ``python -m jaxclimate.train``, ``.sweep``, ``.evaluate``, the
baselines and the notebooks all call.

    from jaxclimate import run

    options = run.configure("ebm-v1", "apg", config={"total_timesteps": 4000}, run_dir="runs/apg")
    summary = run.train(options)                       # chunks, checkpoints, resume, Ctrl-C
    summary = run.train(options.replace(resume=True))  # continue an interrupted run

Layers, each importing only those before it: :mod:`~jaxclimate.run.values` and
:mod:`~jaxclimate.run.presets`; :mod:`~jaxclimate.run.assemble` (options → environment,
config, trainer); :mod:`~jaxclimate.run.loop` (the chunk loop); :mod:`~jaxclimate.run.finish`
(metrics lines, summary, plots); :mod:`~jaxclimate.run.training` and
:mod:`~jaxclimate.run.sweeping` (a run, and values × seeds as one run).
"""

import importlib

#: each public name and the module that defines it, imported on first use: the command lines
#: import :mod:`jaxclimate.run.flags` before JAX loads, inside their Ctrl-C guard
_EXPORTS = {
    "Run": "jaxclimate.run.assemble",
    "RunError": "jaxclimate.run.assemble",
    "configure": "jaxclimate.run.assemble",
    "make_run": "jaxclimate.run.assemble",
    "RunExistsError": "jaxclimate.run.training",
    "train": "jaxclimate.run.training",
    "RunOptions": "jaxclimate.run_options",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'jaxclimate.run' has no attribute {name!r}")
