"""python -m jaxclimate.train: options, chunked training, resume == uninterrupted, outputs."""

import dataclasses
import json

import jax
import numpy as np
import pytest

from jaxclimate import make, train
from jaxclimate._cli import start_cpu_processes

TINY = [
    "--network",
    "mlp",
    "--total-timesteps",
    "1120",
    "--num-envs",
    "4",
    "--set",
    "num_minibatches=2",
    "--set",
    "update_epochs=1",
    "--chunks",
    "4",
    "--checkpoint-every",
    "1",
    "--reservoir",
    "6",
    "--quiet",
]


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """The uninterrupted run both resume tests end at: its result and its metrics lines."""
    run_dir = tmp_path_factory.mktemp("whole")
    result = train.run(train.build_options(TINY + ["--run-dir", str(run_dir), "--no-plots"]))
    return result, (run_dir / "metrics.jsonl").read_text().splitlines()


@pytest.mark.slow
@pytest.mark.xdist_group("train-cli-whole")  # one worker trains the module's uninterrupted run once
def test_resume_gives_the_uninterrupted_result(whole, tmp_path):
    whole, lines_whole = whole
    part_dir = tmp_path / "part"
    first = train.run(train.build_options(TINY + ["--run-dir", str(part_dir), "--no-plots"]), stop_after_chunks=2)
    assert first["interrupted"] and first["chunks_done"] == 2
    assert len((part_dir / "metrics.jsonl").read_text().splitlines()) == 4  # 8 updates in 4 chunks of 2
    resumed = train.run(train.build_options(["--resume", str(part_dir), "--quiet"]))
    for a, b in zip(jax.tree_util.tree_leaves(whole["state"]), jax.tree_util.tree_leaves(resumed["state"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    lines_part = (part_dir / "metrics.jsonl").read_text().splitlines()
    assert lines_whole == lines_part and len(lines_whole) == 8
    summary = json.loads((part_dir / "summary.json").read_text())
    assert summary["updates"] == 8 and summary["env_steps_per_seed"] == 8 * 4 * 35
    # both programs' compile seconds are recorded; the training program's is part of the session's wall time
    assert set(summary["compile_seconds"]) == {"init", "training"} and min(summary["compile_seconds"].values()) > 0
    assert summary["compile_seconds"]["training"] < summary["wall_seconds_this_session"]
    # killed before its first checkpoint (a preempted job restarted with --resume): from the beginning
    killed = tmp_path / "killed"
    killed.mkdir()
    saved = json.loads((part_dir / "config.json").read_text())
    (killed / "config.json").write_text(json.dumps(dict(saved, run_dir=str(killed))))
    restarted = train.run(train.build_options(["--resume", str(killed), "--quiet"]))
    for a, b in zip(jax.tree_util.tree_leaves(whole["state"]), jax.tree_util.tree_leaves(restarted["state"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert (killed / "metrics.jsonl").read_text().splitlines() == lines_whole
    assert set(summary["mean_levers"]) == {"energy", "methane", "agriculture", "adaptation"}
    with np.load(part_dir / "trajectories.npz") as f:
        assert f["emissions"].shape == (6, 50, 5) and f["temperatures"].shape == (6, 50)
    for png in ("returns.png", "levers.png", "temperature.png"):
        assert (part_dir / png).stat().st_size > 10_000


@pytest.mark.slow
@pytest.mark.xdist_group("train-cli-whole")
def test_ctrl_c_keeps_the_chunk_that_finished_on_the_device(whole, tmp_path, monkeypatch):
    """Ctrl-C while a finished chunk's metrics are read (its state already donated to the new
    one): that chunk is kept and checkpointed although no checkpoint was due, and resuming
    gives the uninterrupted result."""
    whole, lines_whole = whole
    from jaxclimate.run import training as run_training

    calls, metric_lines = [], run_training.metric_lines

    def interrupted_once(*args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return metric_lines(*args)

    monkeypatch.setattr(run_training, "metric_lines", interrupted_once)
    part_dir = tmp_path / "part"
    first = train.run(train.build_options(TINY + ["--checkpoint-every", "10", "--run-dir", str(part_dir), "--no-plots"]))
    assert first["interrupted"] and first["chunks_done"] == 2
    assert len((part_dir / "metrics.jsonl").read_text().splitlines()) == 4
    monkeypatch.setattr(run_training, "metric_lines", metric_lines)
    resumed = train.run(train.build_options(["--resume", str(part_dir), "--quiet"]))
    for a, b in zip(jax.tree_util.tree_leaves(whole["state"]), jax.tree_util.tree_leaves(resumed["state"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert (part_dir / "metrics.jsonl").read_text().splitlines() == lines_whole


@pytest.mark.slow
def test_two_seeds_in_one_program(tmp_path):
    result = train.run(train.build_options(TINY + ["--seeds", "2", "--chunks", "1", "--run-dir", str(tmp_path), "--no-plots"]))
    row = json.loads((tmp_path / "metrics.jsonl").read_text().splitlines()[-1])
    returns = np.array(row["countries"]["episode_return"])
    assert returns.shape == (2, 4) and not np.allclose(returns[0], returns[1])
    assert result["stored_episodes"] == 12


def test_option_errors(tmp_path, capsys):
    with pytest.raises(SystemExit):
        train.build_options(["--set", "nonsense=1"])
    assert "unknown IPPOConfig field 'nonsense'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        train.build_options(["--set", "gamma=2"])
    assert "IPPOConfig.gamma" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        train.build_options(["--env", "no-such-env"])
    with pytest.raises(SystemExit):
        train.build_options(["--resume", str(tmp_path / "missing")])
    with pytest.raises(SystemExit):
        train.build_options(["--help"])
    assert "--resume" in capsys.readouterr().out
    options = train.build_options(["--set", "lr=3e-4", "--set", "anneal_lr=false", "--env-set", "damage_coefficient=0.006"])
    assert options.config["lr"] == 3e-4 and options.config["anneal_lr"] is False
    assert options.env_overrides["damage_coefficient"] == 0.006 and options.config["network"] == "lstm"


DDPG_TINY = [
    "--env",
    "ebm-v3-a2",
    "--algo",
    "ddpg",
    "--fed",
    "1",
    "--seeds",
    "2",
    "--total-timesteps",
    "600",
    "--chunks",
    "3",
    "--checkpoint-every",
    "1",
    "--set",
    "learning_starts=50",
    "--set",
    "hidden_size=16",
    "--set",
    "batch_size=16",
    "--quiet",
]


@pytest.mark.slow
def test_ddpg_federated_resume_gives_the_uninterrupted_result(tmp_path):
    """The same CLI trains off-policy learners: FedAvg every episode, two seeds, and --resume
    after an interruption ends bit-identical to an uninterrupted run (buffers included)."""
    whole = train.run(train.build_options(DDPG_TINY + ["--run-dir", str(tmp_path / "whole"), "--no-plots"]))
    first = train.run(train.build_options(DDPG_TINY + ["--run-dir", str(tmp_path / "part")]), stop_after_chunks=1)
    assert first["interrupted"] and first["chunks_done"] == 1
    resumed = train.run(train.build_options(["--resume", str(tmp_path / "part"), "--quiet"]))
    for a, b in zip(jax.tree_util.tree_leaves(whole["state"]), jax.tree_util.tree_leaves(resumed["state"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    lines = (tmp_path / "part" / "metrics.jsonl").read_text().splitlines()
    assert lines == (tmp_path / "whole" / "metrics.jsonl").read_text().splitlines() and len(lines) == 3
    row = json.loads(lines[-1])
    assert np.shape(row["bands"]["episode_return"]) == (2, 2) and row["bands"]["critic_loss"] > 0
    summary = json.loads((tmp_path / "part" / "summary.json").read_text())
    assert summary["algo"] == "ddpg" and len(summary["band_rmse"]["mean"]) == 6 and summary["env_steps_per_seed"] == 600
    assert (tmp_path / "part" / "profile.png").stat().st_size > 10_000
    with pytest.raises(SystemExit):
        train.build_options(["--env", "ebm-v1", "--algo", "ddpg", "--network", "mlp"])


def test_training_on_the_host_callback_engine_is_refused_unless_asked(capsys):
    pytest.importorskip("ciceroscm")
    with pytest.raises(SystemExit):
        train.build_options(["--engine", "cicero"])
    err = capsys.readouterr().err
    assert "--engine cicero-jax" in err and "--allow-host-callback" in err
    options = train.build_options(["--engine", "cicero", "--allow-host-callback"])
    assert options.env_overrides["engine"] == "cicero"


def test_gpu_presets_fill_an_accelerator_with_the_same_updates(monkeypatch):
    """``<preset>-gpu``: 16× the envs and steps (the same number of updates), minibatches of
    the same size; chosen by default only where JAX runs on an accelerator."""
    from jaxclimate.algos.ippo import IPPOConfig

    base, gpu = (IPPOConfig(**train.build_options(["--preset", p]).config) for p in ("paper", "paper-gpu"))
    assert gpu.num_envs == 16 * base.num_envs and gpu.num_updates == base.num_updates
    assert gpu.num_envs // gpu.num_minibatches == base.num_envs // base.num_minibatches
    sb3, sb3_gpu = (IPPOConfig(**train.build_options(["--env", "invest-esg", "--preset", p]).config) for p in ("paper_sb3", "paper_sb3-gpu"))
    assert sb3_gpu.minibatch_size == sb3.minibatch_size and sb3_gpu.num_updates == sb3.num_updates
    assert train.build_options([]).preset == "paper"  # on the CPU
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert train.build_options([]).preset == "paper-gpu"
    assert train.build_options(["--total-timesteps", "250000"]).preset == "paper"  # sized by the user: as asked
    assert train.build_options(["--env", "ebm-v1", "--algo", "ddpg"]).preset == "fedrain"  # off-policy: no -gpu


BAD_FLAGS = [
    (["--env-set", "damage_coefficient=abc"], "parameter damage_coefficient must be a number"),
    (["--algo", "ddpg"], "--algo ddpg needs a bounded 1-D Box action space; climate-mitigation-i"),
    (["--fed", "5"], "--fed does not apply to ippo"),
    (["--set", "gamma=2"], "IPPOConfig.gamma must be in [0, 1]"),
    (["--seeds", "0"], "--seeds must be >= 1"),
    (["--env", "no-such-env"], "--env must be one of"),
    (["--preset", "nope"], "--preset: climate-mitigation-i has"),
    (["--total-timesteps", "10"], "IPPOConfig.total_timesteps must be >="),
    (["--run-dir", "FILE"], "is a file, not a folder"),
    (["--algo", "nope"], "argument --algo: invalid choice: 'nope'"),
    (["--scenario", "iii"], "scenario must be one of"),
    (["--engine", "nope"], "engine"),
    (["--seed", "abc"], "argument --seed: invalid int value: 'abc'"),
    (["--seed", "-1"], "--seed must be >= 0, got -1"),
    (["--num-envs", "0"], "IPPOConfig.num_envs must be an integer >= 1"),
    (["--network", "transformer"], "argument --network: invalid choice: 'transformer'"),
    (["--set", "nope=1"], "--set: unknown IPPOConfig field 'nope'"),
    (["--set", "lr"], "--set: expected KEY=VALUE"),
    (["--env-set", "nope=1"], "nope"),
    (["--rollout-set", "nope=1"], "climate-mitigation-i takes no rollout options, got ['nope']"),
    (["--chunks", "0"], "--chunks must be >= 1, got 0"),
    (["--checkpoint-every", "0"], "--checkpoint-every must be >= 1, got 0"),
    (["--reservoir", "-1"], "--reservoir must be >= 0, got -1"),
    (["--resume", "NOWHERE"], "--resume: "),
    (["--logger", "mlflow"], "--logger: unknown logger 'mlflow'"),
]


@pytest.mark.parametrize("argv, says", BAD_FLAGS, ids=[" ".join(a) for a, _ in BAD_FLAGS])
def test_a_bad_flag_exits_2_with_one_line_and_leaves_nothing(argv, says, tmp_path, capsys):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    argv = [str(a_file) if a == "FILE" else str(tmp_path / "nowhere") if a == "NOWHERE" else a for a in argv]
    run_dir = ["--run-dir", str(tmp_path / "run")] if "--run-dir" not in argv else []
    with pytest.raises(SystemExit) as exit_:
        train.build_options(argv + run_dir)
    assert exit_.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("python -m jaxclimate.train: error:") and says in last, last
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("argv", [["--cpu-processes", "0"], ["--cpu-processes", "2", "--process-id", "1"]])
def test_bad_cpu_processes_exit_2_before_starting_anything(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        start_cpu_processes(argv, "jaxclimate.train")
    assert exit_.value.code == 2 and "--cpu-processes must be >= 1" in capsys.readouterr().err


def test_a_non_finite_chunk_stops_the_run_and_keeps_the_last_finite_checkpoint(tmp_path, monkeypatch, capsys):
    """Parameters poisoned with NaN in the third of four chunks: the run stops there with one
    line naming the chunk, the seed and the quantity, and its checkpoints stop at chunk 2."""
    import jax.numpy as jnp

    from jaxclimate.run import training as run_training

    real_make_run = run_training.make_run

    def poisoned_make_run(options):
        env, env_params, config, trainer, report = real_make_run(options)

        def run(rs, n):
            rs, metrics = trainer.run(rs, n)
            poison = jnp.where(rs.update > 5, jnp.nan, 0.0)  # 2 updates per chunk, run one at a time: from chunk 3's end on
            return rs.replace(params=jax.tree_util.tree_map(lambda x: x + poison, rs.params)), metrics

        return env, env_params, config, trainer._replace(run=run), report

    monkeypatch.setattr(run_training, "make_run", poisoned_make_run)
    result = train.run(train.build_options(TINY + ["--run-dir", str(tmp_path), "--no-plots"]))
    assert result["non_finite"] == ("error: non-finite training state in chunk 3, seed 0: training stopped; the last finite checkpoint is chunk 2")
    assert result["non_finite"] in capsys.readouterr().err
    assert sorted(int(p.name) for p in (tmp_path / "checkpoints").iterdir() if p.name.isdigit()) == [1, 2]
    assert not (tmp_path / "summary.json").exists()


def test_the_run_says_its_real_length_and_records_every_setting():
    options = train.build_options(TINY + ["--total-timesteps", "1000", "--run-dir", "unused"])
    from jaxclimate.run.assemble import make_run, resolved_config, steps_line

    env, env_params, config, *_ = make_run(options)
    line = steps_line(config, options)
    assert "7 updates × 140 env steps = 980 env steps per seed" in line and "1,000 rounded down" in line
    resolved = json.loads(json.dumps(resolved_config(config, env_params, options), default=str))
    assert resolved["env_steps_per_seed"] == 980 and resolved["algo_config"]["total_timesteps"] == 1000
    assert resolved["algo_config"]["gamma"] == config.gamma and resolved["algo_config"]["network"] == "mlp"  # defaults included
    assert set(resolved["env_params"]) == {f.name for f in dataclasses.fields(env_params)}


@pytest.mark.slow
def test_list_names_every_environment_and_its_presets(capsys):
    with pytest.raises(SystemExit) as stop:
        train.build_options(["--list"])
    out = capsys.readouterr().out
    assert stop.value.code == 0
    from jaxclimate import registered_envs

    assert all(f"  {env_id} " in out for env_id in registered_envs())
    assert "ippo: paper, paper-gpu" in out and "ddpg: fedrain, fed05, fed10" in out
    listed = {line.split()[0]: line for line in out.split("\nnot listed:")[0].splitlines()[1:] if line.strip()}
    assert "ddpg:" not in listed["climate-mitigation-i"] and "apg:" in listed["climate-mitigation-levers"]  # what trains, only
    why = out.split("\nnot listed:\n")[1]
    assert "ddpg on climate-mitigation, climate-mitigation-i" in why and "bounded 1-D Box" in why  # one line per algorithm


def test_the_summary_says_when_no_episode_ended_instead_of_printing_nans(capsys):
    """A run shorter than one episode per rollout has no episode return: one line says so."""
    from jaxclimate.run.finish import print_summary as _print_summary

    class Quiet:
        def summary_lines(self, summary):
            return []

    env, _ = make("rice-n", regions=[0, 5, 12])  # regions named by the paper's IDs, besides their interface names
    summary = {"env": "e", "algo": "ippo", "updates": 1, "env_steps_per_seed": 560, "seeds": 1, "wall_seconds_this_session": 1.0}
    _print_summary(summary | {"final_return": {"regions": [1.5, float("nan"), 2.0]}}, env, Quiet())
    out = capsys.readouterr().out
    assert "[regions] mean episode return" in out and out.count("nan") == 1  # a partial group keeps its rows
    rows = {line.split(")")[0] + ")": line.split()[-1] for line in out.splitlines() if line.startswith("regions_")}
    assert rows == {
        "regions_0 (region 1)": "1.5000",
        "regions_1 (region 6)": "nan",
        "regions_2 (region 13)": "2.0000",
    }  # as plots and interfaces name them
    _print_summary(summary | {"final_return": {"regions": [float("nan")] * 3}}, env, Quiet())
    assert "[regions] no episode ended during the last updates" in capsys.readouterr().out


def test_resume_refuses_flags_that_would_change_the_run(tmp_path, capsys):
    """--resume continues a run with its own settings: a flag that would change it is refused by
    name (one line), flags of the session (--quiet, --no-plots) are taken."""
    options = train.build_options(TINY + ["--run-dir", str(tmp_path)])
    (tmp_path / "config.json").write_text(json.dumps(options.recorded()))
    with pytest.raises(SystemExit) as stop:
        train.build_options(["--resume", str(tmp_path), "--env", "rice-n", "--algo", "ippo", "--total-timesteps", "99999"])
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1 and err.endswith("(see --help)")
    assert "--resume: --env, --total-timesteps would change the run (climate-mitigation, ippo)" in err  # --algo is the run's own
    resumed = train.build_options(["--resume", str(tmp_path), "--quiet", "--no-plots"])
    assert resumed.resume and resumed.config == options.config and resumed.no_plots
