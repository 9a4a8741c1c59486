#!/usr/bin/env bash
# The main job on the embedded demo data. Installs the dependencies, builds Dragoman, then runs
# what exists today: `dragoman score-bleu` on the bundled example (data/example), corpus BLEU and
# chrF, sentence-level BLEU and JSON. Training and translation of the demo corpus join here once
# those subcommands exist (see README.md, Status).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build_dir" -j "${JOBS:-2}" --target dragoman
dragoman=$build_dir/src/dragoman

echo
"$dragoman" --version
echo
echo "== corpus BLEU and chrF of data/example/hyp.de against data/example/ref.de"
"$dragoman" score-bleu -r data/example/ref.de -i data/example/hyp.de -m bleu,chrf
echo
echo "== sentence-level BLEU (first 5 lines)"
"$dragoman" score-bleu -r data/example/ref.de -i data/example/hyp.de --sentence-level | head -n 5
echo
echo "== JSON"
"$dragoman" score-bleu -r data/example/ref.de -i data/example/hyp.de --json
