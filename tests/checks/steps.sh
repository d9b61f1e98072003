# steps.sh - the PASS/FAIL steps of the check scripts (install-check,
# test-deb, docs-check), sourced once $log names the file a step's output
# goes to.  Outcomes are counted in the file $steps (default $log.steps), so
# steps run in subshells count too.
#   step NAME COMMAND...   runs COMMAND with its output in $log: PASS, or
#                          FAIL and the log's last lines
#   pass NAME, fail NAME   one step's outcome, said and counted
#   steps_passed, steps_failed   the counts so far
#   steps_total CHECK [NOTE]     "CHECK: N passed, M failed[ NOTE]"; true when M is 0
steps=${steps:-$log.steps}
pass() { echo pass >>"$steps"; echo "PASS: $1"; }
fail() {
    echo fail >>"$steps"; echo "FAIL: $1"
    [ -s "$log" ] && sed 's/^/    | /' "$log" | tail -n 40
    return 0
}
step() {
    step_name=$1; shift
    if "$@" >"$log" 2>&1; then pass "$step_name"; else fail "$step_name"; fi
}
steps_count() { [ -f "$steps" ] && awk -v w="$1" '$0 == w { n++ } END { print n + 0 }' "$steps" || echo 0; }
steps_passed() { steps_count pass; }
steps_failed() { steps_count fail; }
steps_total() {
    echo "$1: $(steps_passed) passed, $(steps_failed) failed${2:+ $2}"
    [ "$(steps_failed)" = 0 ]
}
