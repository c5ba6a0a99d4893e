"""Preempted runs: a training subprocess killed with SIGKILL at several moments (before its
first checkpoint, between two, in the middle of writing one), then restarted with
``--resume RUN_DIR``, ends with exactly the metrics of an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jaxclimate import train
from tests.test_train_cli import DDPG_TINY, TINY

ROOT = Path(__file__).resolve().parents[1]
RUNS = {"ippo": TINY + ["--checkpoint-every", "2", "--no-plots"], "ddpg": DDPG_TINY + ["--no-plots"]}

#: the training CLI, with SIGKILL planted at one moment (the moment is the first argument)
KILLED_RUN = """
import os, signal, sys
import jax, numpy as np
from jaxclimate import checkpoint, loggers, train

moment, argv = sys.argv[1], sys.argv[2:]
saves = []
real_save, real_write = checkpoint.Checkpointer.save, loggers.MetricsSink.write

def kill():
    os.kill(os.getpid(), signal.SIGKILL)

def save(self, step, state):
    if moment == "during-write" and len(saves) == 1:  # the second save: start writing, die before it is finished
        self._manager.save(int(step), args=self._ocp.args.StandardSave(jax.tree_util.tree_map(np.asarray, state)), force=True)
        kill()
    real_save(self, step, state)
    saves.append(step)

def write(self, lines):
    real_write(self, lines)
    if moment == "before-first-checkpoint" or (moment == "between-checkpoints" and saves):
        kill()  # a chunk's metrics are written, its checkpoint (if one is due) is not

checkpoint.Checkpointer.save, loggers.MetricsSink.write = save, write
train.main(argv)
"""


def _python(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    lines = {}
    for algo, argv in RUNS.items():
        run_dir = tmp_path_factory.mktemp(f"whole-{algo}")
        train.run(train.build_options(argv + ["--run-dir", str(run_dir)]))
        lines[algo] = (run_dir / "metrics.jsonl").read_text().splitlines()
    return lines


@pytest.mark.slow
@pytest.mark.xdist_group("preemption")  # one worker builds the module's uninterrupted runs once
@pytest.mark.parametrize(
    "algo, moment", [("ippo", "before-first-checkpoint"), ("ippo", "between-checkpoints"), ("ippo", "during-write"), ("ddpg", "during-write")]
)
def test_a_run_killed_at_any_moment_resumes_to_the_uninterrupted_result(algo, moment, uninterrupted, tmp_path, capsys):
    run_dir = tmp_path / "run"
    killed = _python(["-c", KILLED_RUN, moment, *RUNS[algo], "--run-dir", str(run_dir)], tmp_path)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (run_dir / "summary.json").exists()
    # resumed in this process (the killed one was another): what a restarted job reads is
    # only what the killed process left on disk, and no second process pays the start-up
    train.run(train.build_options(["--resume", str(run_dir), "--quiet", "--no-plots"]))
    assert "resuming" in capsys.readouterr().out  # it says where it continues from
    assert (run_dir / "metrics.jsonl").read_text().splitlines() == uninterrupted[algo]
    assert json.loads((run_dir / "summary.json").read_text())["updates"] == len(uninterrupted[algo])


#: FedRAIN's baseline, killed while it writes its second row: the new file is complete in its
#: temporary sibling but not yet renamed over the results file, which still holds the first row
#: alone. The temporary file is the killed run's own, uninterrupted result.
KILLED_BASELINE = """
import importlib.util, os, signal, sys
from pathlib import Path

path, argv = sys.argv[1], sys.argv[2:]
spec = importlib.util.spec_from_file_location("fedrain_baseline", path)
fedrain = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fedrain)
writes, real_write = [], fedrain.atomic_write_text

def write(target, text):
    if writes:
        Path(str(target) + ".tmp").write_text(text)
        os.kill(os.getpid(), signal.SIGKILL)
    real_write(target, text)
    writes.append(target)

fedrain.atomic_write_text = write
fedrain.main(argv)
"""
TIMINGS = ("compile_s", "train_s", "agent_steps_per_s")


def _without_timings(rows: dict) -> dict:
    return {key: {k: v for k, v in row.items() if k not in TIMINGS} for key, row in rows.items()}


@pytest.mark.slow
# full_opt like the baseline's own test, so the two share one group (one worker) and its rows'
# programs, compiled once at the same setting
@pytest.mark.full_opt
def test_the_fedrain_baseline_killed_while_writing_a_row_resumes_to_the_uninterrupted_rows(tmp_path):
    from tests.test_baselines_invest_esg_fedrain import BASELINES, FEDRAIN_TINY, load

    argv = [a for a in FEDRAIN_TINY if a != "fed05"] + ["--out", str(tmp_path), "--no-plot"]  # its two nofed rows
    killed = _python(["-c", KILLED_BASELINE, str(BASELINES / "fedrain.py"), *argv], tmp_path)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    results = tmp_path / "fedrain_ddpg_paper.json"
    first = json.loads(results.read_text())["rows"]
    uninterrupted = json.loads((tmp_path / (results.name + ".tmp")).read_text())["rows"]
    assert list(first) == ["ebm-v1/nofed"] and list(uninterrupted) == ["ebm-v1/nofed", "ebm-v3-a2/nofed"]
    resumed = load("fedrain").main(argv)["ddpg"]["rows"]
    assert resumed["ebm-v1/nofed"]["train_s"] == first["ebm-v1/nofed"]["train_s"]  # the saved row is kept, not retrained
    assert json.loads(results.read_text())["rows"] == resumed
    assert _without_timings(resumed) == _without_timings(uninterrupted)
