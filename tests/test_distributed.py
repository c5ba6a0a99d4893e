"""Training over several devices and several processes (jaxclimate.distributed, train CLI).

The multi-device and multi-process runs start fresh Python processes: XLA reads the host
device count once, and jax.distributed joins a process for its lifetime.
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxclimate import distributed, train
from jaxclimate._xla import CPU_SAFE_XLA_FLAGS

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "--network",
    "mlp",
    "--total-timesteps",
    "560",
    "--num-envs",
    "4",
    "--set",
    "num_minibatches=2",
    "--set",
    "update_epochs=1",
    "--chunks",
    "2",
    "--reservoir",
    "6",
    "--quiet",
    "--no-plots",
    "--seeds",
    "4",
]


def _env(host_devices: int) -> dict:
    # the suite's own flags (conftest.py: CPU-safe, compile-time optimisation) plus the device count
    flags = os.environ.get("XLA_FLAGS") or CPU_SAFE_XLA_FLAGS
    env = dict(os.environ, XLA_FLAGS=f"{flags} --xla_force_host_platform_device_count={host_devices}")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for name in (distributed.ENV_COORDINATOR, distributed.ENV_NUM_PROCESSES, distributed.ENV_PROCESS_ID):
        env.pop(name, None)
    return env


def _train(args: list[str], host_devices: int = 1) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "jaxclimate.train", *args],
        env=_env(host_devices),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait(*procs: subprocess.Popen, timeout: float = 240) -> list[str]:
    outputs = []
    for p in procs:
        out, _ = p.communicate(timeout=timeout)
        assert p.returncode == 0, out[-3000:]
        outputs.append(out)
    return outputs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _assert_rows_close(got: list[dict], want: list[dict]) -> None:
    """The same metric lines, every number equal to float32 rounding: a process holding one
    device compiles its own program, which XLA may fuse unlike the two-device one (losses
    differ in the 9th digit on some machines, not on others)."""
    assert [r["update"] for r in got] == [r["update"] for r in want]
    for a, b in zip(got, want):
        leaves_a, tree_a = jax.tree_util.tree_flatten(a)
        leaves_b, tree_b = jax.tree_util.tree_flatten(b)
        assert tree_a == tree_b
        np.testing.assert_allclose(np.asarray(leaves_a, np.float64), np.asarray(leaves_b, np.float64), rtol=1e-5, atol=1e-7)


def test_mesh_size_divides_the_runs_and_spans_every_process():
    assert distributed.mesh_size(8, 4) == 4 and distributed.mesh_size(6, 4) == 3 and distributed.mesh_size(1, 8) == 1
    assert distributed.mesh_size(8, 4, processes=2) == 4 and distributed.mesh_size(6, 8, processes=2) == 6
    with pytest.raises(ValueError, match="divisible by the process count"):
        distributed.mesh_size(3, 2, processes=2)


def test_initialize_needs_a_complete_process_description(monkeypatch):
    for name in (distributed.ENV_COORDINATOR, distributed.ENV_NUM_PROCESSES, distributed.ENV_PROCESS_ID):
        monkeypatch.delenv(name, raising=False)
    assert distributed.initialize() is False  # no coordinator: a single-process run
    with pytest.raises(ValueError, match="process count"):
        distributed.initialize("127.0.0.1:1", num_processes=2)
    with pytest.raises(ValueError, match="0..1"):
        distributed.initialize("127.0.0.1:1", num_processes=2, process_id=2)


@pytest.fixture(scope="module")
def two_device_run(tmp_path_factory) -> tuple[Path, str]:
    """TINY in one process holding two host devices (two seeds on each), run once for the
    module's two tests: a one-device run and a two-process run match it to rounding."""
    run_dir = tmp_path_factory.mktemp("two-devices") / "run"
    (output,) = _wait(_train(TINY + ["--run-dir", str(run_dir)], host_devices=2))
    return run_dir, output


