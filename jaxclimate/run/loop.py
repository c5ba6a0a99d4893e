"""The chunk loop every run shares — a training run and a sweep alike: compiled chunks of
updates under a host loop, each chunk's metrics handed to a callback, checkpoints every few
chunks, the non-finite guard, and Ctrl-C that keeps the last finished chunk.

A chunk is one call of one compiled program (``run_up_to``: the chunk's size is traced, so
chunks of different sizes share it); the training state is donated to it, so it lives on the
device once. The program also says whether the state or the losses went non-finite.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.algos.base import run_up_to


def chunk_sizes(num_updates: int, chunks: int) -> list[int]:
    """``num_updates`` split into ``chunks`` (at most one per update) sizes differing by one at most."""
    chunks = min(chunks, num_updates)
    base, extra = divmod(num_updates, chunks)
    return [base + (1 if i < extra else 0) for i in range(chunks)]


def checked_updates(run: Callable, state: Any, n: jax.Array, length: int, *args: Any) -> tuple[Any, Any, dict[str, jax.Array]]:
    """``n`` (traced, ≤ ``length``) updates of ``run`` (a trainer's), their metrics in ``length``
    rows, and whether the training state (parameters, optimiser and env state, buffers) or the
    losses went non-finite: a pass over them inside the program."""
    state, metrics = run_up_to(run, state, n, length, *args)

    def non_finite(leaves) -> jax.Array:
        floats = [x for x in leaves if jnp.issubdtype(x.dtype, jnp.inexact)]
        return jnp.any(jnp.stack([~jnp.all(jnp.isfinite(x)) for x in floats])) if floats else jnp.zeros((), bool)

    losses = [x for path, x in jax.tree_util.tree_leaves_with_path(metrics) if "loss" in jax.tree_util.keystr(path)]
    return state, metrics, {"training state": non_finite(jax.tree_util.tree_leaves(state)), "losses": non_finite(losses)}


def first_non_finite(flags: dict[str, np.ndarray], chunk: int, last_finite: int, run: str = "seed") -> str | None:
    """One line naming the chunk, the run (seed) and the quantity that went non-finite, or None."""
    for quantity in ("losses", "training state"):
        runs = np.flatnonzero(np.asarray(flags[quantity]))
        if runs.size:
            kept = f"the last finite checkpoint is chunk {last_finite}" if last_finite else "no checkpoint was kept"
            return (
                f"error: non-finite {quantity} in chunk {chunk + 1}, {run} {int(runs[0])}"
                f"{f' (and {runs.size - 1} more)' if runs.size > 1 else ''}: training stopped; {kept}"
            )
    return None


@dataclasses.dataclass
class Outcome:
    """Where a loop ended: the state (None where an interrupt took it while donated), the chunks
    whose state and metrics are complete, and why it stopped early, if it did."""

    state: Any
    chunks_done: int
    interrupted: bool = False
    non_finite: str | None = None


def run_chunks(
    program: Callable[[Any, int], tuple[Any, Any, dict]],
    state: Any,
    sizes: list[int],
    *,
    start: int,
    on_chunk: Callable[[int, Any], None],
    checkpoint: Any,
    to_host: Callable[[Any], Any],
    checkpoint_every: int,
    stop_after_chunks: int | None = None,
    run_name: str = "seed",
) -> Outcome:
    """Chunks ``start..len(sizes)-1``: ``program(state, size) -> (state, metrics, flags)``, then
    ``on_chunk(chunk, metrics)`` (metrics on the device), a checkpoint of the host state every
    ``checkpoint_every`` chunks and after the last. Stops at a non-finite chunk (its state not
    kept) or at Ctrl-C, keeping a chunk that had finished on the device; ``stop_after_chunks``
    stops as an interrupt would. An interrupted loop's last finished chunk is checkpointed
    (:func:`save_interrupted`)."""
    chunks_done, pending = start, None
    try:
        for chunk in range(start, len(sizes)):
            if stop_after_chunks is not None and chunk - start >= stop_after_chunks:
                return save_interrupted(state, chunks_done, checkpoint, to_host)
            state, metrics, flags = program(state, sizes[chunk])  # the old state is donated to the new one
            pending = (chunk, metrics)
            on_chunk(chunk, metrics)
            pending = None
            problem = first_non_finite(to_host(flags), chunk, checkpoint.latest_step() or 0, run_name)
            if problem:
                return Outcome(None, chunks_done, non_finite=problem)
            chunks_done = chunk + 1
            if chunks_done % checkpoint_every == 0 or chunks_done == len(sizes):
                checkpoint.save(chunks_done, to_host(state))
    except KeyboardInterrupt:
        print("\ninterrupted: saving the last finished chunk", file=sys.stderr)
        if pending is not None:  # the chunk had finished on the device: keep it
            on_chunk(*pending)
            chunks_done = pending[0] + 1
        return save_interrupted(state, chunks_done, checkpoint, to_host)
    return Outcome(state, chunks_done)


def save_interrupted(state: Any, chunks_done: int, checkpoint: Any, to_host: Callable[[Any], Any]) -> Outcome:
    """End an interrupted loop at its last finished chunk, checkpointed. Interrupted in the
    instant between a chunk's call and taking its result, the state it was given is gone
    (donated): the run then continues from its last checkpoint."""
    if donated(state):
        return Outcome(None, int(checkpoint.latest_step() or 0), interrupted=True)
    host_state = to_host(state)
    if checkpoint.latest_step() != chunks_done:
        checkpoint.save(chunks_done, host_state)
    return Outcome(host_state, chunks_done, interrupted=True)


def donated(tree: Any) -> bool:
    return any(getattr(x, "is_deleted", lambda: False)() for x in jax.tree_util.tree_leaves(tree))


def stopped_early(outcome: Outcome, chunks: int, resume: str, writer: bool) -> dict[str, Any] | None:
    """The result of a loop that stopped before its end, with its one line said (the
    non-finite quantity, or where it stopped and ``resume``, the command that continues it);
    None where it ran to the end."""
    if outcome.non_finite:
        print(outcome.non_finite, file=sys.stderr)
        return {"non_finite": outcome.non_finite, "chunks_done": outcome.chunks_done}
    if not outcome.interrupted:
        return None
    if writer:
        resumable = outcome.state is not None or outcome.chunks_done > 0
        print(
            f"stopped after {outcome.chunks_done}/{chunks} chunks; " + (f"continue with: {resume}" if resumable else "no checkpoint yet: start again")
        )
    return {"interrupted": True, "chunks_done": outcome.chunks_done, "state": outcome.state}


def devices_record(placement: Any) -> dict[str, Any]:
    """The devices a run used, as its summary records them."""
    return {"count": placement.num_devices, "processes": jax.process_count(), "kind": placement.mesh.devices.flat[0].device_kind}
