#!/bin/sh
# device_runtime_check.sh - runs examples/device_runtime on 3 PEs, as
# `make test` does, and checks what its reader sees: the line saying that
# the refusals to come are deliberate, before any of them, one refusal per
# PE, and "device_runtime: ok" last.
#
#   tests/checks/device_runtime_check.sh [WRAPPER...] PROGRAM
out=$("$@" 3 2>&1)
status=$?
printf '%s\n' "$out"
[ "$status" = 0 ] || exit 1
printf '%s\n' "$out" | awk '
    /^device_runtime: next, .* on purpose: the refusals below are expected$/ { if (!note) note = NR }
    /^shmalloc: / { if (!first) first = NR }
    /^shmalloc: PE [0-9]: free\(.*\): pointer is not the start of a block/ { refused++ }
    { last = $0 }
    END {
        if (!note || (first && first < note)) { print "FAIL: no note before the first message"; exit 1 }
        if (refused != 3) { print "FAIL: " refused + 0 " refusals, not one per PE"; exit 1 }
        if (last != "device_runtime: ok") { print "FAIL: the last line is not device_runtime: ok"; exit 1 }
    }'
