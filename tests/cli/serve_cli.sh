#!/usr/bin/env bash
# End-to-end checks of `dragoman serve` on loopback, on a small model trained here (the reversal
# task): concurrent clients get exactly translate's answers (translations and scores, with
# --deterministic) and share batches; the LibreTranslate API through its PyPI client
# (libretranslatepy, installed into a virtual environment next to the build); every bad input
# answered 400/404/413 with a message naming the problem while the server keeps serving; a full
# queue (503 with Retry-After); a timeout (504); /health and /metrics; SIGTERM with requests in
# flight (all answered, exit 0).
# Usage: serve_cli.sh DRAGOMAN_BINARY
set -uo pipefail
dragoman=$1
tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=expect.sh
source "$(dirname "$0")/expect.sh"

# The PyPI client, once per build directory.
venv=${DRAGOMAN_TEST_VENV:-$PWD/test-venv}
if ! "$venv/bin/python" -c "import libretranslatepy" 2>/dev/null; then
  if ! python3 -m venv "$venv" || ! "$venv/bin/pip" install -q libretranslatepy==2.1.4; then
    echo "FAIL: cannot install libretranslatepy into $venv (python3-venv and PyPI needed)"
    exit 1
  fi
fi

write_reversal_corpus "$tmp/train" 300 7
write_learning_config "$tmp/c.yaml" "$tmp/train" 1 25
expect train 0 "train: done at step 500" -- "$dragoman" train -c "$tmp/c.yaml" --run "$tmp/run"
model=$tmp/run/checkpoints/checkpoint-last.safetensors

# start_server NAME ARGS...: starts serve on a free port; sets $port and $pid (and records the pid).
start_server() {
  local name=$1 i
  shift
  "$dragoman" serve -m "en-de=$model" --port 0 --threads 1 "$@" >"$tmp/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
  port=""
  for ((i = 0; i < 300; i++)); do
    port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$tmp/$name.log")
    [[ -n $port ]] && return 0
    sleep 0.05
  done
  echo "FAIL $name: the server did not start:"
  cat "$tmp/$name.log"
  exit 1
}
# status METHOD PATH [CURL ARGS...]: the HTTP status; the body goes to $tmp/body.
status() {
  local method=$1 path=$2
  shift 2
  curl -s -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X "$method" "http://127.0.0.1:$port$path" "$@"
}
# check_status NAME CODE PATTERN METHOD PATH [CURL ARGS...]: the status, and the body matches.
check_status() {
  local name=$1 code=$2 pattern=$3 got
  shift 3
  got=$(status "$@")
  if [[ $got != "$code" ]] || ! grep -qE -- "$pattern" "$tmp/body"; then
    echo "FAIL $name: HTTP $got (expected $code), body: $(head -c 300 "$tmp/body")"
    failures=$((failures + 1))
  else
    passes=$((passes + 1))
  fi
}

json='Content-Type: application/json'
start_server main --max-wait-ms 20 --max-request-bytes 100000 --max-request-sentences 50
check_status health 200 '"status":"ok"' GET /health

# Concurrent clients: 16 threads, 120 requests of 1-3 training lines each; every answer equals
# translate's (--deterministic, JSON with word scores: translations and scores to the last digit).
head -n 200 "$tmp/train.src" >"$tmp/lines.txt"
"$dragoman" translate -m "$model" -i "$tmp/lines.txt" --deterministic --output-format json --word-scores --threads 1 \
  2>/dev/null >"$tmp/expected.jsonl"
check concurrent-answers-are-translates python3 - "$port" "$tmp/lines.txt" "$tmp/expected.jsonl" <<'PY'
import json, sys, threading, urllib.request
port, lines, expected = sys.argv[1], open(sys.argv[2]).read().split("\n")[:-1], open(sys.argv[3]).read().split("\n")[:-1]
expected = [json.loads(e) for e in expected]
jobs = []
at = 0
for r in range(120):
    n = 1 + r % 3
    jobs.append([(at + k) % len(lines) for k in range(n)])
    at += n
