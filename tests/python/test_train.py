"""loom.train against `loom train` (and `loom-train` with a prepared folder):
the same seed gives the same losses; the callback sees every metrics
record; a callback that raises stops the run after a checkpoint; bad
arguments raise."""

import json
import os

import pytest

import loom
from conftest import run

STEPS = ["--max-tokens", "256", "--warmup", "4", "--steps", "12",
         "--log-every", "4", "--valid-every", "6", "--threads", "1",
         "--seed", "5"]
KWARGS = dict(max_tokens=256, warmup=4, steps=12, log_every=4, valid_every=6,
              threads=1, seed=5)


def records(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


def losses(recs):
    return [(r["step"], r["loss"]) for r in recs if r["type"] == "train"]


def test_training_from_python_equals_loom_train(loom_cli, corpus, tmp_path):
    cli_dir = str(tmp_path / "cli")
    run([loom_cli, "train", "--preset", "tiny", "--train", *corpus["train"],
         "--valid", *corpus["valid"], "--out", cli_dir, *STEPS])
    seen = []
    py_dir = str(tmp_path / "py")
    end = loom.train(corpus["train"], py_dir, preset="tiny",
                     valid=corpus["valid"], callback=seen.append, **KWARGS)
    assert end["step"] == 12
    assert os.path.exists(end["saved"])
    expected = losses(records(cli_dir))
    # Logged every 4 steps and before each validation.
    assert [s for s, _ in expected] == [4, 6, 8, 12]
    assert losses(records(py_dir)) == expected
    # The callback got each record the metrics file got, in order.
    assert seen == records(py_dir)
    assert [r["type"] for r in seen].count("valid") == 2
    # The run directory translates, as `loom train`'s does.
    t = loom.Translator(py_dir, threads=1)
    assert t.translate(["alpha bravo"], beam=1)[0].hypotheses[0] is not None


def test_training_a_prepared_folder_equals_loom_train(loom_cli, corpus,
                                                      tmp_path):
    prepared = str(tmp_path / "prepared")
    run([loom_cli, "prepare", "--preset", "tiny", "--train", *corpus["train"],
         "--out", prepared, "--max-tokens", "256", "--warmup", "4"])
    cli_dir = str(tmp_path / "cli")
    run([loom_cli, "train", "--preset", "tiny", "--train", *corpus["train"],
         "--out", cli_dir, *STEPS])
    py_dir = str(tmp_path / "py")
    loom.train(corpus["train"], py_dir, prepared=prepared, steps=12,
               log_every=4, valid_every=6, threads=1, seed=5)
    assert losses(records(py_dir)) == losses(records(cli_dir))


def test_a_callback_that_raises_stops_the_run_after_a_checkpoint(corpus,
                                                                 tmp_path):
    class Enough(Exception):
        pass

    def stop_at_8(record):
        if record["type"] == "train" and record["step"] >= 8:
            raise Enough("seen enough")

    run_dir = tmp_path / "stopped"
    with pytest.raises(Enough):
        loom.train(corpus["train"], str(run_dir), preset="tiny",
                   callback=stop_at_8, **dict(KWARGS, steps=40))
    checkpoints = os.listdir(run_dir / "checkpoints")
    assert any(name.startswith("step-") for name in checkpoints)
    # And the run resumes from there.
    end = loom.train(corpus["train"], str(run_dir), resume=True,
                     steps=12, threads=1)
    assert end["step"] == 12


def test_bad_training_arguments_raise(corpus, tmp_path):
    with pytest.raises(loom.InvalidArgumentError):
        loom.train(corpus["train"], str(tmp_path / "a"))  # no model
    with pytest.raises(loom.InvalidArgumentError):
        loom.train(corpus["train"][:1], str(tmp_path / "b"), preset="tiny")
    with pytest.raises(loom.Error) as raised:
        loom.train(("/no/such.src", "/no/such.tgt"), str(tmp_path / "c"),
                   preset="tiny", steps=1)
    assert "/no/such.src" in str(raised.value)
    with pytest.raises(loom.InvalidArgumentError):
        loom.train(corpus["train"], str(tmp_path / "d"), preset="tiny",
                   max_tokens=4)
    with pytest.raises(loom.Error) as raised:
        loom.train(corpus["train"], str(tmp_path / "e"), preset="nope",
                   steps=1)
    assert "nope" in str(raised.value)
    with pytest.raises(loom.Error):
        loom.train(corpus["train"], str(tmp_path / "f"),
                   prepared=str(tmp_path / "missing"), steps=1)
    with pytest.raises(loom.InvalidArgumentError) as raised:
        loom.train(corpus["train"], str(tmp_path / "g"),
                   prepared=str(tmp_path / "missing"), max_tokens=512)
    assert "max-tokens" in str(raised.value)
