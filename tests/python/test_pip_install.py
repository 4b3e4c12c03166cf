"""`pip install --no-build-isolation .` from the checkout, into a fresh
virtual environment, with nothing from the network: the package imports
from another folder and translates (its tokenizer module found beside the
extension, not in the build tree)."""

import os
import subprocess
import sys

from conftest import run

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_pip_installs_the_package(tmp_path, model_dir):
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)])
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "LOOM_SENTENCEPIECE_SHIM")}
    env["LOOM_BUILD_DIR"] = os.path.dirname(os.environ["LOOM_BIN_DIR"])
    env["PIP_NO_INDEX"] = "1"  # offline: nothing may come from an index
    run([str(venv / "bin" / "pip"), "install", "-q", "--no-build-isolation",
         ROOT], env=env, cwd=str(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = run([str(venv / "bin" / "python"), "-c",
               "import loom, sys; print(loom.__file__); print(loom.__version__);"
               "t = loom.Translator(sys.argv[1], threads=1);"
               "print(len(t.translate(['alpha bravo'], beam=1)))",
               model_dir], env=env, cwd=str(elsewhere)).splitlines()
    assert out[0].startswith(str(venv))
    assert out[2] == "1"
