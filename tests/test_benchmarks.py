"""The benchmark scripts stay runnable and their JSON stays self-consistent (tiny configs;
speed itself is measured by running the scripts, not here)."""

import json
from pathlib import Path

import pytest

from benchmarks import bench_ebm
from jaxclimate.algos.off_policy import DDPGConfig, deterministic_update_flops

ROOT = Path(__file__).resolve().parents[1]
#: tests that compile the same tiny training programs (FedRAIN's two-agent DDPG, InvestESG's
#: paper_sb3 at hidden 8) run on one worker, so that the later ones load them from the suite's
#: compilation cache: the benchmark scripts' runs first, the GPU acceptance's dry run last
SAME_PROGRAMS = pytest.mark.xdist_group("bench-programs")


def test_bench_ebm_tiny_run_writes_consistent_json(tmp_path):
    payload = bench_ebm.main(["--envs", "1", "3", "--steps", "4", "--repeats", "2", "--ref-steps", "2", "--out", str(tmp_path)])
    files = list(tmp_path.glob("bench_ebm-*.json"))
    assert len(files) == 1
    saved = json.loads(files[0].read_text())
    assert saved["device"]["backend"] == "cpu"
    assert [r["n_envs"] for r in saved["jaxclimate"]] == [1, 3]
    for row in saved["jaxclimate"]:
        assert len(row["runs_s"]) == 2 and row["compile_s"] > 0
        assert row["env_steps_per_s"] == pytest.approx(row["n_envs"] * 4 / row["median_s"])
    ref = saved["reference"]
    if ref is not None:  # climlab installed (the dev extra)
        # Both are timings of a 2-step run: their order is noise on a busy CI machine, so only
        # their sign and the ratios derived from them are checked.
        assert ref["env_step_s"] > 0 and ref["model_step_s"] > 0
        row = saved["jaxclimate"][0]
        assert row["speedup_vs_env_step"] == pytest.approx(ref["env_step_s"] / (row["us_per_env_step"] * 1e-6))
        assert row["speedup_vs_model_step"] == pytest.approx(ref["model_step_s"] / (row["us_per_env_step"] * 1e-6))
    assert payload["jaxclimate"][0]["n_envs"] == 1


def test_bench_ebm_rejects_bad_arguments():
    with pytest.raises(SystemExit):
        bench_ebm.parse_args(["--steps", "0"])
    with pytest.raises(SystemExit):
        bench_ebm.parse_args(["--envs", "0"])


@pytest.mark.slow
def test_bench_climate_mitigation_tiny_run(tmp_path):
    from benchmarks import bench_climate_mitigation

    payload = bench_climate_mitigation.main(
        [
            "--envs",
            "2",
            "--steps",
            "35",
            "--repeats",
            "1",
            "--no-cicero",
            "--engines",  # one engine: the rows' code is the same for both (each engine is tested with its env)
            "gru",
            "--train-engines",
            "gru",
            "--train-steps",
            "140",
            "--train-envs",
            "4",
            "--out",
            str(tmp_path),
        ]
    )
    saved = json.loads(next(tmp_path.glob("bench_climate_mitigation-*.json")).read_text())
    assert [(r["engine"], r["n_envs"]) for r in saved["rows"]] == [("surrogate (gru)", 2), ("surrogate (gru), full window", 2)]
    assert [r["devices"] for r in saved["rows"]] == [1, 1]
    for row in saved["rows"]:
        assert row["env_steps_per_s"] == pytest.approx(row["n_envs"] * 35 / row["median_s"])
    assert [t["env_steps"] for t in saved["training"]] == [140] and saved["training"][0]["engine"] == "surrogate (gru)"
    assert payload["reference"] is None


