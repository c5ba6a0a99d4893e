"""``baselines/rice_n_climate_modules.py --learned-figure`` draws the learned policies' T_AT from
the records it reads (no training) and names the record that lacks a temperature path."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "baselines" / "rice_n_climate_modules.py"
YEARS = list(range(2015, 2120, 5))


def _module():
    spec = importlib.util.spec_from_file_location("rice_n_climate_modules", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _records(tmp_path, with_path=True):
    bau = next(iter(_module().POLICIES))
    ramp = {"dice": 0.05, "gru": 0.04}  # K per 5 years
    modules = {m: {"policies": {bau: {"temperature": {str(y): 0.85 + r * k for k, y in enumerate(YEARS)}}}} for m, r in ramp.items()}
    (tmp_path / "modules.json").write_text(json.dumps({"results": modules}))
    row = {"protocol": "bilateral"}
    if with_path:
        row |= {"years": YEARS, "temperature_path": [[0.85 + 0.02 * k + 0.1 * s for k in range(len(YEARS))] for s in range(3)]}
    (tmp_path / "learned.json").write_text(json.dumps({"results": [{"protocol": "none"}, row]}))
    return tmp_path / "modules.json", {"dice": tmp_path / "learned.json"}


def test_learned_figure_reads_the_temperature_paths(tmp_path):
    modules, learned = _records(tmp_path)
    shown = _module().learned_figure(modules, learned, tmp_path / "fig.png")
    assert (tmp_path / "fig.png").stat().st_size > 0
    assert shown["business as usual"] == pytest.approx({"dice": 0.85 + 0.05 * 17, "gru": 0.85 + 0.04 * 17})
    mean, low, high = shown["learned bilateral (seed mean, min, max)"]["dice"]
    np.testing.assert_allclose([mean, low, high], [0.85 + 0.34 + 0.1, 0.85 + 0.34, 0.85 + 0.34 + 0.2])


def test_learned_figure_names_a_record_without_temperature_path(tmp_path):
    modules, learned = _records(tmp_path, with_path=False)
    with pytest.raises(ValueError, match=r"learned\.json: the 'bilateral' row has no temperature_path"):
        _module().learned_figure(modules, learned, tmp_path / "fig.png")
