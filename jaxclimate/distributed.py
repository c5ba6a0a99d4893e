"""Training over every device JAX sees, on one host or many (JAX's multi-controller runtime).

A training run is ``vmap(train)`` over a leading *run axis* (seeds, or seeds × sweep values).
:class:`RunPlacement` lays that axis over a one-dimensional device mesh (``NamedSharding``
with ``PartitionSpec("runs")``) and compiles each chunk as ``jit(shard_map(vmap(...)))``:
every device trains its own runs, with no communication inside a chunk. The numbers are
those of the single-device program with the same keys up to float32 rounding (XLA compiles a
batch of 1 and a batch of 4 with different kernels).

Several hosts (or several processes on one host) join with :func:`initialize`, JAX's own
``jax.distributed.initialize`` — one process per host, every process runs the same program,
and the mesh spans the devices of all of them. Each process holds only its own runs; the host
side (metrics, checkpoints, plots) sees the gathered whole (:meth:`RunPlacement.to_host`) and
writes it once, from process 0 (:func:`is_writer`).

    python -m jaxclimate.train --seeds 8 ...                       # 8 seeds over the local devices
    python -m jaxclimate.train --seeds 8 --coordinator 10.0.0.1:1234 --num-processes 2 --process-id 0
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

AXIS = "runs"

# The variables jax.distributed reads itself on clusters it knows (SLURM, Open MPI, TPU pods);
# these are read here so that a plain launcher can set them too.
ENV_COORDINATOR = "JAX_COORDINATOR_ADDRESS"
ENV_NUM_PROCESSES = "JAX_NUM_PROCESSES"
ENV_PROCESS_ID = "JAX_PROCESS_ID"


def initialize(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None) -> bool:
    """Join a multi-process run (``jax.distributed.initialize``) when a coordinator is given
    here or in ``JAX_COORDINATOR_ADDRESS``; returns whether it did. Call before any other JAX
    work. On CPU the cross-process collectives go through gloo."""
    coordinator = coordinator or os.environ.get(ENV_COORDINATOR)
    if not coordinator:
        return False
    num_processes = num_processes if num_processes is not None else _int_env(ENV_NUM_PROCESSES)
    process_id = process_id if process_id is not None else _int_env(ENV_PROCESS_ID)
    if num_processes is None or process_id is None:
        raise ValueError(
            "a multi-process run needs the process count and this process's id "
            f"(--num-processes/--process-id or {ENV_NUM_PROCESSES}/{ENV_PROCESS_ID})"
        )
    if num_processes < 1 or not 0 <= process_id < num_processes:
        raise ValueError(f"process id must lie in 0..{num_processes - 1} and the count be >= 1, got id {process_id} of {num_processes}")
    # CPU devices exchange data across processes through gloo (harmless where GPUs/TPUs do it)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes, process_id=process_id)
    # The first cross-process collective sets gloo up, and every process must reach it within
    # 30 s. Right after initialize (which returns once all have joined) they are together;
    # later, under load, one can still be compiling when the other reaches a collective (seen
    # once in CI: "Gloo context initialization failed: DEADLINE_EXCEEDED").
    from jax.experimental import multihost_utils

    multihost_utils.sync_global_devices("jaxclimate: every process joined")
    return True


def _int_env(name: str) -> int | None:
    value = os.environ.get(name)
    return None if value in (None, "") else int(value)


def is_writer() -> bool:
    """Whether this process writes the run's files (process 0)."""
    return jax.process_index() == 0


def mesh_size(runs: int, devices: int, processes: int = 1) -> int:
    """How many devices the run axis spans: the most that divide ``runs`` evenly, and a
    multiple of the process count so that every process holds runs."""
    for size in range(min(runs, devices), 0, -1):
        if runs % size == 0 and size % processes == 0:
            return size
    raise ValueError(f"{runs} runs cannot be split over {processes} processes: use a number of seeds (× sweep values) divisible by the process count")


@dataclasses.dataclass(frozen=True)
class RunPlacement:
    """Where the run axis lives: a mesh over ``devices`` and the sharding of axis 0."""

    mesh: Mesh
    runs: int

    @classmethod
    def over_devices(cls, runs: int, devices: list | None = None) -> "RunPlacement":
        """Spread ``runs`` over as many of ``devices`` (default: every device of every
        process) as divide them evenly, taking devices round-robin over processes."""
        devices = list(jax.devices() if devices is None else devices)
        processes = len({d.process_index for d in devices})
        size = mesh_size(runs, len(devices), processes)
        by_process: dict[int, list] = {}
        for d in devices:
            by_process.setdefault(d.process_index, []).append(d)
        per_process = size // processes
        chosen = [d for p in sorted(by_process) for d in by_process[p][:per_process]]
        return cls(Mesh(np.asarray(chosen), (AXIS,)), runs)

    @property
    def sharding(self) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec(AXIS))

    @property
    def num_devices(self) -> int:
        return self.mesh.devices.size

    def compile(self, per_run: Callable, num_args: int = 1, donate: bool = False, num_shared: int = 0) -> Callable:
        """``per_run`` (one run's function) over every device's own runs:
        ``jit(shard_map(vmap(per_run)))`` with the first ``num_args`` arguments and every
        output split along axis 0; ``num_shared`` more arguments (from :meth:`shared`) reach
        every run whole. ``donate``: the split arguments' buffers are given to the outputs (a
        training chunk's state, replay buffers included, then lives on the device once, not
        twice); the caller must not read them after the call.

        ``shard_map`` rather than ``jit`` with shardings alone: under ``vmap`` a
        ``while_loop`` whose condition depends on the batch stops when every row is done, and
        the SPMD partitioner makes that an all-reduce across devices inside the loop. Per
        device, each loop waits only for that device's runs, and a chunk has no communication.
        With one run per device the plain program runs (``vmap`` over a batch of one costs
        ~25 % on CPU for the recurrent IPPO update)."""
        local = self.runs // self.num_devices

        def on_device(*args):
            split, shared = args[:num_args], args[num_args:]
            if local == 1:
                out = per_run(*jax.tree_util.tree_map(lambda x: x[0], split), *shared)
                return jax.tree_util.tree_map(lambda x: x[None], out)
            return jax.vmap(per_run, in_axes=(0,) * num_args + (None,) * num_shared)(*split, *shared)

        spec = PartitionSpec(AXIS)
        return jax.jit(
            jax.shard_map(on_device, mesh=self.mesh, in_specs=(spec,) * num_args + (PartitionSpec(),) * num_shared, out_specs=spec, check_vma=False),
            donate_argnums=tuple(range(num_args)) if donate else (),
        )

    def shared(self, value: Any) -> jax.Array:
        """A host value as one array held whole by every device of the mesh."""
        value = np.asarray(value)
        return jax.make_array_from_callback(value.shape, NamedSharding(self.mesh, PartitionSpec()), lambda idx: value[idx])

    def from_host(self, tree: Any) -> Any:
        """Host arrays with the run axis first → global arrays laid out over the mesh (each
        process keeps only its shards)."""
        return jax.tree_util.tree_map(lambda x: jax.make_array_from_callback(np.shape(x), self.sharding, lambda idx, x=np.asarray(x): x[idx]), tree)

    def to_host(self, tree: Any) -> Any:
        """Global arrays → the whole of each array as NumPy, in every process."""
        if jax.process_count() == 1:
            return jax.tree_util.tree_map(np.asarray, tree)
        from jax.experimental import multihost_utils

        return jax.tree_util.tree_map(np.asarray, multihost_utils.process_allgather(tree, tiled=True))
