"""Memory: runs that cannot fit are refused when configured, naming the setting to lower;
training chunks donate their state; benchmark batches split to fit."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import memory, train
from jaxclimate.distributed import RunPlacement
from jaxclimate.run.loop import donated


def test_check_fits_names_the_setting_to_lower():
    memory.check_fits(1024, "a small state", "--seeds")  # fits: no error
    with pytest.raises(MemoryError, match=r"the replay buffers needs .* lower --set buffer_size"):
        memory.check_fits(2**70, "the replay buffers", "--set buffer_size")


def test_a_run_too_large_for_the_device_is_refused_before_allocating(tmp_path):
    """A DDPG run whose replay buffers would take petabytes stops at configuration (shapes
    only: nothing is allocated), with the settings to lower named."""
    options = train.build_options(
        [
            "--env",
            "ebm-v1",
            "--algo",
            "ddpg",
            "--total-timesteps",
            str(10**13),
            "--set",
            f"buffer_size={10**13}",
            "--run-dir",
            str(tmp_path / "run"),
            "--quiet",
        ]
    )
    with pytest.raises(SystemExit, match="the training state needs .* lower --seeds or --num-envs or --set buffer_size"):
        train.run(options)


def test_training_chunks_donate_their_state():
    placement = RunPlacement.over_devices(2)
    state = placement.from_host({"w": np.ones((2, 8), np.float32)})
    step = placement.compile(lambda s: {"w": s["w"] * 2.0}, donate=True)
    out = step(state)
    np.testing.assert_array_equal(np.asarray(out["w"]), 2.0)
    assert state["w"].is_deleted() and donated(state) and not donated(out)


def test_split_batch_halves_until_the_batch_fits():
    limit = memory.device_memory_bytes()
    assert memory.split_batch(65_536, 1.0) == 65_536  # a byte per item fits anywhere
    batch = memory.split_batch(65_536, limit / 1000)  # 1000 items fill the device
    assert batch * limit / 1000 <= 0.5 * limit < 2 * batch * limit / 1000
    x = jnp.arange(64.0)
    np.testing.assert_array_equal(jax.lax.map(lambda v: v * 2, x, batch_size=memory.split_batch(64, limit / 10)), x * 2)


def test_rice_n_benchmark_splits_a_batch_too_large_for_the_device(monkeypatch):
    """With a device of 4 MB, 8 RICE-N envs run as sequential batches (one program), and the
    rollout's checksum equals the unsplit one's."""
    from benchmarks import bench_rice_n
    from jaxclimate import make

    env, params = make("rice-n")
    monkeypatch.setattr(memory, "device_memory_bytes", lambda device=None: 4_000_000)
    batch = bench_rice_n.env_batch(env, params, 8)
    assert 1 <= batch < 8 and 8 % batch == 0
    keys = jax.random.split(jax.random.PRNGKey(0), 8)
    split = jax.jit(lambda k: bench_rice_n.batched_rollout(env, params, k, 3, True, True, batch))(keys)
    whole = jax.jit(lambda k: bench_rice_n.batched_rollout(env, params, k, 3, True, True, 8))(keys)
    np.testing.assert_allclose(float(split), float(whole), rtol=1e-5)
