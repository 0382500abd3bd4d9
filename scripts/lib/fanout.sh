# shellcheck shell=bash
# Summary: the fan-outs' entry (scripts/ssm-fanout.sh, scripts/k6-operator.sh): --help from the entry's header, else its Python module.

# fanout_exec MODULE WITH_BOTO3 ARGS...: print the entry's Summary and Usage
# lines for -h or --help; else replace this shell by MODULE with ARGS, run by
# .tools/venv's Python (boto3, PyYAML). WITH_BOTO3=1: that Python is needed
# (make aws-tools); 0: the system's python3 does without it.
fanout_exec() {
  local module="$1" with_boto3="$2" python="$LT_ROOT/.tools/venv/bin/python"
  shift 2
  if [[ " $* " == *" -h "* || " $* " == *" --help "* ]]; then
    print_summary "$0"
    exit 0
  fi
  if [[ ! -x "$python" ]]; then
    [[ "$with_boto3" -eq 0 ]] || abort "boto3 was not found in .tools/venv; run 'make aws-tools'"
    python="$LT_PYTHON"
  fi
  LT_PROG="$LT_PROG" PYTHONPATH="$LT_ROOT/scripts" exec "$python" -m "$module" "$@"
}
