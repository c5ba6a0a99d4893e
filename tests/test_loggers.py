"""Loggers: the same scalars, under the same names, in metrics.jsonl, TensorBoard and W&B."""

import glob
import json
import math
import struct

import pytest

from jaxclimate import loggers, train
from tests.test_train_cli import TINY


def test_scalars_of_names_every_metric_and_leaves_gaps_out():
    row = {
        "update": 3,
        "env_steps": 420,
        "countries": {"episode_return": [[1.0, 2.0]], "episode_return_mean": 1.5, "actor_loss": -0.25},
        "investors": {"episode_return": [[math.nan]], "episode_return_mean": math.nan, "value_loss": 2.0},
        "episode": {"temperature": [[1.0, 3.0], [2.0, None]], "empty": [math.nan]},
    }
    assert loggers.scalars_of(row) == {
        "countries/episode_return_mean": 1.5,
        "countries/actor_loss": -0.25,
        "investors/value_loss": 2.0,
        "episode/temperature": 2.0,
    }


def test_unknown_or_missing_loggers_are_named(monkeypatch):
    assert loggers.parse_loggers("jsonl, tensorboard,jsonl") == ["jsonl", "tensorboard"]
    with pytest.raises(ValueError, match="unknown logger 'mlflow'"):
        loggers.parse_loggers("jsonl,mlflow")
    monkeypatch.setitem(loggers.LOGGERS, "wandb", ("no_such_module_here", "wandb"))
    with pytest.raises(ValueError, match=r"pip install 'jaxclimate\[wandb\]'"):
        loggers.parse_loggers("wandb")


def tensorboard_scalars(run_dir) -> dict[str, dict[int, float]]:
    """Scalars of the run's TensorBoard event files (TFRecord framing around Event protos)."""
    from tensorboardX.proto import event_pb2

    found: dict[str, dict[int, float]] = {}
    for path in glob.glob(str(run_dir / "tensorboard" / "events.out.tfevents.*")):
        raw, pos = open(path, "rb").read(), 0
        while pos < len(raw):
            (length,) = struct.unpack("<Q", raw[pos : pos + 8])
            event = event_pb2.Event.FromString(raw[pos + 12 : pos + 12 + length])
            pos += 12 + length + 4
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    found.setdefault(value.tag, {})[event.step] = value.simple_value
    return found


def wandb_history(run_dir) -> list[dict[str, float]]:
    """History rows of the run's offline W&B file (leveldb-log framing: 32 KiB blocks of records
    with a 7-byte header, after a 7-byte file header)."""
    from wandb.proto import wandb_internal_pb2

    (path,) = glob.glob(str(run_dir / "wandb" / "offline-run-*" / "run-*.wandb"))
    raw, pos, pending, rows = open(path, "rb").read(), 7, b"", []
    while pos + 7 <= len(raw):
        if 32768 - pos % 32768 < 7:
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack("<IHB", raw[pos : pos + 7])
        pending += raw[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a whole record, or the last piece of one
            record = wandb_internal_pb2.Record.FromString(pending)
            pending = b""
            if record.WhichOneof("record_type") == "history":
                rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item})
    return rows


@pytest.mark.slow
def test_tensorboard_and_wandb_receive_the_jsonl_scalars(tmp_path, monkeypatch):
    pytest.importorskip("tensorboardX")
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    train.run(train.build_options(TINY + ["--run-dir", str(tmp_path), "--no-plots", "--logger", "jsonl,tensorboard,wandb"]))
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    expected = {(name, row["env_steps"]): value for row in rows for name, value in loggers.scalars_of(row).items()}
    assert len(rows) == 8 and any(name.endswith("episode_return_mean") for name, _ in expected)
    board = {(name, step): v for name, steps in tensorboard_scalars(tmp_path).items() for step, v in steps.items()}
    assert board.keys() == expected.keys()
    assert all(board[k] == pytest.approx(expected[k], rel=1e-6) for k in expected)  # TensorBoard keeps float32
    history = {(name, row["_step"]): v for row in wandb_history(tmp_path) for name, v in row.items() if not name.startswith("_")}
    assert history == pytest.approx(expected)
