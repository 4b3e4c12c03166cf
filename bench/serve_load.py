"""Load on loom-serve from wrk, against the same sentences offline.

  serve_load.py --folder EXPORTED --sentences VAL.en [--clients 1,8,64]
                [--seconds 20] [--threads 2] [--workers 1] [--beam 4]
                [--soak-seconds 600]
                [--json OUT.jsonl]

For each client count, wrk (bench/serve_load.lua: one sentence per request,
posted to /v1/translate over keep-alive connections) loads loom-serve in each
of --modes: batching across requests in whole batches (the default), in
flight (--in-flight: sentences join a batch as others end), and without
batching across requests (--no-cross-batching).
Each run starts after a 3 s warm-up and once the server is idle again (the
warm-up's last batch, whose clients have gone, would otherwise take the
start of the window), and reports requests (= sentences) and target tokens
per second, the p50/p95/p99 latency, the batches the server formed (mean
sentences and padded tokens, from /metrics) and the share of the window its
workers spent decoding. Beside them, loom-translate translates the same
sentences offline (--time-runs) with the same threads and search: the
throughput the server is measured against, the mean of a run just before
and one just after each pair (the machine's speed drifts), and the offline
peak resident memory. With --soak-seconds, a last run at the largest client
count samples the server's resident memory every 10 s and counts every
answer that is not 200.

wrk and the server share the machine: run nothing else beside it.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


class Server:
    def __init__(self, folder, flags):
        self.proc = subprocess.Popen(
            [os.path.join(folder, "loom-serve"), "--port", "0"] + flags,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = None
        for line in self.proc.stderr:
            m = re.search(r"listening on http://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
            if "ready in" in line:
                break
            if "error" in line:
                raise SystemExit(line)
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def metrics(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port) as r:
            text = r.read().decode()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                values[name] = float(value)
        return values

    def wait_idle(self, seconds=120):
        """Until nothing waits and no worker decodes: a batch left over from
        the warm-up's clients, who have gone, would otherwise take the start
        of the measured window."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            m = self.metrics()
            if m.get("loom_queue_sentences", 0) == 0 and m.get("loom_busy_workers", 0) == 0:
                return
            time.sleep(0.05)
        raise SystemExit("the server did not become idle after the warm-up")

    def rss_mib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        self.proc.terminate()
        return self.proc.wait(60)


def wrk(port, clients, seconds, sentences):
    threads = 1 if clients == 1 else 2
    out = subprocess.run(
        ["wrk", "-t", str(threads), "-c", str(clients), "-d", "%ds" % seconds,
         "--timeout", "30s", "-s", os.path.join(HERE, "serve_load.lua"),
         "http://127.0.0.1:%d/v1/translate" % port],
        env=dict(os.environ, LOOM_SENTENCES=sentences),
        check=True, capture_output=True, text=True).stdout
    line = [l for l in out.splitlines() if l.startswith("{")][-1]
    return json.loads(line)


def delta(after, before, name):
    return after.get(name, 0.0) - before.get(name, 0.0)


MODES = {"in-flight": ("in flight", ["--in-flight"]),
         "whole": ("whole batches", []),
         "off": ("off", ["--no-cross-batching"])}


def load_run(args, clients, mode, seconds):
    flags = ["--threads", str(args.threads), "--workers", str(args.workers),
             "--beam", str(args.beam)] + MODES[mode][1]
    server = Server(args.folder, flags + args.server_flags)
    try:
        # Warm-up: the first batches size the decoder's memory.
        wrk(server.port, clients, 3, args.sentences)
        server.wait_idle()
        before = server.metrics()
        result = wrk(server.port, clients, seconds, args.sentences)
        after = server.metrics()
        batches = delta(after, before, "loom_batch_sentences_count")
        result.update({
            "system": " ".join(["loom-serve"] + MODES[mode][1]),
            "batching": MODES[mode][0],
            "clients": clients,
            "sentences_per_s": result["requests"] / result["duration_s"],
            "target_tokens_per_s":
                delta(after, before, "loom_translated_tokens_total") / result["duration_s"],
            "batch_sentences_mean":
                delta(after, before, "loom_batch_sentences_sum") / max(batches, 1),
            "batch_tokens_mean":
                delta(after, before, "loom_batch_tokens_sum") / max(batches, 1),
            # The share of the window the workers spent decoding.
            "busy": delta(after, before, "loom_batch_decode_seconds_sum")
                    / (result["duration_s"] * args.workers),
            "rss_mib": server.rss_mib(),
        })
    finally:
        assert server.stop() == 0
    return result