@pytest.mark.slow
def test_bench_rice_n_tiny_run(tmp_path):
    from benchmarks import bench_rice_n

    payload = bench_rice_n.main(
        ["--envs", "2", "--protocols", "none", "bilateral", "--variants", "step", "step, factored", "--repeats", "1", "--out", str(tmp_path)]
    )
    rows = payload["rows"]
    assert [(r["protocol"], r["what"]) for r in rows] == [
        ("none", "step"),
        ("none", "step, factored"),
        ("bilateral", "step"),
        ("bilateral", "step, factored"),
    ]
    for row, steps in zip(rows, (20, 20, 60, 60)):
        assert row["env_steps_per_s"] == pytest.approx(2 * steps / row["median_s"])
        assert row["speedup_vs_original"] == pytest.approx(row["env_steps_per_s"] / bench_rice_n.ORIGINAL_ENV_STEPS_PER_S[row["protocol"]])
    assert len(list(tmp_path.glob("bench_rice_n-*.json"))) == 1
    with pytest.raises(SystemExit):
        bench_rice_n.parse_args(["--episodes", "0"])


def test_bench_rice_n_skips_peer_rows_without_a_checkout(tmp_path, monkeypatch, capsys):
    """No --jice / --pax and no $JAXCLIMATE_JICE / $JAXCLIMATE_PAX: no jice or pax rows, no
    ratios, a printed note for each, the usual file."""
    from benchmarks import bench_rice_n
    from benchmarks.peers import JICE_ENV_VAR, PAX_ENV_VAR

    monkeypatch.delenv(JICE_ENV_VAR, raising=False)
    monkeypatch.delenv(PAX_ENV_VAR, raising=False)
    payload = bench_rice_n.main(
        ["--envs", "1", "--protocols", "none", "--variants", "dynamics only", "--regions", "2", "--repeats", "1", "--out", str(tmp_path)]
    )
    out = capsys.readouterr().out
    for peer in ("jice", "pax"):
        assert payload[peer]["rows"] == [] and payload["config"][peer] is None
        assert f"ratio_vs_{peer}" not in payload["rows"][0]
        assert f"{peer} rows skipped" in out and f"{peer} rows skipped" in payload[peer]["note"]
    assert [(r["impl"], r["regions"]) for r in payload["rows"]] == [("jaxclimate", 2)]
    assert [f.name for f in tmp_path.glob("bench_rice_n*.json")] == ["bench_rice_n-cpu.json"]


def test_bench_rice_n_jice_root_accepts_the_repository_root_or_the_jice_folder(tmp_path, monkeypatch):
    from benchmarks.peers import JICE_ENV_VAR, jice_root

    monkeypatch.delenv(JICE_ENV_VAR, raising=False)
    assert jice_root(None) is None
    (tmp_path / "jice" / "environment").mkdir(parents=True)
    (tmp_path / "jice" / "environment" / "rice.py").touch()
    assert jice_root(tmp_path) == jice_root(tmp_path / "jice") == tmp_path.resolve()
    monkeypatch.setenv(JICE_ENV_VAR, str(tmp_path))
    assert jice_root(None) == tmp_path.resolve()
    with pytest.raises(FileNotFoundError):
        jice_root(tmp_path / "elsewhere")


def test_bench_rice_n_pax_root_accepts_the_repository_root_or_the_pax_folder(tmp_path, monkeypatch):
    from benchmarks.peers import PAX_ENV_VAR, pax_root

    monkeypatch.delenv(PAX_ENV_VAR, raising=False)
    assert pax_root(None) is None
    rice = tmp_path / "repo" / "pax" / "envs" / "rice"
    rice.mkdir(parents=True)
    with pytest.raises(FileNotFoundError):  # a pax without its Rice environment
        pax_root(tmp_path / "repo")
    (rice / "rice.py").touch()
    root = (tmp_path / "repo").resolve()
    assert pax_root(tmp_path / "repo") == pax_root(tmp_path / "repo" / "pax") == root
    monkeypatch.setenv(PAX_ENV_VAR, str(tmp_path / "repo"))
    assert pax_root(None) == root
    for wrong in (tmp_path, rice, tmp_path / "elsewhere"):  # above the checkout, inside the package, missing
        with pytest.raises(FileNotFoundError):
            pax_root(wrong)


