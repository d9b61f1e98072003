#!/usr/bin/env bash
# bench/cluster.sh - the collective calls (bench/collective.c) with PEs on
# several nodes: 2 nodes x 2 PEs, 3 nodes (2+1+1) and 4 nodes x 4 PEs, in
# one cluster of 4 nodes that tests/checks/cluster.sh builds (network namespaces
# on a private bridge, as root).  Runs shmalloc's PMIx + libfabric
# transport (tcp;ofi_rxm on fab0 between nodes) and Open MPI's own
# OpenSHMEM (oshrun, UCX on fab0), with BENCH_BASELINE=REV (a git
# revision) also that revision's transport, in BENCH_ROUNDS (3) rounds
# that each run every one at every layout in turn; the floor probe
# (bench/floor.c) runs before and after.  BENCH_ITERS (300) and
# BENCH_OSHMEM_ITERS (100) set the calls per batch.  Prints, per call and
# layout, the median over the rounds (min-max), its ratio to the one-way
# floor and to Open MPI's; the medians go to bench/results/cluster.csv.
# Figures only: nothing here passes or fails.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
# Calls per batch (7 batches per figure).
export BENCH_ITERS=${BENCH_ITERS:-300} BENCH_OSHMEM_ITERS=${BENCH_OSHMEM_ITERS:-100}
LAYOUTS="2x2=10.77.0.1:2,10.77.0.2:2=4 2+1+1=10.77.0.1:2,10.77.0.2:1,10.77.0.3:1=4
  4x4=10.77.0.1:4,10.77.0.2:4,10.77.0.3:4,10.77.0.4:4=16"
source bench/rounds.sh
if [ "${1:-}" = --inside ]; then # inside the cluster: RUNS LABEL...
    runs=$2; shift 2
    for round in $(seq "${BENCH_ROUNDS:-3}"); do
        echo "round $round" >&2
        for layout in $LAYOUTS; do
            IFS== read -r name hosts pes <<<"$layout"
            # The nodes share this machine's 2 cpus, and each node's launcher
            # takes them for its own: it binds the first PE of every node to
            # cpu 0, and Open MPI, which sees no node oversubscribed,
            # busy-polls.  PEs of two nodes on one cpu then hand over only
            # when the scheduler preempts one (4 ms per barrier at 1+1 PEs).
            # So no binding for either runtime, and Open MPI yields when
            # idle, as it does on an oversubscribed node.
            common=(--oversubscribe --bind-to none --host "$hosts" -np "$pes")
            for label in "$@"; do
                case $label in
                openmpi-oshmem)
                    rounds_run "$runs" "$label" "$name" env UCX_NET_DEVICES=fab0 OMPI_MCA_opal_common_ucx_opal_mem_hooks=0 \
                        OMPI_MCA_mpi_yield_when_idle=1 BENCH_COLLECTIVE_ITERS="$BENCH_OSHMEM_ITERS" oshrun "${common[@]}" \
                        -x UCX_NET_DEVICES -x OMPI_MCA_mpi_yield_when_idle -x BENCH_COLLECTIVE_ITERS "$PWD/$B/bench/coll_oshmem" ;;
                *)
                    rounds_run "$runs" "$label" "$name" env FI_PROVIDER="tcp;ofi_rxm" FI_TCP_IFACE=fab0 \
                        BENCH_COLLECTIVE_ITERS="$BENCH_ITERS" mpirun "${common[@]}" -x FI_PROVIDER -x FI_TCP_IFACE \
                        -x BENCH_COLLECTIVE_ITERS "$PWD/$B/bench/coll_$label" ;;
                esac
            done
        done
    done
    exit 0
fi

mkdir -p "$B/bench" bench/results
FLAGS="-std=c99 -O2 -I."
PMIX=$(pkg-config --cflags --libs pmix libfabric)
labels=
make -s B="$B" "$B/libshmalloc.a" "$B/libshmalloc_pmix_ofi.a" "$B/bench/floor" &&
    cc $FLAGS -DBENCH_PMIX_OFI bench/collective.c "$B/libshmalloc_pmix_ofi.a" "$B/libshmalloc.a" $PMIX \
        -o "$B/bench/coll_shmalloc" && labels="$labels shmalloc"
if [ -n "${BENCH_BASELINE:-}" ]; then
    base=$(mktemp -d)
    git archive "$BENCH_BASELINE" | tar -x -C "$base" || exit 1
    if [ -f "$base/shmalloc.c" ]; then # the allocator compiled once, in libshmalloc
        make -s -C "$base" build/libshmalloc.a build/libshmalloc_pmix_ofi.a &&
            cc $FLAGS -I"$base" -DBENCH_PMIX_OFI bench/collective.c "$base/build/libshmalloc_pmix_ofi.a" \
                "$base/build/libshmalloc.a" $PMIX -o "$B/bench/coll_baseline" && labels="baseline $labels"
    else # the transport expanded the implementation itself
        cc $FLAGS -I"$base" -DBENCH_PMIX_OFI bench/collective.c \
            "$base/transports/shmalloc_pmix_ofi.c" $PMIX -o "$B/bench/coll_baseline" && labels="baseline $labels"
    fi
    rm -rf "$base"
fi
oshcc $FLAGS bench/collective.c -o "$B/bench/coll_oshmem" 2>/dev/null && labels="$labels openmpi-oshmem" ||
    echo "note: Open MPI's OpenSHMEM (oshcc, libopenmpi-dev) is not available"

runs=$(mktemp) floors=$(mktemp)
floor_probe "$floors"
timeout 3600 tests/checks/cluster.sh run 4 bash "$0" --inside "$runs" $labels
floor_probe "$floors"
rounds_median "$runs" >"$runs.agg"
echo "layout,implementation,name,ns_per_op,ns_min,ns_max" >bench/results/cluster.csv
awk -F, '{ print $3 "," $1 "," $2 "," $4 "," $5 "," $6 }' "$runs.agg" >>bench/results/cluster.csv
trip=$(floor_trip "$floors")
echo
echo "collective calls across nodes (tcp;ofi_rxm or UCX on fab0): median ns per call over ${BENCH_ROUNDS:-3} rounds (min-max), x the one-way floor ($trip / 2 ns), x Open MPI's"
rounds_table "$runs.agg" "$trip"
rm -f "$runs" "$runs.agg" "$floors"
