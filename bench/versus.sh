#!/bin/sh
# bench/versus.sh - wall time of allocators side by side: fresh processes,
# the allocators alternating run by run, the median over the processes.
#   bench/versus.sh [-w WORKLOADS] [-p PROCESSES] ALLOC...
# An ALLOC is a name of bench/allocators (build/bench/core_NAME, as `make
# bench-build` builds it) or the path of a core binary, such as one built
# from another revision.  Prints, per workload, each allocator's median
# ns/op (min-max), its ratio to the first one's, then the median of the
# rounds' own ratios, with their range: one round's runs are seconds apart,
# so a slow spell of the machine touches both sides of its ratio.  The
# order rotates from round to round; pinned to cpu $CPU (1), at real-time
# priority only with RT=1 (root).
set -eu
W=bcd P=7
usage() { echo "usage: $0 [-w bcd] [-p 7] ALLOC..." >&2; exit 2; }
while getopts w:p: o; do
  case $o in w) W=$OPTARG ;; p) P=$OPTARG ;; *) usage ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
BIN=${BENCH_BIN:-build/bench}
PIN="taskset -c ${CPU:-1}"
[ "${RT:-0}" = 1 ] && PIN="chrt -f 10 $PIN"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
path() { case $1 in */*) echo "$1" ;; *) echo "$BIN/core_$1" ;; esac; }
for a in "$@"; do
  [ -x "$(path "$a")" ] || { echo "$0: no $(path "$a"): make bench-build" >&2; exit 1; }
done
echo "# load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $P processes each"
stats() { # numbers, one a line -> "median min max"
  sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'
}
for w in $(echo "$W" | sed 's/./& /g'); do
  i=0
  while [ $i -lt "$P" ]; do
    n=$# k=0
    while [ "$k" -lt "$n" ]; do
      j=$(( (k + i) % n ))
      eval "a=\${$((j + 1))}"
      $PIN "$(path "$a")" "$w" | sed -n "s/.*ns_per_op=\([0-9.]*\).*/$i \1/p" >>"$TMP/$w.$j"
      k=$((k + 1))
    done
    i=$((i + 1))
  done
  k=0
  for a in "$@"; do
    base=$(cut -d' ' -f2 "$TMP/$w.0" | stats)
    line=$(cut -d' ' -f2 "$TMP/$w.$k" | stats)
    printf '%s %-40s %s\n' "$w" "$a" "$(echo "$line $base" | awk '{ printf "%7.1f (%.1f-%.1f)  x%.2f", $1, $2, $3, $1 / $4 }')$(
      [ $k = 0 ] || awk 'FNR == NR { b[$1] = $2; next } b[$1] > 0 { print $2 / b[$1] }' "$TMP/$w.0" "$TMP/$w.$k" |
        stats | awk '{ printf "  rounds x%.2f (%.2f-%.2f)", $1, $2, $3 }')"
    k=$((k + 1))
  done
done
