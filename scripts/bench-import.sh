#!/usr/bin/env bash
# CPU speed of an imported model beside CTranslate2 on the same weights (docs/PERFORMANCE.md,
# "Imported models"): bench/import_bench.py makes a base-size MarianMT model, converts it with
# `dragoman convert` and with CTranslate2's converter, and times both in fp32 and int8.
#   scripts/bench-import.sh [LINES]      (PYTHON: a Python with torch, transformers, sentencepiece
#                                         and ctranslate2; CORPUS: data/demo; needs a built binary)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if ! "$python" -c 'import torch, transformers, sentencepiece, ctranslate2' 2>/dev/null; then
  echo "bench-import: $python lacks torch, transformers, sentencepiece or ctranslate2" >&2
  echo "  (python3 -m venv v && v/bin/pip install torch transformers sentencepiece ctranslate2; PYTHON=v/bin/python)" >&2
  exit 1
fi
corpus=${CORPUS:-data/demo}
[[ -f $corpus/test.en ]] || { echo "bench-import: no $corpus/test.en (scripts/prepare-demo-data.sh)" >&2; exit 1; }
dragoman=${DRAGOMAN:-build/src/dragoman}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$python" bench/import_bench.py --dragoman "$dragoman" --corpus "$corpus" --lines "${1:-500}" ${WORK:+--work "$WORK"}
