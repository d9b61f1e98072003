#!/bin/sh
# Wall time of allocators side by side on allocbench (../shared/allocbench),
# the way bench/README.md quotes it: fresh processes, the allocators
# alternating run by run, each process's fastest repetition, the median of
# those over the processes.
#   bench/versus.sh [-w WORKLOADS] [-p PROCESSES] [-r REPS] [-n SCALE] ALLOC...
# An ALLOC is a name under $ALLOCBENCH_OUT/bin (bench_NAME, as allocbench's
# Makefile builds it; bench/README.md shows how) or the path of any allocbench binary, such as one built
# from another revision of shmalloc.h.  Prints, per workload, each
# allocator's median ns/op (min-max of the processes' fastest) and its ratio
# to the first one's, then the ratio of the minima (a workload whose
# processes fall into a fast and a slow mode, as c's do, shows it there),
# then the median of the rounds' own ratios, with their range.  The order
# rotates from round to round.  Pinned to cpu $CPU (1) at chrt -f 10 when
# root may.
set -eu
W=bcd P=7 R=7 N=1
while getopts w:p:r:n: o; do
  case $o in
    w) W=$OPTARG ;; p) P=$OPTARG ;; r) R=$OPTARG ;; n) N=$OPTARG ;;
    *) echo "usage: $0 [-w bcd] [-p 7] [-r 7] [-n 1] ALLOC..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-w bcd] [-p 7] [-r 7] [-n 1] ALLOC..." >&2; exit 2; }
BIN=${ALLOCBENCH_OUT:-/tmp/allocbench}/bin
CPU=${CPU:-1}
if chrt -f 10 true 2>/dev/null; then PIN="chrt -f 10 taskset -c $CPU"; else PIN="taskset -c $CPU"; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
path() { case $1 in */*) echo "$1" ;; *) echo "$BIN/bench_$1" ;; esac; }
for a in "$@"; do
  [ -x "$(path "$a")" ] || { echo "$0: no $(path "$a"): build it with ../shared/allocbench/Makefile (see bench/README.md, \"versus.sh\")" >&2; exit 1; }
done
echo "# load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $P processes x $R repetitions, -n $N"
stats() { # numbers, one a line -> "median min max"
  sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)], v[1], v[NR] }'
}
for w in $(echo "$W" | sed 's/./& /g'); do
  i=0
  while [ $i -lt "$P" ]; do
    n=$# k=0
    while [ $k -lt "$n" ]; do
      j=$(( (k + i) % n ))
      eval "a=\${$((j + 1))}"
      # column 5 of allocbench's CSV line: the fastest repetition's ns/op
      $PIN "$(path "$a")" -w "$w" -r "$R" -n "$N" 2>/dev/null | awk -F, -v i=$i 'NR == 1 { print i, $5 }' >> "$TMP/$w.$j"
      k=$((k + 1))
    done
    i=$((i + 1))
  done
  k=0
  for a in "$@"; do
    # the median (min-max), its ratio to the first allocator's, the ratio
    # of the minima, and the median (min-max) of the rounds' own ratios:
    # one round's runs are seconds apart, so a slow spell of the machine
    # touches both sides of its ratio
    base=$(cut -d' ' -f2 "$TMP/$w.0" | stats)
    line=$(cut -d' ' -f2 "$TMP/$w.$k" | stats)
    printf '%s %-40s %s\n' "$w" "$a" "$(echo "$line $base" | awk '{ printf "%7.1f (%.1f-%.1f)  x%.2f  minima x%.2f", $1, $2, $3, $1 / $4, $2 / $5 }')$(
      [ $k = 0 ] || awk 'FNR == NR { b[$1] = $2; next } b[$1] > 0 { print $2 / b[$1] }' "$TMP/$w.0" "$TMP/$w.$k" |
        stats | awk '{ printf "  rounds x%.2f (%.2f-%.2f)", $1, $2, $3 }')"
    k=$((k + 1))
  done
done
