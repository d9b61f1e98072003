#!/usr/bin/env bash
# integrations/openmpi/test-openmpi.sh BUILD_DIR - runs tests/oshmem_heap
# under Open MPI's oshrun with the stock ptmalloc memheap and with the
# shmalloc component from BUILD_DIR, at 2 and 4 PEs, with the heaps at one
# address and each PE's at its own, and prints the results side by side.
# Fails when a scenario passes with ptmalloc and not with shmalloc, or when
# a log does not show the memheap asked for as the one selected.
# Loopback only: UCX on shared memory, Open MPI's out-of-band on lo.
set -u
B=$1
LOGS=$B/logs
mkdir -p "$LOGS"
SYSTEM_COMPONENTS=$(dirname "$(ls /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_memheap_ptmalloc.so 2>/dev/null ||
    find /usr/lib -name mca_memheap_ptmalloc.so | head -1)")
HEAP_SIZE=64M

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo UCX_TLS=self,sm
export OMPI_MCA_osc=^rdma # Debian's osc/rdma crashes every oshmem program in shmem_finalize
export OMPI_MCA_mca_base_component_path=$SYSTEM_COMPONENTS:$(cd "$B" && pwd)
export OMPI_MCA_memheap_base_verbose=10 SHMEM_SYMMETRIC_HEAP_SIZE=$HEAP_SIZE

# run HEAP NP ADDR LOG SCENARIO...: one oshrun; ADDR "different" gives each
# PE its own heap address (below 2^47, 4 GiB apart, from the PE's rank).
run() {
    local heap=$1 np=$2 addr=$3 log=$4
    shift 4
    local wrap=()
    [ "$addr" = different ] && wrap=(sh -c 'OMPI_MCA_sshmem_base_start_address=$((0x100000000000 + OMPI_COMM_WORLD_RANK * 0x100000000)) exec "$0" "$@"')
    OMPI_MCA_memheap=$heap OSHMEM_HEAP_EXPECT_ADDR=$addr timeout 120 oshrun --oversubscribe -np "$np" \
        -x UCX_TLS -x OMPI_MCA_osc -x OMPI_MCA_memheap -x OMPI_MCA_mca_base_component_path \
        -x OMPI_MCA_memheap_base_verbose -x SHMEM_SYMMETRIC_HEAP_SIZE -x OSHMEM_HEAP_EXPECT_ADDR \
        "${wrap[@]}" "$B/oshmem_heap" "$@" >"$log" 2>&1
    echo "exit $?" >>"$log"
}

SCENARIOS="addresses symmetric realloc align calloc random internal align16 malloc0 bad_free"
configs=()
status=0
for np in 2 4; do
    for addr in same different; do
        for heap in ptmalloc shmalloc; do
            log=$LOGS/openmpi-$heap-np$np-$addr
            start=$(date +%s%N)
            run $heap $np $addr "$log.log" all align16 malloc0
            # A heap may end the job on a bad free: that scenario runs alone.
            run $heap $np $addr "$log-bad_free.log" bad_free
            printf '%s np=%d %-9s %6d ms\n' $heap $np $addr $((($(date +%s%N) - start) / 1000000))
            selected=$(grep -c "Selected component \[$heap\]" "$log.log")
            if [ "$selected" != "$np" ]; then
                echo "FAIL $log.log: $selected of $np PEs show memheap $heap selected" >&2
                status=1
            fi
        done
        configs+=("np$np-$addr")
    done
done

# The table: one row per scenario, ptmalloc/shmalloc in each column.
result() { # LOG SCENARIO: ok, FAIL, or "-" when the run ended before it
    if grep -qx "ok $2" "$1"; then echo ok; elif grep -qx "FAIL $2" "$1"; then echo FAIL; else echo -; fi
}
printf '\n%-10s' scenario
for c in "${configs[@]}"; do printf ' | %-17s' "$c"; done
printf '\n%-10s' ""
for c in "${configs[@]}"; do printf ' | %-17s' "ptmalloc/shmalloc"; done
echo
declare -A passed=([ptmalloc]=0 [shmalloc]=0) total=0
for s in $SCENARIOS; do
    printf '%-10s' "$s"
    for c in "${configs[@]}"; do
        suffix=""
        [ "$s" = bad_free ] && suffix=-bad_free
        p=$(result "$LOGS/openmpi-ptmalloc-$c$suffix.log" "$s")
        m=$(result "$LOGS/openmpi-shmalloc-$c$suffix.log" "$s")
        printf ' | %-17s' "$p/$m"
        [ "$p" = ok ] && passed[ptmalloc]=$((passed[ptmalloc] + 1))
        [ "$m" = ok ] && passed[shmalloc]=$((passed[shmalloc] + 1))
        total=$((total + 1))
        if [ "$p" = ok ] && [ "$m" != ok ]; then status=1; fi
    done
    echo
done
echo "ptmalloc: ${passed[ptmalloc]} of $total passed; shmalloc: ${passed[shmalloc]} of $total passed"
echo "selected (shmalloc runs):"
grep -h "Selected component \[shmalloc\]\|shmalloc: TLSF" "$LOGS"/openmpi-shmalloc-np2-same.log | sed 's/^\[[^]]*\] *//' | sort | uniq -c
[ $status = 0 ] && echo "test-openmpi: every scenario that passes with ptmalloc passes with shmalloc" ||
    echo "test-openmpi: FAILED (see $LOGS/openmpi-*.log)" >&2
exit $status