bad = []
def client(mine):
    for job in mine:
        body = json.dumps({"text": [lines[i] for i in job], "word_scores": True}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/translate", data=body,
                                     headers={"Content-Type": "application/json"})
        answer = json.load(urllib.request.urlopen(req, timeout=60))
        for i, got in zip(job, answer["translations"]):
            if got != expected[i]:
                bad.append((lines[i], got, expected[i]))
threads = [threading.Thread(target=client, args=(jobs[t::16],)) for t in range(16)]
for t in threads: t.start()
for t in threads: t.join()
print(f"{len(bad)} of {sum(map(len, jobs))} answers differ from translate's")
for b in bad[:3]: print(b)
assert not bad
PY
# Sampling requests: each sentence's samples are translate --sampling's for the same options, with
# other requests (beam searches, other seeds) in flight; they never share a search with them.
head -n 12 "$tmp/train.src" >"$tmp/sample-lines.txt"
"$dragoman" translate -m "$model" -i "$tmp/sample-lines.txt" --sampling --seed 9 --temperature 1.4 --nbest 2 \
  --output-format json --threads 1 2>/dev/null >"$tmp/sample-expected.jsonl"
check sampling-answers-are-translates python3 - "$port" "$tmp/sample-lines.txt" "$tmp/sample-expected.jsonl" <<'PY'
import json, sys, threading, urllib.request
port, lines = sys.argv[1], open(sys.argv[2]).read().split("\n")[:-1]
expected = [json.loads(e) for e in open(sys.argv[3]).read().split("\n")[:-1]]
def ask(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/translate", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=60))["translations"]
answers = {}
def sampled(i):
    answers[i] = ask({"text": lines[i], "sampling": True, "seed": 9, "temperature": 1.4, "n_best": 2})[0]
def other(i):
    ask({"text": lines[i], "sampling": True, "seed": 10, "n_best": 2})
    ask({"text": lines[i], "beam": 3})
threads = [threading.Thread(target=f, args=(i,)) for i in range(len(lines)) for f in (sampled, other)]
for t in threads: t.start()
for t in threads: t.join()
bad = [i for i in range(len(lines)) if answers[i] != expected[i]]
print(f"{len(bad)} of {len(lines)} sampled answers differ from translate --sampling's")
assert not bad
PY
# Guided requests: target prefixes and constraints, one request per sentence beside plain ones,
# answered as translate --target-prefix --constraints answers (each output starts with its prefix
# and holds its constraints).
: >"$tmp/guide.pre"
: >"$tmp/guide.con"
for ((i = 0; i < 12; i++)); do
  if ((i % 3 == 0)); then echo "j" >>"$tmp/guide.pre"; else echo >>"$tmp/guide.pre"; fi
  if ((i % 2 == 0)); then printf 'a b\tc\n' >>"$tmp/guide.con"; else echo >>"$tmp/guide.con"; fi
done
"$dragoman" translate -m "$model" -i "$tmp/sample-lines.txt" --target-prefix "$tmp/guide.pre" \
  --constraints "$tmp/guide.con" --nbest 2 --deterministic --output-format json --threads 1 2>/dev/null \
  >"$tmp/guide-expected.jsonl"
check guided-answers-are-translates python3 - "$port" "$tmp/sample-lines.txt" "$tmp/guide-expected.jsonl" \
  "$tmp/guide.pre" "$tmp/guide.con" <<'PY'
import json, sys, threading, urllib.request
port, lines = sys.argv[1], open(sys.argv[2]).read().split("\n")[:-1]
expected = [json.loads(e) for e in open(sys.argv[3]).read().split("\n")[:-1]]
prefixes = open(sys.argv[4]).read().split("\n")[:-1]
constraints = [l.split("\t") if l else [] for l in open(sys.argv[5]).read().split("\n")[:-1]]
def ask(body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/translate", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=60))["translations"]
answers = {}
def guided(i):
    answers[i] = ask({"text": lines[i], "target_prefix": prefixes[i], "constraints": constraints[i], "n_best": 2})[0]
def plain(i):
    ask({"text": lines[i]})
threads = [threading.Thread(target=f, args=(i,)) for i in range(len(lines)) for f in (guided, plain)]
for t in threads: t.start()
for t in threads: t.join()
bad = [i for i in range(len(lines)) if answers[i] != expected[i]]
print(f"{len(bad)} of {len(lines)} guided answers differ from translate's")
assert not bad
for i in range(len(lines)):
    for hypothesis in answers[i]["nbest"] if "nbest" in answers[i] else [answers[i]]:
        assert hypothesis["translation"].startswith(prefixes[i]), (i, hypothesis)
        for c in constraints[i]:
            assert c in hypothesis["translation"], (i, c, hypothesis)
# A list of texts takes lists, one entry per text.
both = ask({"text": lines[:2], "target_prefix": prefixes[:2], "constraints": constraints[:2], "n_best": 2})
assert both == expected[:2], both
PY
# Under load, a mix of good requests and malformed ones (bad JSON and UTF-8, deep nesting, huge
# values, wrong types and paths, garbage and cut-off HTTP on raw sockets): every good answer is
# still translate's, nothing but 4xx (or 503) for the bad ones, and the server stays up.
check mixed-load python3 - "$port" "$tmp/lines.txt" "$tmp/expected.jsonl" <<'PY'
import json, random, socket, sys, threading, urllib.error, urllib.request
port, lines = sys.argv[1], open(sys.argv[2]).read().split("\n")[:-1]
expected = [json.loads(e) for e in open(sys.argv[3])]
random.seed(7)
bad_bodies = [b'{"text": ', b'\xff\xfe', b'{"text": "a\xff"}', b'[' * 100000, b'{"text": ["a", 1]}',
              b'{"text": "a", "beam": 99999999999999999999}', b'{"text": "a", "beam": 1e308}', b'{"text": null}',
              b'{"text": "' + b'x' * 200000 + b'"}', b'{"text": "a", "n_best": -1}', b'{}', b'null',
              b'{"text": "\\u0000 \\ud800"}', b'q=a&target=de&q=' + b'b' * 9000]
problems = []
def good(n):
    for _ in range(n):
        idx = [random.randrange(len(lines)) for _ in range(random.randint(1, 3))]
        body = json.dumps({"text": [lines[i] for i in idx], "word_scores": True}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/translate", data=body,
                                     headers={"Content-Type": "application/json"})
        answer = json.load(urllib.request.urlopen(req, timeout=60))
        problems.extend(("another answer", lines[i]) for i, got in zip(idx, answer["translations"]) if got != expected[i])
def bad(n):
    for _ in range(n):
        body, path = random.choice(bad_bodies), random.choice(["/v1/translate", "/translate", "/nothing"])
        ctype = random.choice(["application/json", "application/x-www-form-urlencoded", "text/plain"])
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, headers={"Content-Type": ctype})
        try:
            code = urllib.request.urlopen(req, timeout=60).status
        except urllib.error.HTTPError as e:
            code = e.code
        if code >= 500 and code != 503:
            problems.append((code, path, body[:40]))
def raw(n):
    for _ in range(n):
        with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as s:
            s.sendall(random.choice([b"GARBAGE\r\n\r\n", b"POST /v1/translate HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"te",
                                     b"GET / HTTP/1.1\r\nX: " + b"a" * 100000 + b"\r\n\r\n",
                                     bytes(random.randrange(256) for _ in range(300))]))
threads = [threading.Thread(target=good, args=(15,)) for _ in range(6)] + \
          [threading.Thread(target=bad, args=(25,)) for _ in range(6)] + [threading.Thread(target=raw, args=(10,)) for _ in range(2)]
for t in threads: t.start()
for t in threads: t.join()
print(f"mixed load: {len(problems)} problems")
assert not problems, problems[:5]
health = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10))
assert health["status"] == "ok", health
PY
metrics=$(curl -s "http://127.0.0.1:$port/metrics")
# Requests shared decoding steps: some steps searched more than one sentence.
single_steps=$(sed -n 's/^dragoman_step_sentences_bucket{le="1"} \([0-9]*\)$/\1/p' <<<"$metrics")
steps=$(sed -n 's/^dragoman_decoding_steps_total \([0-9]*\)$/\1/p' <<<"$metrics")
check requests-shared-steps test "$single_steps" -lt "$steps"
for name in dragoman_requests_total dragoman_errors_total dragoman_queue_sentences dragoman_step_sentences_bucket \
  dragoman_request_duration_seconds_bucket dragoman_target_tokens_total dragoman_target_tokens_per_second; do
  check "metric-$name" grep -q "^$name" <<<"$metrics"
