#!/usr/bin/env bash
# bench/cest.sh - the cycle estimate per op of workloads a-d, repeatable to
# the last digit: `make bench-cest` (bench/README.md gives the method).
#
#   bench/cest.sh [--csv] [WORKLOADS [ALLOCATOR...]]     (defaults: abcd shmalloc)
#
# Runs build/bench/cest_NAME (bench/cest.c with NAME's adapter) under
# callgrind, one process per allocator and workload, with the caches
# pinned and address randomisation off, and prints per op of the counted
# loop: instructions, L1 data and last-level data misses, mispredicted
# branches, the cycle estimate and (region allocators, b-d) frag.  --csv
# prints "allocator,workload,ops,ir,l1d,lld,bm,cest,frag" per op instead.
# Environment: BENCH_BIN (default build/bench), LIVE (live slots of b and
# c, 10000), REGION (region MiB, 256), CEST_STEPS (steps of the loop,
# default 1 000 000, c 500 000), BENCH_JOBS (runs at a time, default the
# cpus: the counts do not depend on it).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
BIN=$(cd "${BENCH_BIN:-build/bench}" 2>/dev/null && pwd) || { echo "cest: no ${BENCH_BIN:-build/bench}: make bench-build" >&2; exit 1; }
csv=0
[ "${1:-}" = --csv ] && { csv=1; shift; }
WORKLOADS=$(echo "${1:-abcd}" | sed 's/./& /g')
[ $# -gt 0 ] && shift
ALLOCATORS=${*:-shmalloc}
JOBS=${BENCH_JOBS:-$(nproc 2>/dev/null || echo 1)}
ARGS=(--region "${REGION:-256}" --live "${LIVE:-10000}")
[ -n "${CEST_STEPS:-}" ] && ARGS+=(--steps "$CEST_STEPS")
# One core's L1 and L2 (32 KiB and 1 MiB, 8-way, 64-byte lines), fixed so
# that the counts do not depend on the machine valgrind runs on.
CACHE=(--cache-sim=yes --branch-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=1048576,8,64)
command -v valgrind >/dev/null 2>&1 || { echo "cest: valgrind is missing (scripts/deps.sh bench installs it)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One run: an empty environment, no address randomisation, and the binary
# started as ./cest from a directory of its own, so the stack and every
# mapping land where they did the last time, wherever the tree is.
count() { # NAME WORKLOAD
  local out=$tmp/$1.$2
  mkdir "$out" && ln -s "$BIN/cest_$1" "$out/cest"
  (cd "$out" && env -i PATH=/usr/bin:/bin setarch "$(uname -m)" -R valgrind --tool=callgrind "${CACHE[@]}" \
     --toggle-collect='op_*' --callgrind-out-file="$out.cg" ./cest "$2" "${ARGS[@]}" >"$out.ops" 2>"$out.log") ||
    { echo "cest: $1 $2 failed: $(tail -n 3 "$out.log")" >&2; return; }
  [ "$2" = a ] || "$BIN/cest_$1" "$2" "${ARGS[@]}" --frag >"$out.frag" 2>/dev/null || true
}

names=()
for a in $ALLOCATORS; do
  if [ -x "$BIN/cest_$a" ]; then names+=("$a"); else echo "cest: note: $a skipped: $BIN/cest_$a is not built" >&2; fi
done
set -- $WORKLOADS
n=$(( ${#names[@]} * $# )) k=0
for a in "${names[@]}"; do
  for w in $WORKLOADS; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    echo "cest: [$((k += 1))/$n] $a $w (${SECONDS}s)" >&2
    count "$a" "$w" &
  done
done
wait
echo "cest: done in ${SECONDS}s" >&2

# CEst = Ir + 10 (I1mr + D1mr + D1mw) + 100 (ILmr + DLmr + DLmw) + 10 (Bcm + Bim)
[ "$csv" = 1 ] || printf '| allocator | wl | Ir/op | L1d miss/op | LL miss/op | mispredicted/op | CEst/op | frag |\n|---|---|---:|---:|---:|---:|---:|---:|\n'
for a in "${names[@]}"; do
  for w in $WORKLOADS; do
    [ -s "$tmp/$a.$w.cg" ] || continue
    awk -v a="$a" -v w="$w" -v csv="$csv" -v ops="$(sed -n 's/^ops=//p' "$tmp/$a.$w.ops")" \
        -v frag="$(sed -n 's/^frag=\([0-9.]*\).*/\1/p' "$tmp/$a.$w.frag" 2>/dev/null)" '
      /^events: / { for (i = 2; i <= NF; i++) name[i] = $i }
      /^(summary|totals): / { for (i = 2; i <= NF; i++) v[name[i]] = $i }
      END {
        cest = v["Ir"] + 10 * (v["I1mr"] + v["D1mr"] + v["D1mw"]) + 100 * (v["ILmr"] + v["DLmr"] + v["DLmw"]) \
             + 10 * (v["Bcm"] + v["Bim"])
        if (frag != "") frag = sprintf("%.3f", frag)
        line = sprintf("%.1f|%.2f|%.3f|%.2f|%.1f|%s", v["Ir"] / ops, (v["D1mr"] + v["D1mw"]) / ops,
                       (v["DLmr"] + v["DLmw"]) / ops, (v["Bcm"] + v["Bim"]) / ops, cest / ops, frag)
        if (csv) { gsub(/\|/, ",", line); print a "," w "," ops "," line }
        else { gsub(/\|/, " | ", line); print "| " a " | " w " | " line " |" }
      }' "$tmp/$a.$w.cg"
  done
done