@pytest.mark.slow
def test_bench_rice_n_training_tiny_run_without_jice(tmp_path, monkeypatch, capsys):
    from benchmarks import bench_rice_n_training
    from benchmarks.peers import JICE_ENV_VAR

    monkeypatch.delenv(JICE_ENV_VAR, raising=False)
    rows = bench_rice_n_training.main(
        ["--steps", "400", "--repeats", "1", "--layouts", "compact", "--regions", "3", "--profile", "--out", str(tmp_path)]
    )
    printed = capsys.readouterr().out
    assert "its rows are skipped" in printed and "random numbers" in printed
    (row,) = rows
    assert (row["impl"], row["regions"], row["env_steps"]) == ("jaxclimate", 3, 400) and "ratio_vs_jice" not in row
    assert row["env_steps_per_s"] == pytest.approx(400 / row["median_s"])
    kernels = row["kernel_s"]  # the profiled run: the network's matmuls and the policy's sampling
    assert (
        kernels["matmul"] > 0
        and kernels["random numbers"] > 0
        and kernels["total"] == pytest.approx(sum(kernels[k] for k in bench_rice_n_training.KINDS))
    )
    saved = json.loads((tmp_path / "bench_rice_n_training-cpu.json").read_text())
    assert saved["rows"][0]["observation_features"] == row["observation_features"] > 0
    # compile seconds: the whole program, and the run library's two programs (init, run) apart
    assert all(saved["rows"][0][k] > 0 for k in ("compile_s", "compile_cpu_s", "compile_init_s", "compile_run_s", "compile_run_cpu_s"))
    assert saved["device"]["cpu_affinity"]  # the cores it may run on (taskset pins say so)
    with pytest.raises(SystemExit):
        bench_rice_n_training.parse_args(["--steps", "100"])  # less than one update


@pytest.mark.slow
@SAME_PROGRAMS
def test_bench_fedrain_tiny_run(tmp_path):
    from benchmarks import bench_fedrain

    payload = bench_fedrain.main(
        ["--envs", "ebm-v3-a2", "--seeds", "1", "2", "--steps", "200", "--repeats", "1", "--hidden", "16", "--out", str(tmp_path)]
    )
    saved = json.loads(next(tmp_path.glob("bench_fedrain-*.json")).read_text())
    assert [(r["agents"], r["seeds"]) for r in saved["rows"]] == [(2, 1), (2, 2)]
    peak = saved["matmul_peak_gflop_s_per_device"]
    assert peak > 0
    config = DDPGConfig(hidden_size=16)
    flops = deterministic_update_flops(config, 48, 99)  # ebm-v3 with 2 agents: obs 48, act 99
    row_flops = 10 * 2 * ((20_000 - 1000) * (flops["per_agent_step"] - flops["act"]) + 20_000 * flops["act"])
    for row in saved["rows"]:
        assert row["agent_steps_per_s"] == pytest.approx(row["seeds"] * 2 * 200 / row["median_s"])
        assert row["mflop_per_agent_step"] == pytest.approx(flops["per_agent_step"] / 1e6)
        assert row["achieved_gflop_s"] == pytest.approx(row["agent_steps_per_s"] * flops["per_agent_step"] / 1e9)
        assert row["fraction_of_peak"] == pytest.approx(row["achieved_gflop_s"] / peak)
        assert row["row_tflop"] == pytest.approx(row_flops / 1e12)
        assert row["row_at_peak_minutes"] is None and row["projected_row_minutes"] is None  # a tiny network projects no row
    assert payload["rows"][0]["env"] == "ebm-v3-a2"


