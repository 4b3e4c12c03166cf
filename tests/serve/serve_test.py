"""End-to-end tests of loom-serve and `loom serve` on 127.0.0.1.

  serve_test.py --folder EXPORTED --model-dir RUN --loom LOOM --inputs SRC
                --work DIR

EXPORTED is a translator folder (`loom export`), RUN the model directory it
came from, SRC sentences one per line. Every server starts on an ephemeral
port. The translations must be exactly what the folder's loom-translate
prints for the same sentences and options, however many clients ask at once.
Each check prints its name; the first failure raises and exits non-zero.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ARGS = None


class Server:
    """A server process; its port is read from its 'listening on' line."""

    def __init__(self, argv, wait_ready=True):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.listening = threading.Event()
        self.port = None
        threading.Thread(target=self._read, daemon=True).start()
        if not self.listening.wait(60):
            self.proc.kill()
            raise AssertionError("no 'listening on' line: " + "".join(self.lines))
        if wait_ready:
            self.wait_ready()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            m = re.search(r"listening on http://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self.listening.set()

    def wait_ready(self, seconds=120):
        deadline = time.time() + seconds
        while time.time() < deadline:
            status, _, _ = self.request("GET", "/health/ready")
            if status == 200:
                return
            assert self.proc.poll() is None, "exited: " + "".join(self.lines)
            time.sleep(0.05)
        raise AssertionError("not ready after %d s" % seconds)

    def request(self, method, path, body=None, headers=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            headers = dict(headers or {}, **{"Content-Type": "application/json"})
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        conn.close()
        return r.status, dict(r.getheaders()), data

    def json(self, method, path, body=None, headers=None):
        status, hdrs, data = self.request(method, path, body, headers)
        return status, hdrs, json.loads(data)

    def stop(self, sig=signal.SIGTERM, seconds=30):
        self.proc.send_signal(sig)
        code = self.proc.wait(seconds)
        return code

    def metric(self, name, headers=None):
        status, _, data = self.request("GET", "/metrics", headers=headers)
        assert status == 200
        total = 0.0
        for line in data.decode().splitlines():
            if line.startswith(name):
                total += float(line.split()[-1])
        return total


def serve(*flags, wait_ready=True):
    return Server([os.path.join(ARGS.folder, "loom-serve"), "--port", "0",
                   "--threads", "1"] + list(flags), wait_ready)


def reference(*flags):
    """What the folder's loom-translate prints for the inputs."""
    out = subprocess.run([os.path.join(ARGS.folder, "loom-translate"),
                          "--input", ARGS.inputs, "--threads", "1"] + list(flags),
                         check=True, capture_output=True, text=True).stdout
    return out.split("\n")[:-1]


def check(name):
    def wrap(fn):
        CHECKS.append((name, fn))
        return fn
    return wrap


CHECKS = []
SENTENCES = []


def v1(server, sentences, **options):
    status, _, body = server.json("POST", "/v1/translate",
                                  dict(sentences=sentences, **options))
    assert status == 200, (status, body)
    return body["translations"]


@check("health, languages, metrics and the page")
def _(s):
    status, _, body = s.json("GET", "/health")
    assert status == 200 and body == {"live": True, "ready": True, "status": "ready"}, body
    assert s.request("GET", "/health/live")[0] == 200
    assert s.request("GET", "/health/ready")[0] == 200
    status, hdrs, data = s.request("HEAD", "/health")
    assert status == 200 and data == b"" and int(hdrs["Content-Length"]) > 0, hdrs
    status, _, body = s.json("GET", "/languages")
    assert status == 200 and body == [{"code": "en", "name": "en", "targets": ["de"]}], body
    status, hdrs, page = s.request("GET", "/")
    assert status == 200 and hdrs["Content-Type"].startswith("text/html"), hdrs
    assert b"<textarea" in page and b"v1/translate" in page
    assert b"http://" not in page and b"https://" not in page, "the page loads nothing external"
    v1(s, SENTENCES[:3])
    status, hdrs, text = s.request("GET", "/metrics")
    text = text.decode()
    assert status == 200 and hdrs["Content-Type"].startswith("text/plain"), hdrs
    for name in ["loom_http_requests_total{endpoint=\"/v1/translate\",status=\"200\"}",
                 "loom_http_request_duration_seconds_bucket",
                 "loom_batch_sentences_bucket", "loom_batch_tokens_bucket",
                 "loom_queue_sentences", "loom_busy_workers", "loom_translated_tokens_total",
                 "loom_tokens_per_second", "loom_model_load_seconds", "loom_workers 1"]:
        assert name in text, name + " missing from /metrics"
    assert s.metric("loom_translated_sentences_total") >= 3


