"""The wheel users install carries every data file and weight: built from the checkout,
installed outside it, it makes and resets every environment and trains a tiny run."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

OUTSIDE = """
import jax, jaxclimate, sys
from pathlib import Path
assert Path(jaxclimate.__file__).is_relative_to(Path(sys.argv[1])), jaxclimate.__file__  # the wheel, not the checkout
for env_id in jaxclimate.registered_envs():
    env, params = jaxclimate.make(env_id)
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    print(env_id, "ok")
"""


@pytest.mark.slow
def test_the_wheel_installed_elsewhere_makes_every_environment_and_trains(tmp_path):
    # built from a copy of what the wheel is made of, so setuptools' build/ folder lands there, not in the checkout
    source = tmp_path / "source"
    shutil.copytree(ROOT / "jaxclimate", source / "jaxclimate", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path / "dist")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("jaxclimate-*.whl")
    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)], capture_output=True, text=True, timeout=300
    )
    assert install.returncode == 0, install.stderr[-2000:]
    env = dict(os.environ, PYTHONPATH=str(site))  # the wheel first; its dependencies from this environment
    work = tmp_path / "elsewhere"
    work.mkdir()
    made = subprocess.run([sys.executable, "-c", OUTSIDE, str(site)], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-3000:]
    from jaxclimate import registered_envs

    assert made.stdout.split() == [w for env_id in registered_envs() for w in (env_id, "ok")]
    trained = subprocess.run(
        [
            sys.executable,
            "-m",
            "jaxclimate.train",
            "--env",
            "ebm-v3-a2",
            "--algo",
            "ddpg",
            "--fed",
            "1",
            "--total-timesteps",
            "200",
            "--chunks",
            "1",
            "--quiet",
            "--no-plots",
            "--run-dir",
            "run",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    assert (work / "run" / "summary.json").exists() and (work / "run" / "metrics.jsonl").read_text().strip()