done

# The LibreTranslate API through its own client, and as JSON.
check libretranslatepy "$venv/bin/python" - "$port" "$("$dragoman" translate -m "$model" --deterministic <<<"a b c d" 2>/dev/null)" <<'PY'
import sys
from libretranslatepy import LibreTranslateAPI
api = LibreTranslateAPI(f"http://127.0.0.1:{sys.argv[1]}/")
assert api.languages() == [{"code": "en", "name": "English", "targets": ["de"]}], api.languages()
got = api.translate("a b c d", "en", "de")
assert got == sys.argv[2], (got, sys.argv[2])
PY
# A list of texts, one of two lines: each line translated as translate translates it.
mapfile -t want < <(printf 'a b c\nd e f\ng h i j\n' | "$dragoman" translate -m "$model" --deterministic 2>/dev/null)
check_status libre-json-list 200 "^\\{\"translatedText\":\\[\"${want[0]}\",\"${want[1]}\\\\n${want[2]}\"\\]\\}\$" POST /translate \
  -H "$json" -d '{"q": ["a b c", "d e f\ng h i j"], "source": "auto", "target": "de"}'
check_status libre-no-pair 400 'no model translates en to fr' POST /translate -d 'q=a&source=en&target=fr'
check_status libre-html 400 'format: only \\"text\\"' POST /translate -d 'q=a&source=en&target=de&format=html'
check_status libre-no-target 400 'target: missing' POST /translate -d 'q=a&source=en'
check_status libre-bad-utf8 400 'q: invalid UTF-8 at byte 2' POST /translate --data-binary $'q=a\xff&source=en&target=de'

