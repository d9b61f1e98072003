#!/bin/sh
# tests/checks/bench_check.sh - `make bench-cest` from this tree alone: a short
# loop of each workload on both metadata modes must give each its row of
# counts per op and its cycle estimate (and frag on b-d).  The figures
# themselves are not checked: a benchmark's figures are not results.
#   tests/checks/bench_check.sh     (make bench-check; B as make's)
set -u
cd "$(dirname "$0")/../.." || exit 1
out=$(CEST_STEPS=1000 ${MAKE:-make} --no-print-directory -s bench-cest B="${B:-build}" LIVE=1000 \
        CEST_ALLOCATORS="shmalloc shmalloc-separate" 2>&1) || { echo "$out"; echo "bench-check: make bench-cest failed"; exit 1; }
echo "$out" | awk -F' *[|] *' '
  BEGIN { n = split("shmalloc shmalloc-separate", a, " "); for (i = 1; i <= n; i++) for (w = 0; w < 4; w++) want[a[i], substr("abcd", w + 1, 1)] = 1 }
  # | allocator | wl | Ir | L1d | LL | mispredicted | CEst | frag |
  ($2, $3) in want {
    ok = $4 ~ /^[0-9]+[.][0-9]$/ && $5 ~ /^[0-9.]+$/ && $6 ~ /^[0-9.]+$/ && $7 ~ /^[0-9.]+$/ && $8 ~ /^[0-9]+[.][0-9]$/ && $4 > 0 && $8 >= $4
    ok = ok && ($3 == "a" ? $9 == "" : $9 ~ /^[0-9]+[.][0-9]+$/)
    if (ok) { delete want[$2, $3]; rows++ } else print "bench-check: a bad row: " $0
  }
  END { for (k in want) { split(k, p, SUBSEP); print "bench-check: no row for " p[1] " " p[2] }
        if (rows != 8 || length(want)) { exit 1 }
        print "bench-check: bench-cest gave the counts of workloads a-d on both metadata modes" }' ||
  { echo "$out"; exit 1; }
