#!/usr/bin/env bash
# Proves that SHMALLOC_POISON makes the tools see misuse of symmetric blocks:
# each misuse mode of poison_misuse must be reported, by AddressSanitizer
# (first binary) and by Valgrind's memcheck (second binary), and correct
# use must run clean under both.
#   tests/checks/poison_check.sh ASAN_BINARY PLAIN_BINARY
set -u
asan=$1 plain=$2 passed=0 failed=0

verdict() { # name ok?
    if [ "$2" = 1 ]; then echo "PASS $1"; passed=$((passed + 1)); else echo "FAIL $1"; failed=$((failed + 1)); fi
}

for mode in use-after-free overflow overflow-read; do
    out=$(ASAN_OPTIONS=abort_on_error=0:detect_leaks=0 timeout 60 "$asan" "$mode" 2>&1); rc=$?
    ok=0; [ $rc -ne 0 ] && grep -q "AddressSanitizer: use-after-poison" <<<"$out" && ok=1
    verdict "asan reports $mode" $ok
    out=$(timeout 120 valgrind -q --error-exitcode=9 "$plain" "$mode" 2>&1); rc=$?
    ok=0; [ $rc -eq 9 ] && grep -Eq "Invalid (read|write)" <<<"$out" && ok=1
    verdict "valgrind reports $mode" $ok
done
out=$(timeout 60 "$asan" ok 2>&1); rc=$?
ok=0; [ $rc -eq 0 ] && grep -q "finished without a report" <<<"$out" && ok=1
verdict "asan is silent on correct use" $ok
out=$(timeout 120 valgrind -q --error-exitcode=9 "$plain" ok 2>&1); rc=$?
ok=0; [ $rc -eq 0 ] && grep -q "finished without a report" <<<"$out" && ! grep -q "Invalid" <<<"$out" && ok=1
verdict "valgrind is silent on correct use" $ok
echo "poison-check: $passed passed, $failed failed"
[ $failed -eq 0 ]
