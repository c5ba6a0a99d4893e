"""Test configuration.

The CPU XLA flags must be set before JAX starts its backend: jax 0.10.2 can deadlock in
``jit(vmap(train))`` on CPU without them (see ``jaxclimate/_xla.py``). Every test has a
timeout (pyproject) so a hang fails instead of eating CI's budget.
"""

from pathlib import Path

from jaxclimate._xla import use_cpu_safe_xla_flags

use_cpu_safe_xla_flags()

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

DATA = Path(__file__).parent / "data"


@pytest.fixture
def x64():
    """Run the test with 64-bit JAX (parity tests), restoring the previous setting."""
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


def load_golden(name: str) -> dict:
    with np.load(DATA / "ebm" / f"{name}.npz") as f:
        return {k: f[k] for k in f.files}