@pytest.mark.slow
def test_seeds_over_two_devices_equal_one_device(tmp_path, two_device_run):
    """4 seeds, two per device, against the same 4 seeds vmapped on one device: the same
    numbers to float32 rounding (XLA compiles a batch of 2 and of 4 with different kernels)."""
    two_dir, two_output = two_device_run
    train.run(train.build_options(TINY + ["--run-dir", str(tmp_path / "one")]))
    assert "run directory" in two_output
    one_rows, two_rows = _rows(tmp_path / "one"), _rows(two_dir)
    assert len(one_rows) == len(two_rows) == 4
    for a, b in zip(one_rows, two_rows):
        np.testing.assert_allclose(b["countries"]["episode_return"], a["countries"]["episode_return"], rtol=1e-5)
        assert np.shape(a["countries"]["episode_return"]) == (4, 4)
    summary = json.loads((two_dir / "summary.json").read_text())
    assert summary["devices"] == {"count": 2, "processes": 1, "kind": "cpu"}


@pytest.mark.slow
def test_two_processes_equal_one_process_and_resume(tmp_path, two_device_run):
    """Two processes on loopback (gloo collectives), interrupted after a chunk and resumed,
    end with the metrics of one process holding both devices (to float32 rounding); process 0 alone writes.
    (MLP: several XLA:CPU devices in one process can deadlock with recurrent networks, see
    the README; separate processes run them fine.)"""
    single_dir, _ = two_device_run
    run_dir = tmp_path / "multi"
    port = _free_port()
    stop_after_one_chunk = (
        "import sys; from jaxclimate import _cli, train; argv = sys.argv[1:]; _cli.prepare_process(argv); "
        "train.run(train.build_options(argv), stop_after_chunks=1)"
    )
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                stop_after_one_chunk,
                *TINY,
                "--run-dir",
                str(run_dir),
                "--coordinator",
                f"127.0.0.1:{port}",
                "--num-processes",
                "2",
                "--process-id",
                str(i),
            ],
            env=_env(1),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    _wait(*procs)
    assert len(_rows(run_dir)) == 2 and not (run_dir / "summary.json").exists()
    port = _free_port()
    resumed = [
        _train(["--resume", str(run_dir), "--quiet", "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id", str(i)])
        for i in range(2)
    ]
    out0, out1 = _wait(*resumed)
    _assert_rows_close(_rows(run_dir), _rows(single_dir))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["devices"] == {"count": 2, "processes": 2, "kind": "cpu"} and summary["updates"] == 4
    assert "learned policy" in out0 and "learned policy" not in out1  # the summary is printed once


def test_a_recurrent_network_on_several_host_devices_is_refused_with_the_way_out(tmp_path):
    proc = _train([*TINY, "--network", "lstm", "--run-dir", str(tmp_path / "run")], host_devices=4)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "use --cpu-processes 4 instead" in out, out[-2000:]
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_cpu_processes_train_a_recurrent_network_twice_without_hanging(tmp_path):
    """The path the refusal points to: ``--cpu-processes 2`` with an LSTM, two runs of three
    chunks each, each run bounded (a hang fails the test at its timeout); both runs end with
    the same metrics. (Several host devices in one process hung in 1 of 3 such runs with the
    CPU-safe flags, docs/guide.md. Six compiled chunks run across the two processes here, as
    many as three runs of two chunks did, at two start-ups instead of three.)"""
    tiny_lstm = (
        "--env ebm-v2-a2 --network lstm --set hidden_size=8 --total-timesteps 120 --num-envs 2 --set num_steps=20 "
        "--set num_minibatches=1 --set update_epochs=1 --chunks 3 --seeds 2 --quiet --no-plots --cpu-processes 2"
    ).split()
    rows = []
    for attempt in range(2):
        run_dir = tmp_path / f"run{attempt}"
        _wait(_train([*tiny_lstm, "--run-dir", str(run_dir)], host_devices=2), timeout=120)
        rows.append(_rows(run_dir))
        assert json.loads((run_dir / "summary.json").read_text())["devices"]["processes"] == 2
    assert len(rows[0]) == 3 and all(r == rows[0] for r in rows)
