#!/usr/bin/env bash
# bench/cluster.sh - the collective calls (bench/collective.c) with PEs on
# several nodes: 2 nodes x 2 PEs and 3 nodes (2+1+1), built by
# tests/cluster.sh (network namespaces on a private bridge, as root).
# Runs shmalloc's PMIx + libfabric transport (tcp;ofi_rxm on fab0 between
# nodes) and Open MPI's own OpenSHMEM (oshrun, UCX on fab0) on the same
# cluster; with BENCH_BASELINE=REV (a git revision) also that revision's
# transport, for a before/after comparison.  BENCH_ITERS (300) and
# BENCH_OSHMEM_ITERS (30) set the calls per batch.  Rows go to
# bench/results/cluster.csv; the table is printed.  Figures only: nothing
# here passes or fails.
set -u
cd "$(dirname "$0")/.."
B=${B:-build}
# Calls per batch (7 batches per figure): Open MPI's OpenSHMEM takes
# milliseconds per collective call between these nodes.
export BENCH_ITERS=${BENCH_ITERS:-300} BENCH_OSHMEM_ITERS=${BENCH_OSHMEM_ITERS:-30}
if [ "${1:-}" = --inside ]; then # inside the cluster: LAYOUT NPES LABEL...
    hosts=$2 pes=$3; shift 3
    common=(--oversubscribe --host "$hosts" -np "$pes")
    for label in "$@"; do
        case $label in
        openmpi-oshmem)
            cmd=(env UCX_NET_DEVICES=fab0 OMPI_MCA_opal_common_ucx_opal_mem_hooks=0
                 BENCH_COLLECTIVE_ITERS=$BENCH_OSHMEM_ITERS oshrun "${common[@]}" -x UCX_NET_DEVICES
                 -x BENCH_COLLECTIVE_ITERS "$PWD/$B/bench/coll_oshmem") ;;
        *)
            cmd=(env FI_PROVIDER="tcp;ofi_rxm" FI_TCP_IFACE=fab0 BENCH_COLLECTIVE_ITERS=$BENCH_ITERS mpirun
                 "${common[@]}" -x FI_PROVIDER -x FI_TCP_IFACE -x BENCH_COLLECTIVE_ITERS "$PWD/$B/bench/coll_$label") ;;
        esac
        if ! out=$(timeout 300 "${cmd[@]}" 2>/dev/null); then echo "note: $label on $hosts did not run" >&2; continue; fi
        grep -E '^[a-z_0-9A-Z]+,[0-9]' <<<"$out" | sed "s/^/$label,/"
    done
    exit 0
fi

mkdir -p "$B/bench" bench/results
FLAGS="-std=c99 -O2 -I."
PMIX=$(pkg-config --cflags --libs pmix libfabric)
labels=
make -s B="$B" "$B/libshmalloc.a" "$B/libshmalloc_pmix_ofi.a" &&
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

rows=bench/results/cluster.csv
echo "layout,implementation,name,ns_per_op,ns_min,ns_max,p999_ns" >"$rows"
run_layout() { # NAME NODES HOSTS NPES
    timeout 1200 tests/cluster.sh run "$2" bash "$0" --inside "$3" "$4" $labels | sed "s/^/$1,/" >>"$rows"
}
run_layout 2x2 2 10.77.0.1:2,10.77.0.2:2 4
run_layout 2+1+1 3 10.77.0.1:2,10.77.0.2:1,10.77.0.3:1 4

echo "collective calls across nodes, median ns per call (tcp;ofi_rxm or UCX on fab0)"
awk -F, 'NR > 1 { v[$1 "," $3 "," $2] = $4; k[$1 "," $3] = 1; a[$2] = 1 }
  END {
    for (x in k) {
      line = sprintf("  %-6s %-18s", substr(x, 1, index(x, ",") - 1), substr(x, index(x, ",") + 1))
      for (y in a) if (v[x "," y] != "") line = line sprintf("  %s %s", y, v[x "," y])
      print line
    }
  }' "$rows" | sort
