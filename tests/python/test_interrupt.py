"""Ctrl-C (SIGINT) during a long translate or train: the call stops soon,
KeyboardInterrupt is raised in Python, nothing crashes, and a stopped run
leaves a checkpoint it resumes from."""

import os
import signal
import subprocess
import sys
import textwrap
import time

PROGRAM = textwrap.dedent("""
    import sys, time, loom
    what, folder, source = sys.argv[1], sys.argv[2], sys.argv[3]
    try:
        if what == "translate":
            t = loom.Translator(folder, threads=1)
            lines = open(source).read().splitlines() * 400
            print("started", flush=True)
            t.translate(lines, beam=4, batch=4)
        else:
            print("started", flush=True)
            loom.train((source, source.replace(".src", ".tgt")), folder,
                       preset="tiny", steps=100000, max_tokens=256,
                       warmup=4, threads=1, log_every=1000)
        print("finished")
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        if what == "translate":
            # The translator still works after the interruption.
            print(t.translate(["alpha bravo"], beam=1)[0].hypotheses[0] is not None)
        sys.exit(3)
""")


def interrupt(what, folder, source, wait):
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", PROGRAM, what, folder,
                             source], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "started"
    time.sleep(wait)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err, time.monotonic() - sent


def test_ctrl_c_stops_a_long_translate(model_dir, corpus):
    code, out, err, took = interrupt("translate", model_dir,
                                     corpus["train"][0], 2.0)
    assert code == 3, (out, err)
    assert "interrupted" in out and "finished" not in out
    assert "True" in out
    assert took < 30, took


import pytest


@pytest.mark.parametrize("wait", [0.5, 8.0])
def test_ctrl_c_stops_a_long_run_after_a_checkpoint(corpus, tmp_path, wait):
    # At 0.5 s the model is still being compiled; at 8 s it trains.
    run_dir = str(tmp_path / "run")
    code, out, err, took = interrupt("train", run_dir, corpus["train"][0],
                                     wait)
    assert code == 3, (out, err)
    assert "interrupted" in out
    checkpoints = os.listdir(os.path.join(run_dir, "checkpoints"))
    assert any(name.startswith("step-") for name in checkpoints), checkpoints
