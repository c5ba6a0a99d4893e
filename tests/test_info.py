"""python -m jaxclimate.info: the device report and the throughput probe."""

import json

import pytest

from jaxclimate import info


def test_report_and_probe_write_consistent_json(tmp_path, capsys):
    out = tmp_path / "info.json"
    assert info.main(["--envs", "ebm-v1", "--seconds", "0.2", "--num-envs", "3", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["backend"] == "cpu" and report["devices"] and report["physics_precision"] == "highest"
    assert report["policy_matmuls_in_tf32"] is False  # no TF32 on a CPU
    (row,) = report["probe"]
    assert row["env"] == "ebm-v1" and row["num_envs"] == 3 and row["calls"] >= 1 and row["compile_s"] > 0
    assert row["env_steps_per_s"] == pytest.approx(3 * info.PROBE_STEPS / row["median_call_s"])
    printed = capsys.readouterr().out
    assert "backend: cpu" in printed and "ebm-v1" in printed and "matmul precision: physics highest" in printed


@pytest.mark.parametrize(
    "argv, match", [(["--envs", "no-such-env"], "--envs"), (["--num-envs", "0"], "--num-envs"), (["--seconds", "0"], "--seconds")]
)
def test_bad_arguments_name_the_flag(argv, match, capsys):
    with pytest.raises(SystemExit) as err:
        info.main(argv)
    assert err.value.code == 2 and match in capsys.readouterr().err


def test_check_backend_stops_when_a_gpu_is_present_but_jax_runs_on_the_cpu(monkeypatch):
    from jaxclimate import info

    monkeypatch.delenv("JAXCLIMATE_ALLOW_CPU", raising=False)
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    monkeypatch.setattr(info, "gpu_present", lambda: True)
    with pytest.raises(RuntimeError, match=r"JAX runs on the CPU.*jax\[cuda12\].*JAXCLIMATE_ALLOW_CPU=1"):
        info.check_backend()
    monkeypatch.setenv("JAXCLIMATE_ALLOW_CPU", "1")
    info.check_backend()  # asked to go on
    monkeypatch.delenv("JAXCLIMATE_ALLOW_CPU")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    info.check_backend()  # the CPU asked for (the test suite pins it, on GPU machines too)
    monkeypatch.setenv("JAX_PLATFORMS", "cuda,cpu")
    with pytest.raises(RuntimeError):
        info.check_backend()
    monkeypatch.setattr(info, "gpu_present", lambda: False)
    info.check_backend()  # no GPU: the CPU is right
