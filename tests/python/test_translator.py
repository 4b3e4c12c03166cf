"""loom.Translator against `loom translate` on the same model and options,
shared between threads, and refusing bad input with the right exception."""

import os
import subprocess
import threading

import pytest

import loom
from conftest import run


def lines_of(path):
    with open(path) as f:
        return f.read().splitlines()


def cli_translate(loom_cli, model_dir, source, *flags):
    out = run([loom_cli, "translate", "--model", model_dir, "--input", source,
               "--threads", "1", *flags])
    return out.splitlines()


# Each case: the module's keyword arguments and `loom translate`'s flags.
CASES = [
    ({"beam": 1}, ["--beam", "1"]),
    ({"beam": 3, "nbest": 2}, ["--beam", "3", "--nbest", "2"]),
    ({"beam": 4, "alpha": 1.0, "length_penalty_power": True,
      "max_len_ratio": 2.0},
     ["--beam", "4", "--alpha", "1.0", "--length-penalty-form", "power",
      "--max-len-ratio", "2.0"]),
    ({"beam": 2, "repetition_penalty": 1.5, "no_repeat_ngram_size": 2,
      "min_length": 2, "max_length": 5, "batch": 3},
     ["--beam", "2", "--repetition-penalty", "1.5",
      "--no-repeat-ngram-size", "2", "--min-length", "2", "--max-length",
      "5", "--batch", "3"]),
    ({"beam": 1, "sampling_topk": 4, "sampling_temperature": 0.7,
      "seed": 11},
     ["--beam", "1", "--sampling-topk", "4", "--sampling-temperature", "0.7",
      "--seed", "11"]),
    ({"beam": 2, "forbidden": ["ah"], "batch_tokens": 40},
     ["--beam", "2", "--forbid", "ah", "--batch-tokens", "40"]),
]


@pytest.mark.parametrize("options,flags", CASES)
def test_translations_equal_loom_translate(loom_cli, model_dir, corpus,
                                          options, flags):
    source = corpus["valid"][0]
    expected = cli_translate(loom_cli, model_dir, source, *flags)
    t = loom.Translator(model_dir, threads=1)
    results = t.translate(lines_of(source), **options)
    got = [h for r in results for h in r.hypotheses]
    assert got == expected


def test_scores_equal_loom_translate(loom_cli, model_dir, corpus):
    source = corpus["valid"][0]
    expected = cli_translate(loom_cli, model_dir, source, "--beam", "3",
                             "--with-scores")
    t = loom.Translator(model_dir, threads=1)
    results = t.translate(lines_of(source), beam=3, return_scores=True)
    for r, line in zip(results, expected):
        score, text = line.split("\t", 1)
        assert r.hypotheses[0] == text
        assert r.scores[0] == float(score)  # printed with every digit
        assert r.log_probs[0] <= 0
    assert len(results) == len(expected)
    plain = t.translate(lines_of(source), beam=3)
    assert plain[0].scores == []  # not asked for


def test_translate_file_writes_what_loom_translate_prints(loom_cli, model_dir,
                                                          corpus, tmp_path):
    source = corpus["valid"][0]
    expected = run([loom_cli, "translate", "--model", model_dir, "--input",
                    source, "--threads", "1", "--beam", "2", "--nbest", "2",
                    "--with-scores"])
    out = tmp_path / "out.txt"
    t = loom.Translator(model_dir, threads=1)
    t.translate_file(source, out, beam=2, nbest=2, with_scores=True)
    assert out.read_text() == expected
    assert not os.path.exists(str(out) + ".partial")


def test_alignments_and_prefixes(model_dir):
    t = loom.Translator(model_dir, threads=1)
    [r] = t.translate(["alpha bravo delta"], beam=2, alignments=True)
    assert len(r.alignments) == 1
    for src, tgt in r.alignments[0]:
        assert 0 <= src and 0 <= tgt
    [p] = t.translate(["alpha bravo delta"], beam=2, target_prefixes=["ka"])
    assert p.hypotheses[0].startswith("ka")


def test_blank_sentence_translates_to_empty_text(model_dir):
    t = loom.Translator(model_dir, threads=1)
    results = t.translate(["", "alpha bravo", "   "], beam=2, nbest=2)
    assert results[0].hypotheses == ["", ""]
    assert results[2].hypotheses == ["", ""]
    assert len(results[1].hypotheses) == 2


def test_threads_sharing_one_translator_get_what_one_thread_gets(model_dir,
                                                                corpus):
    sentences = lines_of(corpus["valid"][0])
    t = loom.Translator(model_dir, threads=1)
    alone = [r.hypotheses for r in t.translate(sentences, beam=3, nbest=2)]
    found = {}

    def work(i):
        # Each thread its own slice, rotated so the calls interleave.
        mine = sentences[i:] + sentences[:i]
        found[i] = [r.hypotheses
                    for r in t.translate(mine, beam=3, nbest=2)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for i in range(4):
        assert found[i] == alone[i:] + alone[:i]


def test_a_precision_is_compiled_into_the_model_directory(model_dir, corpus,
                                                         loom_cli):
    source = corpus["valid"][0]
    expected = cli_translate(loom_cli, model_dir, source, "--beam", "2",
                             "--precision", "int8")
    t = loom.Translator(model_dir, threads=1, precision="int8")
    got = [r.hypotheses[0] for r in t.translate(lines_of(source), beam=2)]
    assert got == expected


@pytest.mark.parametrize("call,error,mentions", [
    (lambda t: t.translate("alpha bravo"), loom.InvalidArgumentError,
     "list of strings"),
    (lambda t: t.translate(["alpha", 3]), loom.InvalidArgumentError,
     "sentences[1]"),
    (lambda t: t.translate(["alpha"], beam=0), loom.InvalidArgumentError,
     "beam"),
    (lambda t: t.translate(["alpha"], nbest=5, beam=2),
     loom.InvalidArgumentError, "nbest"),
    (lambda t: t.translate(["alpha"], max_len_ratio=float("nan")),
     loom.InvalidArgumentError, "ratio"),
    (lambda t: t.translate(["alpha " * 5000]), loom.InvalidArgumentError,
     "more than the 256 the model takes"),
    (lambda t: t.translate(["a", "b"], target_prefixes=["x"]),
     loom.InvalidArgumentError, "prefixes"),
    (lambda t: t.translate_file("/nonexistent/in.txt", "/tmp/x"),
     loom.NotFoundError, "/nonexistent/in.txt"),
])
def test_bad_input_raises_with_a_message(model_dir, call, error, mentions):
    t = loom.Translator(model_dir, threads=1)
    with pytest.raises(error) as raised:
        call(t)
    assert mentions in str(raised.value)
    # The translator still works afterwards.
    assert t.translate(["alpha"], beam=1)[0].hypotheses


def test_bad_folders_raise(tmp_path, model_dir):
    with pytest.raises(loom.NotFoundError):
        loom.Translator(str(tmp_path / "none"))
    with pytest.raises(loom.InvalidArgumentError):
        loom.Translator(model_dir, threads=-1)
    with pytest.raises(loom.Error) as raised:
        loom.Translator(model_dir, device="tpu")
    assert "tpu" in str(raised.value)
