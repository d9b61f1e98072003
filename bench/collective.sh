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
source bench/rounds.sh

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

floor_probe "$floors"
set -- $PES
n=$((ROUNDS * $#)) k=0
for round in $(seq "$ROUNDS"); do
  for pes in $PES; do
    echo "  [$((k += 1))/$n] collective: round $round of $ROUNDS, $pes PEs (${SECONDS}s)"
    rounds_run "$runs" shmalloc-pthreads "$pes" "$B/bench/coll_pthreads" "$pes"
    [ $have_pmix = 1 ] &&
      rounds_run "$runs" shmalloc-pmix-shm "$pes" env FI_PROVIDER=shm mpirun --oversubscribe -np "$pes" -x FI_PROVIDER "$B/bench/coll_pmix"
    [ $have_osh = 1 ] && rounds_run "$runs" openmpi-oshmem "$pes" oshrun --oversubscribe -np "$pes" "$B/bench/coll_oshmem"
  done
done
floor_probe "$floors"

BENCH_LIB=1 source bench/run.sh
rounds_median "$runs" >"$rows.agg"
awk -F, '{ printf "collective,%s,%s,%s,%s,%s,%s,,,,,,\n", $1, $2, $3, $4, $5, $6 }' "$rows.agg" >"$rows"
summary_put collective "$rows"

trip=$(floor_trip "$floors")
echo
echo "median ns per call over $ROUNDS rounds (min-max), x the one-way floor ($trip / 2 ns), x Open MPI's"
rounds_table "$rows.agg" "$trip"
rm -f "$runs" "$floors" "$rows" "$rows.agg"
