"""Ctrl-C at any moment — starting, compiling, between chunks, in a sweep, an evaluation or a
baseline script — ends a command with one line and exit status 130, never a traceback; where
a chunk had finished, the run can be resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_train_cli import TINY

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("interrupts")]


def interrupt(args: list[str], ready, cwd: Path, timeout: float = 150) -> tuple[int, str, str]:
    """Start ``python ARGS``, send SIGINT once ``ready(stderr_so_far)`` holds, and return the
    exit status, stdout and stderr."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out, err = cwd / "stdout.txt", cwd / "stderr.txt"
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env, stdout=o, stderr=e)
        start = time.monotonic()
        while proc.poll() is None and not ready(err.read_text()) and time.monotonic() - start < timeout:
            time.sleep(0.05)
        assert proc.poll() is None, f"finished before the moment to interrupt it:\n{err.read_text()[-2000:]}"
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=120)
    return code, out.read_text(), err.read_text()


def assert_one_line_end(code: int, stderr: str, stdout: str = "") -> None:
    """Exit 130, no traceback, and the last line says it was interrupted (or, for a run that
    kept a chunk, where it stopped and how to continue)."""
    assert code == 130, stderr[-3000:]
    assert "Traceback" not in stderr + stdout and "KeyboardInterrupt" not in stderr + stdout, stderr[-3000:]
    last = (stdout.strip().splitlines() or [""])[-1] if "stopped after" in stdout else stderr.strip().splitlines()[-1]
    assert last.rstrip().endswith("interrupted") or last.startswith("stopped after"), last


LOUD = [a for a in TINY if a != "--quiet"]  # the progress lines say when it compiles
TRAIN = ["-m", "jaxclimate.train", *LOUD, "--no-plots", "--no-compile-cache"]


@pytest.mark.parametrize(
    "moment, ready",
    [
        ("starting", lambda err, t0=[]: t0.append(time.monotonic()) or time.monotonic() - t0[0] > 0.6),  # while JAX loads
        ("compiling", lambda err: "compiling the training program" in err),
    ],
)
def test_ctrl_c_before_the_first_chunk_ends_with_one_line(moment, ready, tmp_path):
    code, _, err = interrupt([*TRAIN, "--run-dir", str(tmp_path / "run")], ready, tmp_path)
    assert_one_line_end(code, err)


def test_ctrl_c_between_chunks_keeps_a_resumable_run_and_evaluate_and_sweep_stop_cleanly(tmp_path):
    run_dir = tmp_path / "run"
    metrics = run_dir / "metrics.jsonl"
    ready = lambda err: metrics.exists() and len(metrics.read_text().splitlines()) >= 2  # noqa: E731
    code, out, err = interrupt([*TRAIN, "--chunks", "40", "--total-timesteps", "11200", "--run-dir", str(run_dir)], ready, tmp_path)
    assert_one_line_end(code, err, out)
    assert f"continue with: python -m jaxclimate.train --resume {run_dir}" in out
    done = int(out.split("stopped after ")[1].split("/")[0])
    assert done >= 1 and len(metrics.read_text().splitlines()) == done * 2  # 2 updates a chunk, cut at the kept chunk
    assert json.loads((run_dir / "config.json").read_text())["algo"] == "ippo"

    code, _, err = interrupt(
        ["-m", "jaxclimate.evaluate", str(run_dir), "--no-plots"],
        lambda err, t0=[]: t0.append(time.monotonic()) or time.monotonic() - t0[0] > 2,
        tmp_path,
    )
    assert_one_line_end(code, err)
    sweep = ["-m", "jaxclimate.sweep", "damage_coefficient=0.003,0.03", *LOUD, "--no-plots", "--out", str(tmp_path / "sweep")]
    code, _, err = interrupt(sweep, lambda err: "compiling" in err, tmp_path)
    assert_one_line_end(code, err)


def test_ctrl_c_in_a_baseline_script_ends_with_one_line(tmp_path):
    args = [str(ROOT / "baselines" / "apg_ebm.py"), "--envs", "ebm-v1", "--conditions", "default", "--budgets", "400000", "--seeds", "1"]
    args += ["--out", str(tmp_path / "apg.json")]
    started = time.monotonic()
    code, _, err = interrupt(args, lambda err: time.monotonic() - started > 10, tmp_path)  # training (the script runs quiet)
    assert_one_line_end(code, err)