# Bad requests: each answered with what is wrong; the server keeps serving.
check_status invalid-json 400 'invalid JSON' POST /v1/translate -d '{"text": '
check_status invalid-utf8 400 'invalid JSON.*UTF-8' POST /v1/translate --data-binary $'{"text": "a \xff"}'
check_status not-an-object 400 'expected a JSON object, got array' POST /v1/translate -d '["a"]'
check_status unknown-field 400 'unknown field \\"bogus\\"' POST /v1/translate -d '{"text": "a", "bogus": 1}'
check_status no-text 400 'text: missing' POST /v1/translate -d '{"beam": 2}'
check_status text-type 400 'text: expected a string or a list of strings, got number' POST /v1/translate -d '{"text": 5}'
check_status beam-range 400 'beam: 0 is not in \[1, 64\]' POST /v1/translate -d '{"text": "a", "beam": 0}'
check_status nbest-over-beam 400 'n_best: 5 is larger than the beam 4' POST /v1/translate -d '{"text": "a", "n_best": 5}'
check_status line-break 400 'text\[1\]: a line break' POST /v1/translate -d '{"text": ["a", "b\nc"]}'
check_status prefix-type 400 'target_prefix: expected a string \(text is one\), got array' POST /v1/translate -d '{"text": "a", "target_prefix": ["a"]}'
check_status prefix-count 400 'target_prefix: expected a list of 2 strings' POST /v1/translate -d '{"text": ["a", "b"], "target_prefix": ["a"]}'
check_status constraints-count 400 'constraints: expected a list of 2 lists' POST /v1/translate -d '{"text": ["a", "b"], "constraints": [["a"]]}'
check_status constraints-sampling 400 'constraints: need the beam search' POST /v1/translate -d '{"text": "a", "constraints": ["b"], "sampling": true}'
check_status constraint-empty 400 'constraints: an empty constraint' POST /v1/translate -d '{"text": "a", "constraints": [""]}'
check_status constraint-unknown 400 'constraints \\"字\\": the target vocabulary cannot encode it' POST /v1/translate -d '{"text": "a", "constraints": ["字"]}'
check_status constraints-many 400 'constraints: 33 constraints, more than this server' POST /v1/translate -d "{\"text\": \"a\", \"constraints\": [$(printf '"a",%.0s' {1..32})\"a\"]}"
check_status guide-too-long 400 'tokens, more than the model' POST /v1/translate -d "{\"text\": \"a\", \"target_prefix\": \"$(printf 'a %.0s' {1..300})\"}"
check_status unknown-model 400 'no model named \\"xx\\"' POST /v1/translate -d '{"text": "a", "model": "xx"}'
check_status too-many 413 '51 texts, more than this server.s limit of 50' POST /v1/translate \
  -d "{\"text\": [$(for ((i = 0; i < 50; i++)); do printf '"a",'; done)\"a\"]}"
