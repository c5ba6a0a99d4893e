"""``train(options)``: a training run, start to finish or resumed — a plain library function
(as Brax's ``ppo.train``) that the command line, sweeps, baselines and notebooks all call.

The run directory holds ``config.json`` (the options, and what they resolved to),
``metrics.jsonl`` (a line per update), ``checkpoints/`` (every ``checkpoint_every`` chunks and
at the end), then ``summary.json`` and the plots. Resuming (``options.resume``) continues from
the last checkpoint and ends exactly where an uninterrupted run would; Ctrl-C keeps the last
finished chunk and says how to continue.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import jax
import numpy as np

from jaxclimate import distributed
from jaxclimate._io import atomic_write_text
from jaxclimate._xla import use_cpu_safe_xla_flags
from jaxclimate.loggers import MetricsSink
from jaxclimate.run.assemble import make_run, resolved_config, steps_line
from jaxclimate.run.finish import finish, metric_lines, progress_bar
from jaxclimate.run.loop import checked_updates, chunk_sizes, devices_record, run_chunks, stopped_early
from jaxclimate.run_options import RunOptions

#: ``progress_fn(row)``: called with each finished chunk's last metrics row (a dict as in metrics.jsonl)
ProgressFn = Callable[[dict], None]


class RunExistsError(FileExistsError):
    """A fresh run asked for a folder that already holds a run's checkpoints."""


def train(options: RunOptions, *, progress_fn: ProgressFn | None = None, stop_after_chunks: int | None = None) -> dict[str, Any]:
    """Train as ``options`` say (see :func:`jaxclimate.run.configure`); returns the summary dict
    (with the final training ``state``), or where it stopped early ``{"interrupted": True,
    "chunks_done": …}`` / ``{"non_finite": line, …}``. ``stop_after_chunks`` stops as Ctrl-C
    would, after that many chunks of this call."""
    from jaxclimate.checkpoint import Checkpointer

    use_cpu_safe_xla_flags()  # read only if JAX's backend has not started yet (jaxclimate/_xla.py)
    run_dir = Path(options.run_dir)
    writer = distributed.is_writer()  # process 0 writes the run's files; every process computes
    if not options.resume and (run_dir / "checkpoints").exists() and any((run_dir / "checkpoints").iterdir()):
        raise RunExistsError(f"{run_dir} already holds checkpoints; continue it with --resume {run_dir} or choose another --run-dir")
    env, env_params, config, trainer, report = make_run(options)  # a run that cannot start leaves no folder behind
    run_dir.mkdir(parents=True, exist_ok=True)
    if not options.resume and writer:
        resolved = resolved_config(config, env_params, options)
        atomic_write_text(run_dir / "config.json", json.dumps(dict(options.recorded(), resolved=resolved), indent=2, default=str) + "\n")
        (run_dir / "metrics.jsonl").unlink(missing_ok=True)
    quiet = options.quiet or not writer
    placement = distributed.RunPlacement.over_devices(options.seeds)  # the seed axis over every device (one device: jit(vmap))
    keys = placement.from_host(np.asarray(jax.random.split(jax.random.PRNGKey(options.seed), options.seeds)))
    init = placement.compile(trainer.init).trace(keys)  # traced once: its shapes, then its program
    check_state_fits(init.out_info, config, placement)
    if not quiet:
        print(steps_line(config, options), file=sys.stderr)
        print("compiling the training program…", file=sys.stderr, flush=True)
    sizes = chunk_sizes(config.num_updates, options.chunks)
    ckpt = Checkpointer(run_dir / "checkpoints")
    try:
        compile_start = time.perf_counter()
        state = init.lower().compile()(keys)
        compile_seconds = {"init": time.perf_counter() - compile_start}
        done = 0
        if options.resume:
            state, done = _resume(state, ckpt, placement, sizes, config.steps_per_update, run_dir, writer)
        length = max(sizes)  # one program for every chunk size (they differ by one update at most)
        steps_per_update = config.steps_per_update * options.seeds
        bar = progress_bar(f"{options.algo.upper()} {env.name}", config.num_updates, sum(sizes[:done]), steps_per_update, quiet)
        wall = time.perf_counter()
        runner = placement.compile(lambda rs, n: checked_updates(trainer.run, rs, n, length), donate=True, num_shared=1)
        runner = runner.lower(state, placement.shared(np.int32(length))).compile()  # ahead of time: its seconds are recorded
        compile_seconds["training"] = time.perf_counter() - wall
        sink = MetricsSink(run_dir, options, writer)

        def on_chunk(chunk: int, metrics: Any) -> None:
            rows = jax.tree_util.tree_map(lambda x: x[:, : sizes[chunk]], placement.to_host(metrics))  # (seeds, updates, ...)
            lines = metric_lines(rows, sum(sizes[:chunk]), config.steps_per_update)
            sink.write(lines)
            last = json.loads(lines[-1])
            bar.update(sizes[chunk] * steps_per_update)
            bar.set_postfix({g: _shown(last[g]["episode_return_mean"]) for g in env.agents})
            if progress_fn is not None:
                progress_fn(last)

        outcome = run_chunks(
            lambda s, n: runner(s, placement.shared(np.int32(n))),
            state,
            sizes,
            start=done,
            on_chunk=on_chunk,
            checkpoint=ckpt,
            to_host=placement.to_host,
            checkpoint_every=options.checkpoint_every,
            stop_after_chunks=stop_after_chunks,
        )
        elapsed = time.perf_counter() - wall
        bar.close()
        sink.close()
    finally:
        ckpt.close()
    if outcome.interrupted and writer:  # the metrics end at the kept chunk
        _truncate_metrics(run_dir / "metrics.jsonl", sum(sizes[: outcome.chunks_done]))
    early = stopped_early(outcome, len(sizes), f"python -m jaxclimate.train --resume {run_dir}", writer)
    if early is not None:
        return early
    host_state = placement.to_host(outcome.state)  # every process's copy of the whole state (several processes: gathered)
    if not writer:
        return {"process": jax.process_index(), "devices": placement.num_devices, "state": host_state}
    summary = finish(env, env_params, trainer, host_state, options, run_dir, elapsed, report, devices_record(placement), compile_seconds)
    summary["state"] = host_state
    return summary


