#!/usr/bin/env bash
# bench/hugepages.sh - random 8-byte accesses over a 1 GiB heap on base
# pages, on transparent huge pages and, as root, on hugetlbfs pages
# (bench/hugepages.c).  As root it adds 520 2 MiB pages to the pool for the
# last run and gives them back.  Prints one line per setting; never fails
# on time.
#
#   BENCH_BIN=build/bench bash bench/hugepages.sh [ACCESSES]
set -u
BIN=${BENCH_BIN:-build/bench}/hugepages
ACCESSES=${1:-20000000}
POOL=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
PIN=; command -v taskset >/dev/null 2>&1 && PIN="taskset -c 1"
run() { SHMALLOC_HUGE_PAGES=$1 $PIN "$BIN" "$ACCESSES" 2>&1 | sed 's/^shmalloc: /  note: /'; }

echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
echo "2 MiB hugetlbfs pool: $(cat $POOL 2>/dev/null) pages, $(cat ${POOL%nr_hugepages}free_hugepages 2>/dev/null) free"
run off
run auto   # hugetlbfs when the pool has room, else transparent huge pages
if [ "$(id -u)" = 0 ] && [ -w "$POOL" ]; then
  before=$(cat $POOL)
  echo $((before + 520)) > $POOL
  run 2M
  echo "$before" > $POOL
else
  echo "hugetlbfs: skipped (needs root to fill the pool)"
fi