@pytest.mark.slow
@SAME_PROGRAMS
def test_suite_quick_run_writes_one_record_table_and_plot(tmp_path):
    """The suite's record, table and plot, and the InvestESG benchmark's own JSON it ran
    (its rows' arithmetic, the tiny training row projecting no paper budget)."""
    from benchmarks import run_all

    record = run_all.main(["--quick", "--only", "ebm", "invest-esg", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "suite-quick-cpu.json").read_text())
    assert saved["device"]["device_count"] >= 1 and saved["device"]["jax_version"] == record["device"]["jax_version"]
    assert [(r["env"], r["n_envs"]) for r in saved["rows"]] == [("ebm-v1", 1), ("ebm-v1", 2), ("invest-esg", 1), ("invest-esg", 2)]
    for row in saved["rows"]:
        slow, fast = row["spread_env_steps_per_s"]
        assert slow <= row["env_steps_per_s"] <= fast and row["compile_s"] > 0
    assert [r["env"] for r in saved["references"]] == ["invest-esg"]  # climlab is skipped in --quick
    assert saved["training"][0]["env"] == "invest-esg" and saved["training"][0]["env_steps_per_s"] > 0
    table = (tmp_path / "suite-quick-cpu.md").read_text()
    assert "| invest-esg | exp_default | 2 |" in table and "jax " + record["device"]["jax_version"] in table
    assert (tmp_path / "suite-quick-cpu.png").stat().st_size > 10_000
    # every benchmark script still wrote its own JSON beside the suite's
    assert {p.name for p in tmp_path.glob("bench_*.json")} == {"bench_ebm-float32-cpu.json", "bench_invest_esg-cpu.json"}
    invest = json.loads((tmp_path / "bench_invest_esg-cpu.json").read_text())
    rows = invest["env_rows"]
    assert [r["envs"] for r in rows] == [1, 2, 2] and "fresh" in rows[-1]["market"]
    for row in rows:
        assert row["env_steps_per_s"] == pytest.approx(row["envs"] * 100 / row["median_s"])
        assert row["x_numpy"] == pytest.approx(row["env_steps_per_s"] / row["numpy_env_steps_per_s"])
    (train,) = invest["training_rows"]
    assert train["preset"] == "paper_sb3" and train["hidden_sizes"] == [8]
    assert train["paper_budget_minutes"] is None  # no 3 × 3M projection from a tiny network
    assert train["env_steps_per_s"] == pytest.approx(1 * 500 * 1 / train["median_s"])  # 1 update of 500 env steps, 1 seed


def test_ippo_update_ceiling_tiny_run(tmp_path):
    from benchmarks import bench_ippo_update_ceiling

    payload = bench_ippo_update_ceiling.main(
        ["--learners", "2", "--num-envs", "4", "--minibatches", "2", "--num-steps", "5", "--epochs", "1", "--repeats", "2", "--out", str(tmp_path)]
    )
    saved = json.loads(next(tmp_path.glob("bench_ippo_update_ceiling-*.json")).read_text())
    assert saved["env_steps_per_s_ceiling"] == pytest.approx(4 * 5 / saved["update_s"]) and len(saved["runs_s"]) == 2
    assert payload["update_s"] == saved["update_s"] > 0


@pytest.mark.slow
@SAME_PROGRAMS
def test_gpu_acceptance_dry_run_writes_every_stage(tmp_path):
    """``python benchmarks/gpu_acceptance.py --dry-run``: every stage's code path at tiny
    sizes on the CPU (the gpu tier is collected and skipped), and one report of them all."""
    from benchmarks import gpu_acceptance

    assert gpu_acceptance.main(["--dry-run", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "gpu_acceptance.json").read_text())
    assert [s["stage"] for s in record["stages"]] == list(gpu_acceptance.STAGES)
    assert all(s["status"] == "passed" for s in record["stages"]), record["stages"]
    tier = gpu_acceptance.tier_summary(tmp_path / "tier.xml")
    assert tier["skipped"] >= 8 and tier["passed"] == tier["failed"] == 0
    roofline = json.loads((tmp_path / "roofline.json").read_text())
    assert roofline["complete"] and all(0 < r["fraction_of_roofline"] for r in roofline["rows"])
    training = json.loads((tmp_path / "training.json").read_text())
    assert len(training["rows"]) == 3 and all((r.get("env_steps_per_s") or r["agent_steps_per_s"]) > 0 for r in training["rows"])
    report = (tmp_path / "gpu_acceptance.md").read_text()
    assert "| training row |" in report and "| environment | parallel envs |" in report


