#!/usr/bin/env bash
# Benchmark: `dragoman serve` under load from wrk (Debian's HTTP load generator) on loopback, every
# request one sentence (POST /v1/translate), at several numbers of concurrent clients, beside
# `dragoman translate` on the same lines with the same threads: sentences/s and latency (p50, p99),
# printed as a table. Both translate with --deterministic output (serve's default).
# Usage: scripts/bench-serve.sh MODEL [LINES] [CLIENTS] [THREADS] [SECONDS]
#   LINES: sentences from data/demo/test.en (default 1000); CLIENTS: "1 4 16 64"; THREADS: compute
#   threads of both (default 2); SECONDS: per wrk run (default 20). wrk runs on the same machine
#   and takes some of its CPU (one wrk thread). SERVE_ARGS: more serve options (e.g. "--max-wait-ms 20").
#   WRK_KEEP=PREFIX keeps each wrk report as PREFIX.CLIENTS (its full latency distribution).
set -euo pipefail
cd "$(dirname "$0")/.."
model=$1
lines=${2:-1000}
clients=${3:-1 4 16 64}
threads=${4:-2}
seconds=${5:-20}
dragoman=${BUILD_DIR:-build}/src/dragoman
command -v wrk >/dev/null || bash scripts/install-deps.sh wrk  # from Debian
[[ -f data/demo/test.en ]] || { echo "bench-serve: run scripts/prepare-demo-data.sh data/demo first" >&2; exit 1; }
work=$(mktemp -d)
server=""
# The server is stopped at the end (SIGTERM: it answers what is in flight, as long as that takes;
# killed after 120 s), so that nothing of it runs on into a following measurement.
stop_server() {
  [[ -n $server ]] || return 0
  kill "$server" 2>/dev/null || return 0
  for ((i = 0; i < 1200; i++)); do kill -0 "$server" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$server" 2>/dev/null
}
trap 'stop_server; rm -rf "$work"' EXIT

head -n "$lines" data/demo/test.en >"$work/lines.txt"
# One JSON body per line, for the Lua script.
python3 -c 'import json,sys
for line in open(sys.argv[1], encoding="utf-8"): print(json.dumps({"text": line.rstrip("\n")}))' "$work/lines.txt" \
  >"$work/bodies.jsonl"
cat >"$work/post.lua" <<'LUA'
-- Each connection cycles through the bodies, starting at its own offset.
local bodies = {}
for line in io.lines(os.getenv("BODIES")) do bodies[#bodies + 1] = line end
local counter = 0
function setup(thread) thread:set("offset", counter * 7919); counter = counter + 1 end
function init(args) n = offset or 0 end
function request()
  n = n + 1
  return wrk.format("POST", "/v1/translate", {["Content-Type"] = "application/json"}, bodies[(n % #bodies) + 1])
end
LUA

# translate's own rate: its summary line's seconds, which leave out loading the model (as the
# server's rows do). Measured before and after the server's rows, and their mean is the 100 %:
# on a shared machine one run can be 20 % off the next.
translate_rate() {
  "$dragoman" translate -m "$model" -i "$work/lines.txt" -o "$work/translate.out" --threads "$threads" --deterministic \
    2>"$work/translate.log"
  local rate
  rate=$(sed -n 's/.*translate: [0-9]* lines, .* in \([0-9.]*\) s: \([0-9.]*\) lines\/s.*/\2/p' "$work/translate.log")
  [[ -n $rate ]] || { cat "$work/translate.log" >&2; return 1; }
  echo "$rate"
}
translate_before=$(translate_rate)

# shellcheck disable=SC2086 # SERVE_ARGS is a list of options
"$dragoman" serve -m "$model" --port 0 --threads "$threads" ${SERVE_ARGS:-} >"$work/serve.log" 2>&1 &
server=$!
for ((i = 0; i < 200; i++)); do
  port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/serve.log")
  [[ -n $port ]] && break
  sleep 0.1
done
[[ -n ${port:-} ]] || { cat "$work/serve.log" >&2; exit 1; }

echo "bench-serve: $model, $lines lines of data/demo/test.en, $threads compute thread(s), $(nproc) cores, ${seconds} s per run${SERVE_ARGS:+, serve $SERVE_ARGS}"
echo
echo "| clients | sentences/s | vs translate | p50 latency | p99 latency | errors |"
echo "|---:|---:|---:|---:|---:|---:|"
rows=()
for c in $clients; do
  BODIES=$work/bodies.jsonl wrk -t 1 -c "$c" -d "${seconds}s" --latency --timeout 30s -s "$work/post.lua" \
    "http://127.0.0.1:$port" >"$work/wrk.txt"
  [[ -n ${WRK_KEEP:-} ]] && cp "$work/wrk.txt" "$WRK_KEEP.$c"
  rate=$(awk '/^Requests\/sec:/ { print $2 }' "$work/wrk.txt")
  p50=$(awk '$1 == "50%" { print $2 }' "$work/wrk.txt")
  p99=$(awk '$1 == "99%" { print $2 }' "$work/wrk.txt")
  errors=$(awk '/Non-2xx or 3xx responses:/ { print $NF } /Socket errors/ { print "socket: " $0 }' "$work/wrk.txt")
  rows+=("$c $rate $p50 $p99 ${errors:-0}")
done
stop_server
server=""
translate_after=$(translate_rate)
translate_mean=$(python3 -c "print(f'{($translate_before + $translate_after) / 2:.1f}')")
for row in "${rows[@]}"; do
  read -r c rate p50 p99 errors <<<"$row"
  share=$(python3 -c "print(f'{100 * $rate / $translate_mean:.0f} %')")
  echo "| $c | $rate | $share | $p50 | $p99 | $errors |"
done
echo "| translate (file) | $translate_mean | 100 % | | | |"
echo
echo "translate's rate before and after the server's rows: $translate_before and $translate_after lines/s"
