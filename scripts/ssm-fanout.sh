#!/usr/bin/env bash
# Summary: run one matrix cell on every tagged k6 instance via AWS SSM, split with k6 execution segments, and write results/<run-id>/.
# Usage: scripts/ssm-fanout.sh [--dry-run] [--cell N] [--instances ID,ID...] [--no-wait] MATRIX_FILE
# Usage: scripts/ssm-fanout.sh --collect RESULTS_DIR   (finish a run sent with --no-wait)
#
# The load is the cell's, the target is the knob TARGET_URL (both as for a
# local run); the fan-out's own settings are in env/fanout.env
# (FANOUT_S3_BUCKET, FANOUT_TAG_FILTER, ...). Any of them can be set in the
# environment. See docs/fanout.md.
# --dry-run prints the boto3 calls the run would make and each instance's
# command, and sends nothing; its only AWS call is the read-only instance
# lookup, skipped when --instances is given.
#
# Everything past this entry is Python (ltsuite.fanoutmain: options, plan,
# sends, polls, collection, manifest, rows; every AWS call with boto3), but
# the matrix and the k6 archive, which are the shell libraries'
# (scripts/fanout-cell.sh). A signal or an error after the sends cancels
# what was sent and finishes the manifest as interrupted or failed.
set -euo pipefail

LT_PROG=ssm-fanout
# shellcheck source=scripts/lib/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

if [[ " $* " == *" -h "* || " $* " == *" --help "* ]]; then
  print_summary "${BASH_SOURCE[0]}"
  exit 0
fi
[[ -x "$LT_ROOT/.tools/venv/bin/python" ]] || abort "boto3 was not found in .tools/venv; run 'make aws-tools'"
LT_PROG="$LT_PROG" PYTHONPATH="$LT_ROOT/scripts" exec "$LT_ROOT/.tools/venv/bin/python" -m ltsuite.fanoutmain "$@"