head -c 150000 /dev/zero | tr '\0' 'a' >"$tmp/big.txt"
check_status too-large 413 'larger than this server.s limit' POST /v1/translate -H "$json" --data-binary "@$tmp/big.txt"
check_status large-form 413 'form-encoded request is limited to 8 KiB' POST /translate --data-binary "@$tmp/big.txt"
check_status no-endpoint 404 'no such endpoint: GET /nothing' GET /nothing
check_status wrong-method 405 'GET /v1/translate: this endpoint takes POST' GET /v1/translate
check wrong-method-allow grep -qi '^Allow: POST' "$tmp/headers"
# Both counted in /metrics (an unknown path as endpoint "other"), and the latency buckets' bounds
# printed as written (le="0.005").
metrics=$(curl -s "http://127.0.0.1:$port/metrics")
check counts-404 grep -qE '^dragoman_requests_total\{endpoint="other",code="404"\} [1-9][0-9]*$' <<<"$metrics"
check counts-405 grep -q '^dragoman_requests_total{endpoint="/v1/translate",code="405"} 1$' <<<"$metrics"
check bucket-bounds grep -q '^dragoman_request_duration_seconds_bucket{le="0.005"} ' <<<"$metrics"
check_status nbest-alignment 200 '"nbest":\[.*"alignment":\[\[[0-9]+,[0-9]+\]' POST /v1/translate \
  -d '{"text": "a b c", "n_best": 2, "alignment": "hard", "beam": 3}'
check_status still-serving 200 '"translation":"c b a"' POST /v1/translate -d '{"text": "a b c"}'
# 64 clients connecting at once to a server too busy to accept them (here: stopped): the kernel
# completes every handshake into the listen backlog (cpp-httplib's own backlog of 5 dropped the
# rest, which their TCP retried 1, 3 and 7 s later), and each is answered once the server runs.
check connect-burst python3 - "$port" "$pid" <<'PY'
import os, select, signal, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
os.kill(pid, signal.SIGSTOP)
try:
    socks = []
    for _ in range(64):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
    deadline = time.time() + 0.5
    pending = list(socks)
    while pending and time.time() < deadline:
        _, ready, _ = select.select([], pending, [], max(0.0, deadline - time.time()))
        pending = [s for s in pending if s not in ready]
    errors = [s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) for s in socks if s not in pending]
    assert not pending and not any(errors), f"{len(pending)} of 64 connections not established, errors {errors}"
finally:
    os.kill(pid, signal.SIGCONT)
for s in socks:
    s.setblocking(True)
    s.settimeout(30)
    s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
for s in socks:
    answer = b""
    while chunk := s.recv(4096):
        answer += chunk
    assert answer.startswith(b"HTTP/1.1 200"), answer[:100]
PY
kill -TERM "$pid"
wait "$pid"
check main-exit-0 test $? -eq 0