def _shown(mean_return: float) -> str:
    return "no episode ended" if np.isnan(mean_return) else f"{mean_return:.3f}"


def _resume(state, ckpt, placement, sizes: list[int], steps_per_update: int, run_dir: Path, writer: bool) -> tuple[Any, int]:
    """The latest checkpoint's state and its chunk count; a run killed before its first
    checkpoint (a preempted job restarted with --resume) starts from the beginning."""
    restored, done = ckpt.restore_latest(like=state), 0
    if restored is not None:
        state, done = placement.from_host(restored), int(ckpt.latest_step())
    if writer:
        _truncate_metrics(run_dir / "metrics.jsonl", sum(sizes[:done]))
        print(
            f"resuming {run_dir} after chunk {done}/{len(sizes)} ({sum(sizes[:done]) * steps_per_update:,} env steps per seed)"
            if done
            else f"resuming {run_dir}: no checkpoint yet, starting it from the beginning with its saved configuration"
        )
    return state, done


def check_state_fits(state_shapes: Any, config, placement) -> None:
    """Refuse, before anything is allocated, a run whose training state (``state_shapes``, every
    seed's; replay buffers included) would not fit its devices, naming the settings to lower."""
    from jaxclimate.memory import check_fits, tree_bytes

    per_device = tree_bytes(state_shapes) / placement.num_devices
    lower = "--seeds or --num-envs" + (" or --set buffer_size=…" if hasattr(config, "buffer_size") else "")
    check_fits(per_device, "the training state", lower, jax.local_devices()[0])


def _truncate_metrics(path: Path, updates: int) -> None:
    """Drop metric lines written after the checkpoint we resume from."""
    if path.exists():
        lines = [line for line in path.read_text().splitlines() if line.strip()][:updates]
        atomic_write_text(path, "".join(line + "\n" for line in lines))
