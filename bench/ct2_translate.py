#!/usr/bin/python3
"""CTranslate2 translating a file as `loom translate` does, timed the same way.

    bench/ct2_translate.py --model CT2_DIR --spm spm.model --input FILE
        [--beam 4] [--batch 32] [--threads 2] [--workers 1]
        [--compute-type float32]
        [--length-penalty 0] [--max-len-ratio 1.5] [--max-len 256]
        [--target-prefix FILE] [--sampling-topk K --sampling-topp P
         --sampling-temperature T --seed S] [--no-repeat-ngram-size N]
        [--time-runs N] > translations

CT2_DIR is bench/ct2_convert.py's conversion of a Loom model directory, and
spm.model that directory's vocabulary. Each line is split into pieces,
followed by </s> (as Loom's translator follows it by eos), cut to --max-len
tokens; the sentences are sorted by length (stable) into batches of --batch,
as Loom's translator batches them, and each batch is one translate_batch
call whose longest output is the longest of its sentences' limits
(ratio * tokens + 1, eos included, at most --max-len: Loom's limit per
sentence; CTranslate2 has one limit per call), each translation then cut to
its own sentence's limit. The best translations are printed in input order,
a blank line for a blank one.

With --workers W, W replicas of the model (CTranslate2's inter_threads, each
with threads / W intra_threads) translate the batches side by side: every
batch is submitted asynchronously and the results are collected in order,
as `loom translate --workers W` decodes them.

With --time-runs N, the same translation runs N more times and one JSON
line goes to stderr with the fields `loom translate --time-runs` prints
(seconds per run, their median, target tokens and sentences per second).
Tokens are counted as the vocabulary splits the text, as Loom counts them.

The decoding options as `loom translate` takes them: --target-prefix (one
line per input line, its pieces forced first; an empty line for none),
sampling (top-k 1 is the search; --seed sets CTranslate2's random seed once)
and --no-repeat-ngram-size, passed to translate_batch under CTranslate2's
names. A prefix counts on top of the length limit, as in Loom.

Length normalization: CTranslate2 divides a hypothesis' log-probability by
length^penalty. --length-penalty 0 (the default) ranks by log-probability
alone, as `loom translate --alpha 0` does.
"""

import argparse
import json
import os
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--spm", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--beam", type=int, default=4)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--compute-type", default="float32")
    p.add_argument("--length-penalty", type=float, default=0.0)
    p.add_argument("--max-len-ratio", type=float, default=1.5)
    p.add_argument("--max-len", type=int, default=256)
    p.add_argument("--time-runs", type=int, default=0)
    p.add_argument("--target-prefix")
    p.add_argument("--sampling-topk", type=int, default=1)
    p.add_argument("--sampling-topp", type=float, default=1.0)
    p.add_argument("--sampling-temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-repeat-ngram-size", type=int, default=0)
    a = p.parse_args()

    import ctranslate2
    import sentencepiece

    sp = sentencepiece.SentencePieceProcessor(model_file=a.spm)
    with open(a.input, encoding="utf-8") as f:
        lines = [line.rstrip("\r\n") for line in f]
    sources = {}
    for i, line in enumerate(lines):
        if line.strip():
            pieces = sp.encode(line, out_type=str)[:a.max_len - 1]
            sources[i] = pieces + ["</s>"]
    prefixes = {}
    if a.target_prefix:
        with open(a.target_prefix, encoding="utf-8") as f:
            for i, line in enumerate(f):
                line = line.rstrip("\r\n")
                if i in sources and line.strip():
                    prefixes[i] = sp.encode(line, out_type=str)
    order = sorted(sources, key=lambda i: len(sources[i]))
    batches = [order[s:s + a.batch] for s in range(0, len(order), a.batch)]

    def limit(i):
        return max(2, int(min(a.max_len_ratio * len(sources[i]) + 1
                              + len(prefixes.get(i, [])), a.max_len)))

    # The options beside the search's, under CTranslate2's names.
    controls = {}
    if prefixes:
        controls["target_prefix"] = None  # per batch, below
    if a.sampling_topk != 1:
        controls.update(sampling_topk=a.sampling_topk, sampling_topp=a.sampling_topp,
                        sampling_temperature=a.sampling_temperature)
        ctranslate2.set_random_seed(a.seed)
    if a.no_repeat_ngram_size > 0:
        controls["no_repeat_ngram_size"] = a.no_repeat_ngram_size

    def options(batch):
        o = dict(controls)
        if prefixes:
            o["target_prefix"] = [prefixes.get(i) for i in batch]
        return o

    translator = ctranslate2.Translator(
        a.model, device="cpu", compute_type=a.compute_type,
        inter_threads=a.workers,
        intra_threads=max(1, a.threads // a.workers))

    def translate():
        out = {}
        pending = [translator.translate_batch(
            [sources[i] for i in batch], beam_size=a.beam,
            max_batch_size=0, length_penalty=a.length_penalty,
            max_decoding_length=max(limit(i) for i in batch),
            return_scores=False, asynchronous=a.workers > 1, **options(batch))
            for batch in batches] if a.workers > 1 else None
        for n, batch in enumerate(batches):
            if pending is None:
                results = translator.translate_batch(
                    [sources[i] for i in batch], beam_size=a.beam,
                    max_batch_size=0, length_penalty=a.length_penalty,
                    max_decoding_length=max(limit(i) for i in batch),
                    return_scores=False, **options(batch))
            else:
                results = [r.result() for r in pending[n]]
            # Cut to the sentence's own limit, where Loom's search stops
            # it: for greedy decoding exactly Loom's output, since a
            # greedy choice does not depend on the steps after it.
            for i, r in zip(batch, results):
                out[i] = r.hypotheses[0][:limit(i)]
        return out

    best = translate()
    texts = [sp.decode_pieces(best[i]) if i in best else ""
             for i in range(len(lines))]
    sys.stdout.write("".join(t + "\n" for t in texts))
    sys.stdout.flush()
    if a.time_runs <= 0:
        return

    seconds = []
    for _ in range(a.time_runs):
        start = time.perf_counter()
        translate()
        seconds.append(time.perf_counter() - start)
    median = statistics.median(seconds)
    sentences = len(sources)
    target = sum(len(sp.encode(t)) for t in texts if t)
    record = {
        "system": "ctranslate2", "version": ctranslate2.__version__,
        "compute_type": a.compute_type,
        "cpu_isa": os.environ.get("CT2_FORCE_CPU_ISA", "default"),
        "beam": a.beam, "batch": a.batch,
        "threads": a.threads, "workers": a.workers,
        "length_penalty": a.length_penalty,
        "target_prefix": bool(prefixes), "sampling_topk": a.sampling_topk,
        "no_repeat_ngram_size": a.no_repeat_ngram_size,
        "sentences": sentences,
        "source_tokens": sum(len(s) - 1 for s in sources.values()),
        "target_tokens": target, "seconds": seconds,
        "seconds_median": median,
        "target_tokens_per_s": target / median,
        "sentences_per_s": sentences / median,
        "ms_per_sentence": 1000 * median / sentences,
    }
    sys.stderr.write(json.dumps(record, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