# A full queue: one long request keeps the worker busy, the next waits in the queue (its 1
# sentence fills it), the one after is refused with 503 and Retry-After; then all are answered.
for ((i = 0; i < 30; i++)); do cat "$tmp/train.src"; done >"$tmp/long.txt"
python3 -c 'import json,sys; print(json.dumps({"text": open(sys.argv[1]).read().split("\n")[:-1]}))' "$tmp/long.txt" >"$tmp/long.json"
start_server queue --max-queue 1 --max-request-sentences 100000 --max-request-bytes 10000000 --beam 8
curl -s -o "$tmp/long-answer.json" -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/translate" -H "$json" \
  --data-binary "@$tmp/long.json" >"$tmp/long-status" &
long=$!
sleep 0.5
curl -s -o "$tmp/queued.json" -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/translate" -d '{"text": "a b"}' \
  >"$tmp/queued-status" &
queued=$!
sleep 0.2
curl -s -D "$tmp/headers" -o "$tmp/body" -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/translate" \
  -d '{"text": "c d"}' >"$tmp/full-status"
check queue-full-503 test "$(cat "$tmp/full-status")" = 503
check queue-full-retry-after grep -qi '^Retry-After: 1' "$tmp/headers"
check queue-full-message grep -q 'queue is full' "$tmp/body"
wait "$long" "$queued"
check long-answered test "$(cat "$tmp/long-status")" = 200
check queued-answered test "$(cat "$tmp/queued-status")" = 200
check long-answer-complete python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); assert len(a["translations"]) == 9000' \
  "$tmp/long-answer.json"

kill -TERM "$pid"
wait "$pid"

# SIGTERM with requests in flight: every one is answered, then the server exits 0.
start_server drain --max-request-sentences 100000 --max-request-bytes 10000000 --beam 8
for ((i = 0; i < 5; i++)); do cat "$tmp/train.src"; done >"$tmp/medium.txt"
python3 -c 'import json,sys; print(json.dumps({"text": open(sys.argv[1]).read().split("\n")[:-1]}))' "$tmp/medium.txt" >"$tmp/medium.json"
for ((i = 0; i < 4; i++)); do
  curl -s -o "$tmp/flight-$i.json" -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/translate" -H "$json" \
    --data-binary "@$tmp/medium.json" >"$tmp/flight-$i-status" &
  flights[i]=$!
done
# In flight: the first is being translated, the other three queued behind it.
for ((i = 0; i < 200; i++)); do
  queued=$(curl -s "http://127.0.0.1:$port/health" | sed -n 's/.*"queued_sentences":\([0-9]*\).*/\1/p')
  ((${queued:-0} >= 4500)) && break
  sleep 0.05
done
check requests-in-flight test "${queued:-0}" -ge 4500
kill -TERM "$pid"
wait "${flights[@]}"
wait "$pid"
check sigterm-exit-0 test $? -eq 0
for ((i = 0; i < 4; i++)); do check "in-flight-$i-answered" test "$(cat "$tmp/flight-$i-status")" = 200; done
check sigterm-logged grep -q "signal 15: no new connections; answering the requests in flight" "$tmp/drain.log"
check stopped-listening test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health")" = 000

# A timeout: 504, and the server goes on.
start_server timeout --request-timeout 0.05 --max-request-sentences 100000 --max-request-bytes 10000000 --beam 8
check_status timeout-504 504 'longer than this server.s timeout' POST /v1/translate -H "$json" --data-binary "@$tmp/long.json"
# The abandoned translation stops at its next decoding batch: the server answers again at once.
check_status after-timeout 200 '"translation":"c b a"' POST /v1/translate -H "$json" -d '{"text": "a b c"}'
expect port-in-use 1 "serve: cannot listen on 127.0.0.1:$port" -- "$dragoman" serve -m "$model" --port "$port"
kill -TERM "$pid"
wait "$pid"

# Usage errors.
expect duplicate-name 2 'two models named "x"' -- "$dragoman" serve -m "x=$model" -m "x=$model"

echo "serve_cli: $passes passed, $failures failed"
((failures == 0))