def offline(args):
    """loom-translate on the same sentences: its --time-runs JSON line, and
    its peak resident memory."""
    p = subprocess.Popen(
        [os.path.join(args.folder, "loom-translate"), "--input", args.sentences,
         "--threads", str(args.threads), "--workers", str(args.workers),
         "--beam", str(args.beam), "--time-runs", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit("loom-translate failed: " + err)
    record = json.loads([l for l in err.splitlines() if l.startswith("{")][-1])
    record["system"] = "loom-translate (offline)"
    record["max_rss_mib"] = usage.ru_maxrss / 1024
    return record


def soak(args, clients):
    server = Server(args.folder, ["--threads", str(args.threads), "--workers",
                                  str(args.workers), "--beam", str(args.beam)]
                    + args.server_flags)
    samples = []
    result = {}
    def load():
        result.update(wrk(server.port, clients, args.soak_seconds, args.sentences))
    t = threading.Thread(target=load)
    start = time.time()
    t.start()
    while t.is_alive():
        samples.append((round(time.time() - start), server.rss_mib()))
        t.join(10)
    metrics = server.metrics()
    assert server.stop() == 0
    errors = {k: v for k, v in metrics.items()
              if k.startswith("loom_http_requests_total") and 'status="200"' not in k}
    return {"system": "soak", "clients": clients, "seconds": args.soak_seconds,
            "requests": result["requests"], "non200": result["non200"],
            "socket_errors": result["socket_errors"], "p99_ms": result["p99_ms"],
            "rss_mib": samples, "non200_by_status": errors}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", required=True, help="a translator folder (loom export)")
    parser.add_argument("--sentences", required=True, help="sentences, one per line")
    parser.add_argument("--clients", default="1,8,64")
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1,
                        help="decoders, the threads split between them (both sides)")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--soak-seconds", type=int, default=0)
    parser.add_argument("--server-flags", default="", help="more loom-serve flags")
    parser.add_argument("--json", help="append every record here")
    parser.add_argument("--modes", default="whole,off",
                        help="of " + ", ".join(MODES))
    args = parser.parse_args()
    args.server_flags = args.server_flags.split()
    clients = [int(c) for c in args.clients.split(",")]

    records = []
    print("beam %d, %d threads, %d workers; offline: loom-translate on the same sentences "
          "just before and just after each pair of runs (their mean)"
          % (args.beam, args.threads, args.workers))
    print("| clients | batching | sentences/s | tokens/s | offline sentences/s | vs offline "
          "| p50 ms | p95 ms | p99 ms | sentences/batch | tokens/batch | workers busy | non-200 |")
    print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    # The machine's speed drifts: each client count's runs are held against
    # offline runs just before and just after them.
    modes = args.modes.split(",")
    before = offline(args)
    records.append(before)
    for c in clients:
        pair = [load_run(args, c, mode, args.seconds) for mode in modes]
        after = offline(args)
        records.append(after)
        base = (before["sentences_per_s"] + after["sentences_per_s"]) / 2
        for r in pair:
            r["offline_sentences_per_s"] = base
            records.append(r)
            print("| %d | %s | %.1f | %.0f | %.1f | %.2f | %.1f | %.1f | %.1f | %.1f | %.0f | %.0f%% | %d |" % (
                c, r["batching"],
                r["sentences_per_s"], r["target_tokens_per_s"], base,
                r["sentences_per_s"] / base, r["p50_ms"], r["p95_ms"], r["p99_ms"],
                r["batch_sentences_mean"], r["batch_tokens_mean"], 100 * r["busy"],
                r["non200"] + r["socket_errors"]), flush=True)
        before = after
    print("offline peak resident memory: %.0f MiB" % max(r["max_rss_mib"] for r in records
                                                        if "max_rss_mib" in r))
    if args.soak_seconds:
        s = soak(args, max(clients))
        records.append(s)
        rss = s["rss_mib"]
        print("soak: %d clients, %d s, %d requests, %d non-200, %d socket errors, p99 %.1f ms; "
              "RSS MiB at 60 s %.1f, at the end %.1f (min %.1f, max %.1f after 60 s)" % (
                  s["clients"], s["seconds"], s["requests"], s["non200"], s["socket_errors"],
                  s["p99_ms"], next((m for t, m in rss if t >= 60), rss[-1][1]), rss[-1][1],
                  min(m for t, m in rss if t >= 60) if s["seconds"] > 60 else rss[-1][1],
                  max(m for t, m in rss if t >= 60) if s["seconds"] > 60 else rss[-1][1]))
    if args.json:
        with open(args.json, "a") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