def test_readme_quotes_the_saved_suite_records():
    """The README's CPU-vs-GPU table quotes the saved suite records (largest batch per row)."""
    readme = (ROOT / "README.md").read_text()
    for path, n_envs in (
        (ROOT / "benchmarks/results/suite-cpu.json", 4096),
        (ROOT / "benchmarks/results/accelerator-nvidia-h200/suite/suite-gpu.json", 65536),
    ):
        record = json.loads(path.read_text())
        rows = [r for r in record["rows"] if r["n_envs"] == n_envs]
        assert len(rows) == 6, path
        for row in rows:
            assert f"{row['env_steps_per_s']:,.0f}" in readme, (path.name, row["env"], row["variant"])
        for row in record["training"]:
            if "1 seed(s)" not in row["what"] and "ebm-v1" not in row["env"]:
                assert f"{row['env_steps_per_s']:,.0f}" in readme, (path.name, row["what"])


def test_gpu_acceptance_cuts_off_a_stage_at_its_limit(tmp_path, monkeypatch):
    """A stage that outlives its limit is killed with its children and recorded as timed out.
    No clock is read: the stage's child sleeps for an hour holding the stage's output open, and
    ``run_stage`` reads that output to its end, so it returns at all only if the whole process
    group was killed (otherwise the suite's timeout fails the test)."""
    import sys

    from benchmarks import gpu_acceptance

    sleeper = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)']); print('started', flush=True); time.sleep(3600)"
    monkeypatch.setattr(gpu_acceptance, "stage_command", lambda *a: [sys.executable, "-c", sleeper])
    result = gpu_acceptance.run_stage("info", tmp_path, True, False, limit=3)
    assert result["status"] == "timed out" and result["returncode"] < 0
    assert "started" in (tmp_path / "info.log").read_text()
    monkeypatch.setattr(gpu_acceptance, "stage_command", lambda *a: [sys.executable, "-c", "raise SystemExit(3)"])
    assert gpu_acceptance.run_stage("info", tmp_path, True, False, limit=30)["status"] == "failed"


def test_a_quick_suite_run_never_writes_over_the_records(monkeypatch, tmp_path):
    """``python -m benchmarks --quick`` (no --out) writes to results/quick/, not beside the records."""
    from benchmarks import run_all

    monkeypatch.setattr(run_all, "RESULTS_DIR", tmp_path / "results")
    ran = {}
    monkeypatch.setattr(run_all, "run_benchmark", lambda name, envs, quick, out, reuse: ran.setdefault("out", out) and ([], [], []))
    monkeypatch.setattr(run_all, "plot", lambda record, path: None)
    run_all.main(["--quick", "--only", "ebm"])
    assert ran["out"] == tmp_path / "results" / "quick"
    assert (tmp_path / "results" / "quick" / "suite-quick-cpu.json").exists()
    assert not list((tmp_path / "results").glob("*.json"))


@pytest.mark.slow
@pytest.mark.full_opt  # run time dominates: the EBM solvers step
def test_gpu_probes_ebm_solvers_agree_on_a_dry_run(tmp_path):
    from benchmarks import gpu_probes

    result = gpu_probes.main(["--out", str(tmp_path), "--dry-run", "--only", "ebm"])
    ebm = json.loads((tmp_path / "probes.json").read_text())["probes"]["ebm"]
    assert ebm == json.loads(json.dumps(result["probes"]["ebm"], default=str))
    assert [row["solver"] for row in ebm["solvers"]][0] == "lax.linalg.tridiagonal_solve"
    assert all(row["max_abs_diff"] < 1e-4 for row in ebm["solvers"])  # every method solves the same systems
    assert ebm["rollout_200_steps_sampled_actions_s"] > 0 and ebm["rollout_200_steps_held_action_s"] > 0


