#!/bin/sh
# run_check.sh - checks tests/run.sh, the runner of every suite in make
# test: a line as each suite starts, then one with its result and time;
# a failing suite's output; the closing count.  Run by `make run-check`.
cd "$(dirname "$0")/../.." || exit 1
work=$(mktemp -d "${TMPDIR:-/tmp}/shmalloc-run-check.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() {
    if eval "$2"; then passed=$((passed + 1)); echo "PASS: $1"
    else failed=$((failed + 1)); echo "FAIL: $1"; sed 's/^/    | /' "$work/out"; fi
}

# The suite itself looks at what the runner has printed so far.
tests/run.sh "$work/results" slow sh -c "grep -c '^---- slow  *started at [0-9:]*\$' '$work/out'; sleep 1; echo '3 passed, 0 failed'" \
    >"$work/out" 2>&1
check "the start line is out before the suite runs" "grep -qx 1 '$work/logs/slow.log'"
check "then the result, with the suite's time" "sed -n 2p '$work/out' | grep -qE '^ok   slow +3 passed \\(([1-9]|[1-9][0-9]*) s\\)\$'"

tests/run.sh "$work/results" broken sh -c 'echo "the reason it failed"; exit 3' >"$work/out" 2>&1
check "a failing suite: its start, FAIL with its status and time, then its output" \
    "sed -n 1p '$work/out' | grep -q '^---- broken ' &&
     sed -n 2p '$work/out' | grep -qE '^FAIL broken +0 passed, 1 failed, exit status 3 \\([0-9]+ s\\); its output:\$' &&
     sed -n 3p '$work/out' | grep -qx 'the reason it failed'"

tests/run.sh "$work/results" --total >"$work/out" 2>&1
check "the closing line counts both suites" "grep -qx '3 passed, 1 failed' '$work/out'"

echo "run-check: $passed passed, $failed failed"
[ "$failed" = 0 ]
