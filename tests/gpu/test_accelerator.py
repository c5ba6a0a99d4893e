"""The accelerator tier: ``python -m pytest -m gpu -n 0`` on a machine with a GPU (or TPU).

Each environment's float32 step on the accelerator is checked against the same trajectory in
float64 on the CPU. The tolerance is stated relative to the CPU: the accelerator's float32
error may be at most 4× the CPU's own float32 error on the same actions (floor 1e-6,
relative to the largest value of each output). TF32 contractions (~1e-3) or approximate
divisions fail it; a correctly rounded float32 backend passes. The exact divisions the
golden-trajectory parity relies on are checked bit for bit against NumPy, a short training
run must learn, the benchmark suite must write its quick record from the accelerator, and the
notebooks must run in FAST mode there. Without an accelerator every test here is skipped
(tests/conftest.py says why).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
STEPS = 6
CASES = [
    ("ebm-v1", {}),
    ("ebm-v3-a6", {}),
    ("invest-esg", {"event_mode": "reference_events"}),
    ("rice-n-bilateral", {}),
    ("climate-mitigation-ii", {"engine": "gru"}),
    ("climate-mitigation-ii", {"engine": "cicero-jax"}),
]


def trajectory(env_id: str, overrides: dict, dtype: str, device, actions=None):
    """``STEPS`` steps from reset on ``device``: sampled actions (float32 run) or the given
    ones replayed. Returns (actions, float outputs: observations and rewards)."""
    env, params = make(env_id, dtype=dtype, **overrides)

    def run(key, actions):
        obs, state = env.reset(key, params)

        def body(carry, xs):
            obs, state = carry
            step_key, given = xs
            k_act, k_step = jax.random.split(step_key)
            a = env.sample_actions(k_act) if given is None else given
            obs, state, rewards, *_ = env.step(k_step, state, a, params)
            return (obs, state), (a, obs, rewards)

        _, (a, obs, rewards) = jax.lax.scan(body, (obs, state), (jax.random.split(key, STEPS), actions))
        return a, (obs, rewards)

    with jax.default_device(device):
        a, out = jax.jit(run)(jax.random.PRNGKey(0), actions)
    return jax.tree_util.tree_map(np.asarray, a), jax.tree_util.tree_map(np.asarray, out)


def relative_error(out, reference) -> float:
    """Largest |out − ref| / max|ref| over the floating-point leaves."""
    errors = [0.0]
    for x, ref in zip(jax.tree_util.tree_leaves(out), jax.tree_util.tree_leaves(reference)):
        if np.issubdtype(ref.dtype, np.floating):
            scale = max(float(np.max(np.abs(ref))), 1e-30)
            errors.append(float(np.max(np.abs(x.astype(np.float64) - ref))) / scale)
    return max(errors)


@pytest.mark.parametrize("env_id, overrides", CASES, ids=lambda v: v if isinstance(v, str) else "-".join(map(str, v.values())))
def test_float32_on_the_accelerator_matches_float64_on_the_cpu(env_id, overrides, x64_off, record_property):
    cpu, accelerator = jax.devices("cpu")[0], jax.devices()[0]
    actions, on_accelerator = trajectory(env_id, overrides, "float32", accelerator)
    _, on_cpu = trajectory(env_id, overrides, "float32", cpu, actions)
    jax.config.update("jax_enable_x64", True)
    _, reference = trajectory(env_id, overrides, "float64", cpu, actions)
    jax.config.update("jax_enable_x64", False)
    error, cpu_error = relative_error(on_accelerator, reference), relative_error(on_cpu, reference)
    record_property("relative_error_accelerator", error)
    record_property("relative_error_cpu_float32", cpu_error)
    print(f"{env_id} {overrides}: accelerator {error:.2e}, CPU float32 {cpu_error:.2e} (both against CPU float64)")
    assert error <= max(4 * cpu_error, 1e-6), (error, cpu_error)


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "float32"])
def test_divisions_are_exact_where_x64_is_on_and_within_2_ulp_otherwise(x64, x64_off):
    """The correctly rounded float32 divisions the golden parity relies on (RICE-N's
    observation scaling, the EBM server's ordered mean), on random values against NumPy:
    bit for bit with 64-bit JAX on, on any backend; within 2 ulp with it off (a GPU's float32
    division is approximate; ``exact_divide`` says why)."""
    from jaxclimate.envs.ebm.env import ordered_mean
    from jaxclimate.envs.rice_n.env import NORMS, _scaled

    rng = np.random.default_rng(0)
    x = (rng.standard_normal(240_000) * 10.0 ** rng.uniform(-3, 6, 240_000)).astype(np.float32)
    rows = x.reshape(-1, 6)
    mean = np.zeros(len(rows), np.float32)
    for j in range(6):  # left to right in float32, as NumPy's mean over six values of the original
        mean = mean + rows[:, j]
    cases = [(lambda v, k=k: _scaled(v, k), x, x / np.float32(NORMS[k])) for k in ("global_temperature", "tariffs")]
    cases.append((jax.vmap(ordered_mean), rows, mean / np.float32(6)))
    jax.config.update("jax_enable_x64", x64)
    for fn, inputs, expected in cases:
        got = np.asarray(jax.jit(fn)(inputs))
        assert got.dtype == np.float32
        if x64:
            np.testing.assert_array_equal(got, expected)
        else:
            np.testing.assert_array_max_ulp(got, expected, maxulp=2)


def test_scenario_i_learns_on_the_accelerator(x64_off):
    """The paper's scenario (i) on the accelerator: returns rise from below −20 to full energy
    effort (about −7.5), as on the CPU."""
    from jaxclimate.algos.ippo import IPPOConfig, make_trainer

    env, params = make("climate-mitigation")
    config = IPPOConfig(total_timesteps=40_000, num_envs=16, num_steps=35, lr=1e-3, gamma=0.999)
    trainer = make_trainer(env, params, config)
    _, metrics = jax.jit(trainer.run, static_argnums=1)(trainer.init(jax.random.PRNGKey(0)), config.num_updates)
    returns = np.asarray(metrics["countries"]["episode_return"]).mean(-1)
    assert returns[0] < -20 and returns[-1] > -7.6, (returns[0], returns[-1])


def test_benchmark_suite_writes_its_quick_record_from_the_accelerator(tmp_path, x64_off):
    from benchmarks import run_all

    record = run_all.main(["--quick", "--only", "ebm", "rice-n", "invest-esg", "--out", str(tmp_path)])
    backend = jax.default_backend()
    assert record["device"]["backend"] == backend != "cpu"
    assert {r["env"] for r in record["rows"]} == {"ebm-v1", "rice-n", "invest-esg"}
    assert all(r["env_steps_per_s"] > 0 for r in record["rows"])
    assert (tmp_path / f"suite-quick-{backend}.md").exists()


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("*.ipynb")), ids=lambda p: p.stem)
def test_notebook_runs_in_fast_mode_on_the_accelerator(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("JAXCLIMATE_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    print(f"{path.name}: {time.perf_counter() - start:.0f} s on {jax.devices()[0].device_kind}")
    assert not [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]


@pytest.fixture
def x64_off():
    """Each test starts and ends in 32-bit JAX (the float64 reference turns x64 on briefly)."""
    jax.config.update("jax_enable_x64", False)
    yield
    jax.config.update("jax_enable_x64", False)


def test_tier_runs_where_it_says(x64_off):
    """Guard: the tier is meaningful only when the default device is not the CPU."""
    assert jax.default_backend() != "cpu" and os.environ.get("JAX_PLATFORMS", "") != "cpu"
    assert jnp.zeros(()).devices() == {jax.devices()[0]}