def test_interleaved_rounds_alternate_their_order_and_ratios_pair_rounds():
    import jax.numpy as jnp

    from benchmarks.harness import paired_ratio, time_interleaved

    calls = []
    programs = [(lambda name: (calls.append(name), jnp.zeros(()))[1], (name,)) for name in "ab"]
    runs = time_interleaved(programs, repeats=3)
    assert calls == ["a", "b", "a", "b", "b", "a", "a", "b"]  # warm-up, then rounds in alternating order
    assert [len(r) for r in runs] == [3, 3]
    # ours runs 2× the env steps of the peer in each round's time: rates 2, 1 and 4 times the peer's
    ratio = paired_ratio({"env_steps": 200, "runs_s": [1.0, 2.0, 0.5]}, {"env_steps": 100, "runs_s": [1.0, 1.0, 1.0]})
    assert ratio["median"] == 2.0 and ratio["q1"] <= 2.0 <= ratio["q3"]


def test_records_under_other_ynn_fusion_settings_get_their_own_name():
    from benchmarks.harness import xla_variant_suffix

    base = "--xla_cpu_multi_thread_eigen=false"
    assert xla_variant_suffix(base) == ""
    assert xla_variant_suffix(f"--xla_cpu_experimental_ynn_fusion_type= {base}") == "-ynn_off"
    assert xla_variant_suffix("--xla_cpu_experimental_ynn_fusion_type=LIBRARY_FUSION_TYPE_DOT") == "-ynn_dot"
    two = "--xla_cpu_experimental_ynn_fusion_type=LIBRARY_FUSION_TYPE_DOT,LIBRARY_FUSION_TYPE_REDUCE"
    assert xla_variant_suffix(two) == "-ynn_dot_reduce"
    assert xla_variant_suffix(f"{two} --xla_cpu_experimental_ynn_fusion_type=") == "-ynn_off"  # the last one wins


def test_suite_rice_n_rows_carry_the_peers_timed_in_the_same_run():
    from benchmarks import run_all

    def timed(**row):
        return row | {"n_envs": 4, "env_steps_per_s": 80.0, "median_s": 1.0, "compile_s": 2.0, "runs_s": [1.0, 2.0]}

    payload = {
        "rows": [timed(protocol="none", what="step + mask", regions=27)],
        "jice": {"rows": [timed(impl="jice", regions=20)], "note": ""},
        "pax": {"rows": [], "note": "pax rows skipped"},
    }
    rows, refs, _ = run_all._rice_rows(payload)
    assert [r["variant"] for r in rows] == ["none, step + mask", "jice (20 regions), its own step"]
    assert rows[1]["spread_env_steps_per_s"] == [40.0, 80.0]
    assert run_all._rice_rows({"rows": payload["rows"]})[0] == rows[:1]  # a payload without peers
    assert {r["env"] for r in refs} == {"rice-n"}


def test_xla_cpu_select_probe_times_one_update_in_each_form(tmp_path):
    """The probe's forms compute the same update (so their times compare like for like), and it
    records a row per regions x form x flags."""
    import jax.numpy as jnp

    from benchmarks import xla_cpu_select

    updates, L_0 = xla_cpu_select.forms(20)
    L = jnp.tile(L_0 * 1.5, (4, 1))
    grown = updates["no where"](L, None)
    assert not jnp.allclose(grown, L)
    assert jnp.array_equal(updates["where, per-env flag"](L, jnp.zeros(4, bool)), grown)
    assert jnp.array_equal(updates["where, per-env flag"](L, jnp.ones(4, bool)), jnp.broadcast_to(L_0, L.shape))
    assert jnp.array_equal(updates["where, per-element flag"](L, jnp.zeros((4, 20), bool)), grown)
    rows = xla_cpu_select.main(["--envs", "4", "--repeats", "1", "--out", str(tmp_path)])
    assert len(rows) == 12 and all(r["us_per_update"] > 0 for r in rows)
    assert json.loads((tmp_path / "xla_cpu_select-cpu.json").read_text())["rows"] == rows