@check("/v1/translate gives what loom-translate prints")
def _(s):
    got = [t["hypotheses"][0]["text"] for t in v1(s, SENTENCES)]
    assert got == reference(), "beam 4"
    got = [t["hypotheses"][0]["text"] for t in v1(s, SENTENCES, beam=1)]
    assert got == reference("--beam", "1"), "greedy"
    controls = dict(no_repeat_ngram_size=2, repetition_penalty=1.3, min_length=2,
                    max_length=9, forbidden=["bravo", "ah be"])
    got = [t["hypotheses"][0]["text"] for t in v1(s, SENTENCES, **controls)]
    assert got == reference("--no-repeat-ngram-size", "2", "--repetition-penalty", "1.3",
                            "--min-length", "2", "--max-length", "9", "--forbid", "bravo",
                            "--forbid", "ah be"), "controls"
    prefixes = ["ah be" if i % 3 == 0 else "" for i in range(len(SENTENCES))]
    path = os.path.join(ARGS.work, "prefixes.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(p + "\n" for p in prefixes))
    got = [t["hypotheses"][0]["text"] for t in v1(s, SENTENCES, target_prefix=prefixes)]
    assert got == reference("--target-prefix", path), "target prefixes"
    assert all(g.startswith("ah be") for g, p in zip(got, prefixes) if p), got
    got = [t["hypotheses"][0]["text"] for t in
           v1(s, SENTENCES, beam=1, sampling_topk=0, sampling_temperature=1.5, seed=4)]
    assert got == reference("--beam", "1", "--sampling-topk", "0",
                            "--sampling-temperature", "1.5", "--seed", "4"), "sampling"
    got = [t["hypotheses"][0]["text"] for t in
           v1(s, SENTENCES, length_penalty_form="power", length_penalty=1.0)]
    assert got == reference("--length-penalty-form", "power", "--alpha", "1"), "power"
    found = v1(s, SENTENCES, beam=3, nbest=2, return_scores=True)
    expected = reference("--beam", "3", "--nbest", "2")
    got = [h["text"] for t in found for h in t["hypotheses"]]
    assert got == expected, "beam 3, nbest 2"
    for t in found:
        scores = [h["score"] for h in t["hypotheses"]]
        assert scores == sorted(scores, reverse=True) and all(x <= 0 for x in scores), scores
        assert all("log_prob" in h for h in t["hypotheses"])
    assert "score" not in v1(s, SENTENCES[:1])[0]["hypotheses"][0]
    # Alignments as loom-translate --with-alignments prints them.
    found = v1(s, SENTENCES, return_alignments=True, alignment_layer=-1)
    expected = reference("--with-alignments", "--alignment-layer", "-1")
    got = ["%s\t%s" % (h["text"], " ".join("%d-%d" % (a, b) for a, b in h["alignment"]))
           for t in found for h in t["hypotheses"]]
    assert got == expected, ("alignments", got[:3], expected[:3])
    assert "alignment" not in v1(s, SENTENCES[:1])[0]["hypotheses"][0]
    # A blank sentence is an empty translation.
    assert v1(s, ["", "  "]) == [{"hypotheses": [{"text": ""}]}] * 2


@check("LibreTranslate's /translate: text, lists, alternatives, forms")
def _(s):
    expected = reference()
    text = "\n".join(SENTENCES[:3])
    status, _, body = s.json("POST", "/translate",
                             {"q": text, "source": "en", "target": "de", "format": "text"})
    assert status == 200 and body == {"translatedText": "\n".join(expected[:3])}, body
    status, _, body = s.json("POST", "/translate",
                             {"q": SENTENCES[:4], "source": "auto", "target": "de"})
    assert status == 200 and body == {"translatedText": expected[:4]}, body
    status, _, body = s.json("POST", "/translate",
                             {"q": SENTENCES[0], "source": "en", "target": "de",
                              "alternatives": 2})
    nbest = reference("--beam", "4", "--nbest", "3")
    assert status == 200 and body == {"translatedText": nbest[0],
                                      "alternatives": nbest[1:3]}, (body, nbest[:3])
    from urllib.parse import urlencode
    status, _, data = s.request("POST", "/translate",
                                urlencode({"q": SENTENCES[1], "source": "en", "target": "de"}),
                                {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200 and json.loads(data) == {"translatedText": expected[1]}, data
    # A CR before the line break is dropped, as loom-translate drops it.
    status, _, body = s.json("POST", "/translate",
                             {"q": SENTENCES[0] + "\r\n" + SENTENCES[1], "target": "de"})
    assert body["translatedText"] == expected[0] + "\n" + expected[1], body


@check("many clients at once get exactly loom-translate's translations, in order")
def _(s):
    expected = reference()
    def one(i):
        return v1(s, [SENTENCES[i]])[0]["hypotheses"][0]["text"]
    def several(i):
        part = SENTENCES[i:i + 7]
        return [t["hypotheses"][0]["text"] for t in v1(s, part)]
    with ThreadPoolExecutor(24) as pool:
        singles = pool.map(one, range(len(SENTENCES)))
        groups = pool.map(several, range(0, len(SENTENCES), 7))
        singles, groups = list(singles), list(groups)
    assert singles == expected
    assert [t for g in groups for t in g] == expected
    # The batches mixed requests: some held more sentences than the largest
    # request's 7.
    batches = s.metric("loom_batch_sentences_count")
    small = s.metric('loom_batch_sentences_bucket{le="8"}')
    assert small < batches, (small, batches)


@check("bad requests: 400 naming the field, 404, 405, 413")
def _(s):
    cases = [
        ("POST", "/v1/translate", "{not json", 400, "malformed JSON"),
        ("POST", "/v1/translate", "[1, 2]", 400, "JSON object"),
        ("POST", "/v1/translate", {"sentences": "a b"}, 400, "sentences must be a list"),
        ("POST", "/v1/translate", {"sentences": ["a", 3]}, 400, "sentences[1] must be a string"),
        ("POST", "/v1/translate", {"text": ["a"]}, 400, "unknown field 'text'"),
        ("POST", "/v1/translate", {}, 400, "missing field 'sentences'"),
        ("POST", "/v1/translate", {"sentences": ["a"], "beam": "4"}, 400, "beam must be an integer"),
        ("POST", "/v1/translate", {"sentences": ["a"], "beam": 0}, 400, "beam must be at least 1"),
        ("POST", "/v1/translate", {"sentences": ["a"], "beam": 2, "nbest": 3}, 400, "nbest must be between"),
        ("POST", "/v1/translate", {"sentences": ["a"], "beam": 100000}, 400, "needs more rows"),
        ("POST", "/v1/translate", {"sentences": ["a"], "length_penalty": -1}, 400, "length_penalty"),
        ("POST", "/v1/translate", {"sentences": ["a"], "max_length_ratio": 0}, 400, "max_length_ratio"),
        ("POST", "/v1/translate", {"sentences": ["a"], "return_scores": 1}, 400, "return_scores"),
        ("POST", "/v1/translate", {"sentences": ["a"], "return_alignments": 1}, 400,
         "return_alignments"),
        ("POST", "/v1/translate", {"sentences": ["a"], "return_alignments": True,
                                   "alignment_layer": 9}, 400, "alignment layer 9"),
        ("POST", "/v1/translate", {"sentences": ["a\nb"]}, 400, "line break"),
        ("POST", "/v1/translate", {"sentences": ["a"], "repetition_penalty": 0}, 400,
         "repetition_penalty must be above 0"),
        ("POST", "/v1/translate", {"sentences": ["a"], "no_repeat_ngram_size": -1}, 400,
         "no_repeat_ngram_size"),
        ("POST", "/v1/translate", {"sentences": ["a"], "min_length": 4, "max_length": 2}, 400,
         "minimum length 4 is above"),
        ("POST", "/v1/translate", {"sentences": ["a"], "forbidden": "x"}, 400,
         "forbidden must be a list"),
        ("POST", "/v1/translate", {"sentences": ["a"], "forbidden": [3]}, 400,
         "forbidden[0] must be a string"),
        ("POST", "/v1/translate", {"sentences": ["a", "b"], "target_prefix": ["x"]}, 400,
         "one per sentence"),
        ("POST", "/v1/translate", {"sentences": ["a"], "length_penalty_form": "cubic"}, 400,
         "length_penalty_form must be"),
        ("POST", "/v1/translate", {"sentences": ["a"], "sampling_topk": 5}, 400, "beam 1"),
        ("POST", "/v1/translate", {"sentences": ["a"], "beam": 1, "sampling_topk": 5,
                                   "sampling_topp": 2}, 400, "top-p"),
        ("POST", "/v1/translate", {"sentences": ["a"], "seed": -1}, 400, "seed"),
        ("POST", "/translate", {"source": "en"}, 400, "missing q"),
        ("POST", "/translate", {"q": 5}, 400, "q must be a string or a list"),
        ("POST", "/translate", {"q": ["a", None]}, 400, "q[1] must be a string"),
        ("POST", "/translate", {"q": "a", "format": "html"}, 400, "format 'html'"),
        ("POST", "/translate", {"q": "a", "alternatives": "two"}, 400, "alternatives must be an integer"),
        ("POST", "/translate", {"q": "a", "source": "fr", "target": "de"}, 400, "source 'fr'"),
        ("POST", "/translate", {"q": "a", "source": "en", "target": "fr"}, 400, "target 'fr'"),
        ("GET", "/nowhere", None, 404, "no endpoint GET /nowhere"),
        ("GET", "/translate", None, 405, "use POST"),
        ("POST", "/health", None, 405, "use GET"),
        ("POST", "/v1/translate", {"sentences": ["a"] * 6}, 413, "at most 5"),
        ("POST", "/v1/translate", {"sentences": ["x" * 400, "y" * 201]}, 413, "at most 600"),
        # Invalid UTF-8 in JSON is malformed JSON.
        ("POST", "/v1/translate", b'{"sentences": ["a \xff b"]}', 400, "malformed JSON"),
    ]
    for method, path, body, status, message in cases:
        got, hdrs, data = s.request(method, path, body)
        answer = json.loads(data)
        assert got == status and message in answer.get("error", ""), \
            (method, path, body, got, answer)
        if status == 405:
            assert "Allow" in hdrs
    # A body over the limit is refused from its header, unread.
    got, _, data = s.request("POST", "/v1/translate", "x" * (2 << 20),
                             {"Content-Type": "application/json"})
    assert got == 413 and b"larger than" in data, (got, data)
    # Bytes that are not HTTP: 400, and the server goes on.
    with socket.create_connection(("127.0.0.1", s.port)) as raw:
        raw.sendall(b"\x16\x03\x01 not http at all\r\n\r\n")
        assert raw.recv(100).startswith(b"HTTP/1.1 400"), "garbage"
    assert s.request("GET", "/health")[0] == 200


@check("a sentence longer than the model takes: 400, or translated in parts")
def _(s):
    words = "alpha bravo charlie delta echo golf hotel kilo lima".split()
    long = " ".join("%s %s %s." % (words[i % 9], words[(i * 4) % 9], words[(i * 7) % 9])
                    for i in range(60))
    path = os.path.join(ARGS.work, "long.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(SENTENCES[0] + "\n" + long + "\n")
    expected = subprocess.run([os.path.join(ARGS.folder, "loom-translate"), "--input", path,
                               "--threads", "1", "--split-long"], check=True,
                              capture_output=True, text=True).stdout.split("\n")[:-1]
    status, _, body = s.json("POST", "/v1/translate", {"sentences": [SENTENCES[0], long]})
    assert status == 400 and "sentence 2 has" in body["error"], (status, body)
    got = [t["hypotheses"][0]["text"] for t in
           v1(s, [SENTENCES[0], long], split_long=True)]
    assert got == expected and expected[1], (got, expected)
    status, _, body = s.json("POST", "/v1/translate", {"sentences": [long], "split_long": 1})
    assert status == 400 and "split_long must be true or false" in body["error"], body
    # LibreTranslate's clients send paragraphs: a long line is split.
    status, _, body = s.json("POST", "/translate", {"q": long, "source": "en", "target": "de"})
    assert status == 200 and body["translatedText"] == expected[1], body


@check("control characters translate as loom-translate translates them")
def _(s):
    odd = ["a\tb c", "bell \x07 here", "nul \x00 inside", "\u00e9t\u00e9 \u2028 sep"]
    path = os.path.join(ARGS.work, "odd.txt")
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(odd) + "\n")
    expected = subprocess.run([os.path.join(ARGS.folder, "loom-translate"), "--input", path,
                               "--threads", "1"], check=True, capture_output=True,
                              text=True).stdout.split("\n")[:-1]
    got = [t["hypotheses"][0]["text"] for t in v1(s, odd)]
    assert got == expected, (got, expected)


def main_checks():
    s = serve("--source-language", "en", "--target-language", "de",
              "--max-wait-ms", "20")
    for name, fn in CHECKS:
        if name.startswith("bad requests"):
            continue
        fn(s)
        print("PASS", name)
    assert s.stop() == 0
    # In flight (queued sentences join running batches): the same answers.
    s = serve("--source-language", "en", "--target-language", "de",
              "--max-wait-ms", "20", "--in-flight")
    for name, fn in CHECKS:
        if name.startswith(("/v1/translate", "many clients", "two workers")):
            fn(s)
            print("PASS", name, "(in flight)")
    assert s.stop() == 0
    # Small limits for the refusals.
    s = serve("--source-language", "en", "--target-language", "de",
              "--max-sentences", "5", "--max-request-chars", "600")
    for name, fn in CHECKS:
        if name.startswith("bad requests"):
            fn(s)
            print("PASS", name)
    assert s.stop() == 0


def workers_share_weights():
    s = Server([os.path.join(ARGS.folder, "loom-serve"), "--port", "0", "--threads", "2",
                "--workers", "2"])
    with ThreadPoolExecutor(16) as pool:
        futures = [pool.submit(lambda x: v1(s, [x])[0]["hypotheses"][0]["text"], x)
                   for x in SENTENCES * 4]
        # Meanwhile, how many workers /metrics says are decoding.
        busy = []
        while not all(f.done() for f in futures):
            busy.append(s.metric("loom_busy_workers"))
        got = [f.result() for f in futures]
    assert got == reference() * 4, "two workers"
    assert s.metric("loom_workers") == 2
    assert 1 <= max(busy) <= 2, busy
    # A worker counts itself idle just after its clients have their answers.
    deadline = time.time() + 5
    while s.metric("loom_busy_workers") != 0 and time.time() < deadline:
        time.sleep(0.01)
    assert s.metric("loom_busy_workers") == 0
    assert s.stop() == 0
    print("PASS two workers translate as one")


def prime(server, sentences):
    """One request of `sentences` sentences: the batcher then waits (up to
    --max-wait-ms) for that many before a batch leaves."""
    v1(server, SENTENCES[:sentences])


def send_while_queued(server, sentences, queued, seconds=2):
    """Posts `sentences` from a thread and returns once the server holds
    `queued` sentences waiting (or `seconds` passed): the thread, and a dict
    whose "answer" the thread fills."""
    result = {}
    def post():
        result["answer"] = server.json("POST", "/v1/translate", {"sentences": sentences})
    t = threading.Thread(target=post)
    t.start()
    deadline = time.time() + seconds
    while server.metric("loom_queue_sentences") < queued and time.time() < deadline:
        time.sleep(0.02)
    return t, result


def full_queue():
    s = serve("--queue-size", "4", "--max-wait-ms", "3000")
    prime(s, 3)
    # The first request waits in the queue for company (up to 3 s).
    t, result = send_while_queued(s, SENTENCES[:1], 1)
    status, hdrs, body = s.json("POST", "/v1/translate", {"sentences": SENTENCES[1:5]})
    assert status == 503 and hdrs.get("Retry-After") == "1" and "queue is full" in body["error"], \
        (status, hdrs, body)
    status, _, body = s.json("POST", "/v1/translate", {"sentences": SENTENCES[:5]})
    assert status == 413 and "queue holds" in body["error"], body
    t.join()
    status, _, body = result["answer"]
    assert status == 200 and [x["hypotheses"][0]["text"] for x in body["translations"]] == \
        reference()[:1], "the queued request loses nothing"
    assert s.stop() == 0
    print("PASS a full queue answers 503 with Retry-After")


def deadline():
    s = serve("--timeout-ms", "1000", "--max-wait-ms", "5000")
    prime(s, 3)
    start = time.time()
    status, _, body = s.json("POST", "/v1/translate", {"sentences": SENTENCES[:2]})
    assert status == 504 and "deadline" in body["error"], (status, body)
    assert 0.9 < time.time() - start < 4
    assert s.metric('loom_http_requests_total{endpoint="/v1/translate",status="504"}') == 1
    assert s.stop() == 0
    print("PASS a late request is answered 504")


def disconnect():
    s = serve("--max-wait-ms", "1000")
    prime(s, 4)
    decoded = s.metric("loom_translated_sentences_total")
    body = json.dumps({"sentences": SENTENCES[:3]}).encode()
    raw = socket.create_connection(("127.0.0.1", s.port))
    raw.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    time.sleep(0.2)
    raw.close()
    time.sleep(1.5)
    assert s.metric("loom_translated_sentences_total") == decoded, \
        "a cancelled sentence was decoded"
    assert s.metric('loom_http_requests_total{endpoint="/v1/translate",status="499"}') == 1
    assert s.metric("loom_queue_sentences") == 0
    # The server goes on.
    assert v1(s, SENTENCES[:1])[0]["hypotheses"][0]["text"] == reference()[0]
    assert s.stop() == 0
    print("PASS a client that hangs up cancels its sentences")


def api_key():
    key_file = os.path.join(ARGS.work, "key.txt")
    with open(key_file, "w") as f:
        f.write("  s3cret-key \n")
    s = serve("--api-key-file", key_file)
    assert s.request("GET", "/health")[0] == 200
    for path in ["/languages", "/metrics", "/"]:
        assert s.request("GET", path)[0] == 401, path
        assert s.request("GET", path, headers={"X-API-Key": "wrong"})[0] == 403, path
        assert s.request("GET", path, headers={"X-API-Key": "s3cret-key"})[0] == 200, path
    assert s.request("GET", "/languages", headers={"Authorization": "Bearer s3cret-key"})[0] == 200
    assert s.request("GET", "/?api_key=s3cret-key")[0] == 200
    assert s.request("POST", "/v1/translate", {"sentences": ["a"]})[0] == 401
    assert s.request("POST", "/v1/translate", "{bad json")[0] == 401
    assert s.request("POST", "/translate", {"q": "a", "api_key": "nope"})[0] == 403
    status, _, body = s.json("POST", "/translate", {"q": SENTENCES[0], "api_key": "s3cret-key"})
    assert status == 200 and body["translatedText"] == reference()[0], body
    assert s.stop() == 0
    empty = os.path.join(ARGS.work, "empty-key.txt")
    open(empty, "w").close()
    p = subprocess.run([os.path.join(ARGS.folder, "loom-serve"), "--port", "0",
                        "--api-key-file", empty], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "holds no key" in p.stderr, p.stderr
    print("PASS the API key is required on every endpoint but /health")


def graceful_shutdown():
    s = serve("--max-wait-ms", "2000")
    prime(s, 5)
    # SIGTERM once the request waits in the queue.
    t, result = send_while_queued(s, SENTENCES[:4], 4, seconds=1.5)
    s.proc.send_signal(signal.SIGTERM)
    t.join(30)
    status, hdrs, body = result["answer"]
    assert status == 200, (status, body)
    assert [x["hypotheses"][0]["text"] for x in body["translations"]] == reference()[:4]
    assert s.proc.wait(30) == 0, "".join(s.lines)
    assert any("stopped" in line for line in s.lines), s.lines
    try:
        socket.create_connection(("127.0.0.1", s.port), timeout=2).close()
        raise AssertionError("still accepting after SIGTERM")
    except ConnectionRefusedError:
        pass
    print("PASS SIGTERM finishes what is in flight, then exits 0")


def loading_then_ready():
    model = os.path.join(ARGS.work, "model-copy")
    shutil.copytree(ARGS.model_dir, model, dirs_exist_ok=True)
    for name in os.listdir(model):
        if name.endswith(".loomx"):
            os.remove(os.path.join(model, name))
    s = Server([ARGS.loom, "serve", "--model", model, "--port", "0", "--threads", "1"],
               wait_ready=False)
    status, _, body = s.json("GET", "/health")
    assert status == 503 and body["status"] == "loading" and body["live"], body
    assert s.request("GET", "/health/live")[0] == 200
    status, hdrs, body = s.json("POST", "/v1/translate", {"sentences": ["a"]})
    assert status == 503 and "loading" in body["error"] and hdrs.get("Retry-After"), body
    s.wait_ready()
    got = [t["hypotheses"][0]["text"] for t in v1(s, SENTENCES)]
    assert got == reference(), "loom serve on the model directory"
    assert s.metric("loom_model_load_seconds") > 0
    assert s.stop() == 0
    print("PASS /health is ready only once the model is loaded; loom serve translates the same")


def bad_flags():
    for flags, message in [(["--port", "70000"], "70000"),
                           (["--host", "not-an-address"], "not an IP address"),
                           (["--model", "/nonexistent"], "nonexistent")]:
        p = subprocess.run([os.path.join(ARGS.folder, "loom-serve")] + flags,
                           capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and message in p.stderr, (flags, p.stderr)
    # A port in use is named.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        p = subprocess.run([os.path.join(ARGS.folder, "loom-serve"), "--port", str(port)],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 1 and "cannot listen on 127.0.0.1:%d" % port in p.stderr, p.stderr
    print("PASS bad flags, a missing model and a port in use exit 1 with a message")


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", required=True)
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--loom", required=True)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--work", required=True)
    ARGS = parser.parse_args()
    with open(ARGS.inputs, encoding="utf-8") as f:
        SENTENCES.extend(f.read().split("\n")[:-1])
    main_checks()
    workers_share_weights()
    full_queue()
    deadline()
    disconnect()
    api_key()
    graceful_shutdown()
    loading_then_ready()
    bad_flags()
    print("all passed")


if __name__ == "__main__":
    main()
