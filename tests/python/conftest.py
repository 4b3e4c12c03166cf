"""Fixtures of the Python module's tests: the `loom` binary beside the
module being tested, and a small model trained once per session (the tiny
preset on a synthetic corpus, as tests/e2e's do) that every translator test
shares."""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "..", "e2e", "Inputs")


def loom_bin():
    path = os.environ.get("LOOM_BIN_DIR")
    if not path:
        pytest.fail("LOOM_BIN_DIR must name the build's bin/ (ctest sets it)")
    return os.path.join(path, "loom")


def run(args, **kw):
    """Runs a command, failing the test with its output when it fails."""
    done = subprocess.run(args, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        pytest.fail("%s exited %d:\n%s%s" % (" ".join(map(str, args)),
                                             done.returncode, done.stdout,
                                             done.stderr))
    return done.stdout


def make_corpus(out, lines, seed):
    run([sys.executable, os.path.join(INPUTS, "make_corpus.py"), out,
         str(lines), str(seed)])
    return out + ".src", out + ".tgt"


@pytest.fixture(scope="session")
def loom_cli():
    return loom_bin()


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    train = make_corpus(str(root / "train"), 400, 1)
    valid = make_corpus(str(root / "valid"), 40, 2)
    return {"train": train, "valid": valid}


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory, corpus, loom_cli):
    """A `loom train` run directory of the tiny preset, 30 steps."""
    run_dir = str(tmp_path_factory.mktemp("model") / "run")
    run([loom_cli, "train", "--preset", "tiny", "--train", *corpus["train"],
         "--out", run_dir, "--max-tokens", "256", "--warmup", "4",
         "--steps", "30", "--log-every", "10", "--threads", "1"])
    return run_dir
