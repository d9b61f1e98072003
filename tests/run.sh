#!/usr/bin/env bash
# tests/run.sh - runs one test suite quietly and keeps its counts.
#
#   tests/run.sh RESULTS NAME COMMAND [ARG...]   run a suite
#   tests/run.sh RESULTS --failed NAME           count a suite that could not run
#   tests/run.sh RESULTS --total                 print "N passed, M failed"
#
# A suite's output goes to a log beside RESULTS (logs/NAME.log) and is
# shown only when it fails; the suite gets a line when it starts (some run
# for minutes) and one with its result and time when it ends.  Its counts come from
# Criterion's summary lines (or the stand-in runner's, in the same form),
# else from its last "N passed, M failed" line, else from its exit status
# (one check).  A suite that exits non-zero fails even if its counts do
# not say so.  "NAME PASSED FAILED" is appended to RESULTS.  The exit
# status is non-zero when the suite failed (--total: when M > 0).
set -u
results=$1
shift
mkdir -p "$(dirname "$results")"

if [ "$1" = --total ]; then
    if [ -f "$results" ]; then
        read -r passed failed < <(awk '{ p += $2; f += $3 } END { print p + 0, f + 0 }' "$results")
    else
        passed=0 failed=1
        echo "FAIL no suite ran (no $results)"
    fi
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
fi
if [ "$1" = --failed ]; then
    printf 'FAIL %-28s could not run\n' "$2"
    echo "$2 0 1" >>"$results"
    exit 1
fi

name=$1
shift
log=$(dirname "$results")/logs/$name.log
mkdir -p "$(dirname "$log")"
start=$(date +%s)
printf -- '---- %-28s started at %s\n' "$name" "$(date +%H:%M:%S)"
"$@" >"$log" 2>&1 </dev/null
rc=$?
seconds=$(($(date +%s) - start))

# Criterion: "Tested: T | Passing: P | Failing: F | Crashing: C"; the
# stand-in: "Tested: T | Passing: P | Skipped: S | Failing: F".
read -r tested passed skipped < <(awk '
    /Synthesis: Tested:/ {
        for (i = 1; i <= NF; i++) {
            if ($i == "Tested:") t += $(i + 1)
            if ($i == "Passing:") p += $(i + 1)
            if ($i == "Skipped:") s += $(i + 1)
        }
        n++
    }
    END { if (n) print t + 0, p + 0, s + 0; else print "- - -" }' "$log")
if [ "$tested" != - ]; then
    failed=$((tested - passed - skipped))
else
    counts=$(grep -Eo '[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    if [ -n "$counts" ]; then
        passed=${counts%% passed*}
        failed=${counts##*, }
        failed=${failed%% failed}
    elif [ $rc -eq 0 ]; then
        passed=1 failed=0
    else
        passed=0 failed=1
    fi
fi
[ $rc -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "$name $passed $failed" >>"$results"

if [ "$failed" -eq 0 ]; then
    printf 'ok   %-28s %4d passed (%d s)\n' "$name" "$passed" "$seconds"
    exit 0
fi
printf 'FAIL %-28s %4d passed, %d failed, exit status %d (%d s); its output:\n' "$name" "$passed" "$failed" $rc \
    "$seconds"
lines=$(wc -l <"$log")
if [ "$lines" -gt 400 ]; then
    head -100 "$log"
    echo "... ($((lines - 300)) lines left out; all of them in $log)"
    tail -200 "$log"
else
    cat "$log"
fi
exit 1
