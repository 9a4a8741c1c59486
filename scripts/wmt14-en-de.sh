#!/usr/bin/env bash
# WMT14 EN-DE, the paper's pipeline: scripts/wmt14.sh en-de [base|big] [RUN_DIR] (see that script and docs/WMT14.md).
exec "$(dirname "$0")/wmt14.sh" en-de "$@"
