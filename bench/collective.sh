#!/usr/bin/env bash
# bench/collective.sh - the collective calls on shmalloc's two transports
# and on Open MPI's own OpenSHMEM, side by side in one sitting, against the
# floor.  Builds bench/collective.c three ways and bench/floor.c; runs the
# floor probe, then BENCH_ROUNDS (3) rounds that each run every build at
# each PE count of BENCH_PES (2 4 8) one after the other, then the floor
# probe again.  Prints, per call and PE count, the median over the rounds
# of each run's median (min-max over the rounds), its ratio to the one-way
# floor (half the probes' median round trip) and to Open MPI's; adds the
# medians to bench/results/summary.csv (suite "collective").  Figures
# only: nothing here passes or fails.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
ROUNDS=${BENCH_ROUNDS:-3}
PES=${BENCH_PES:-2 4 8}
mkdir -p "$B/bench"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_opal_common_ucx_opal_mem_hooks=0 FI_TCP_IFACE=lo
FLAGS="-std=c99 -O2 -I."
runs=$(mktemp) floors=$(mktemp) rows=$(mktemp)

make -s B="$B" "$B/libshmalloc.a" "$B/libshmalloc_pthreads.a" "$B/bench/floor" || exit 1
cc $FLAGS -DBENCH_PTHREADS bench/collective.c "$B/libshmalloc_pthreads.a" "$B/libshmalloc.a" -pthread \
  -o "$B/bench/coll_pthreads" || exit 1
have_pmix=0
if pkg-config --exists pmix libfabric 2>/dev/null && make -s B="$B" "$B/libshmalloc_pmix_ofi.a"; then
  cc $FLAGS -DBENCH_PMIX_OFI bench/collective.c "$B/libshmalloc_pmix_ofi.a" "$B/libshmalloc.a" \
    $(pkg-config --cflags --libs pmix libfabric) -o "$B/bench/coll_pmix" && have_pmix=1
fi
have_osh=0
scripts/deps.sh bench >/dev/null 2>&1 || true # Open MPI's OpenSHMEM headers (libopenmpi-dev)
oshcc $FLAGS bench/collective.c -o "$B/bench/coll_oshmem" 2>/dev/null && have_osh=1
[ $have_osh = 1 ] || echo "note: Open MPI's OpenSHMEM (oshcc, libopenmpi-dev) is not available: no ratios"

floor() { # the probe's round trip, ns, to $floors
  local out
  out=$("$B/bench/floor") && echo "$out" && sed -n 's/.*round trip \([0-9]*\) ns.*/\1/p' <<<"$out" >>"$floors"
}

add() { # LABEL PES command...: each figure's median, to $runs
  local label=$1 pes=$2 out
  shift 2
  if ! out=$(timeout 300 "$@" 2>/dev/null); then echo "note: $label with $pes PEs did not run"; return; fi
  grep -E '^[a-z_0-9A-Z]+,[0-9]' <<<"$out" | awk -F, -v a="$label" -v p="$pes" '{ print a "," $1 "," p "," $2 }' >>"$runs"
}

floor
for round in $(seq "$ROUNDS"); do
  echo "round $round of $ROUNDS"
  for pes in $PES; do
    add shmalloc-pthreads "$pes" "$B/bench/coll_pthreads" "$pes"
    [ $have_pmix = 1 ] &&
      add shmalloc-pmix-shm "$pes" env FI_PROVIDER=shm mpirun --oversubscribe -np "$pes" -x FI_PROVIDER "$B/bench/coll_pmix"
    [ $have_osh = 1 ] && add openmpi-oshmem "$pes" oshrun --oversubscribe -np "$pes" "$B/bench/coll_oshmem"
  done
done
floor

# label,call,pes,median,min,max over the rounds
sort -t, -k1,3 -k4,4n "$runs" | awk -F, '
  function flush() { if (n) printf "%s,%d,%d,%d\n", key, v[int((n + 1) / 2)], v[1], v[n]; n = 0 }
  { k = $1 "," $2 "," $3; if (k != key) { flush(); key = k } v[++n] = $4 }
  END { flush() }' >"$rows.agg"
awk -F, '{ printf "collective,%s,%s,%s,%s,%s,%s,,,,,,\n", $1, $2, $3, $4, $5, $6 }' "$rows.agg" >"$rows"
BENCH_LIB=1 source bench/run.sh
summary_put collective "$rows"

trip=$(sort -n "$floors" | awk '{ v[++n] = $1 } END { print v[int((n + 1) / 2)] }')
echo
echo "median ns per call over $ROUNDS rounds (min-max), x the one-way floor ($trip / 2 ns), x Open MPI's"
awk -F, -v floor="$trip" '
  { m[$1 "," $2 "," $3] = $4; r[$1 "," $2 "," $3] = $5 "-" $6; calls[$2] = 1; pes[$3] = 1; labels[$1] = 1 }
  END {
    for (c in calls) for (p in pes) for (l in labels) {
      k = l "," c "," p
      if (!(k in m)) continue
      line = sprintf("%-40s %s PEs  %-18s %7d (%s)  x%.2f floor", c, p, l, m[k], r[k], m[k] / (floor / 2))
      o = "openmpi-oshmem," c "," p
      if (l != "openmpi-oshmem" && (o in m)) line = line sprintf("  x%.2f Open MPI", m[k] / m[o])
      print line
    }
  }' "$rows.agg" | sort -k1,1 -k2,2n -k4,4
rm -f "$runs" "$floors" "$rows" "$rows.agg"
