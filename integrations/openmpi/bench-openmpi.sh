#!/usr/bin/env bash
# integrations/openmpi/bench-openmpi.sh BUILD_DIR [REPS] - bench_memheap
# under oshrun with the memheaps ptmalloc, buddy and shmalloc, on 1 and 2
# PEs, one after the other in one sitting.  Prints figures, never fails on
# time.  Loopback only, as test-openmpi.sh.
set -u
B=$1 REPS=${2:-5}
SYSTEM_COMPONENTS=$(dirname "$(ls /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_memheap_ptmalloc.so 2>/dev/null ||
    find /usr/lib -name mca_memheap_ptmalloc.so | head -1)")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo UCX_TLS=self,sm
export OMPI_MCA_osc=^rdma # Debian's osc/rdma crashes every oshmem program in shmem_finalize
export OMPI_MCA_mca_base_component_path=$SYSTEM_COMPONENTS:$(cd "$B" && pwd)
export SHMEM_SYMMETRIC_HEAP_SIZE=64M
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for np in 1 2; do
    for heap in ptmalloc buddy shmalloc; do
        OMPI_MCA_memheap=$heap timeout 300 oshrun --oversubscribe -np $np -x UCX_TLS -x OMPI_MCA_osc \
            -x OMPI_MCA_memheap -x OMPI_MCA_mca_base_component_path -x SHMEM_SYMMETRIC_HEAP_SIZE \
            "$B/bench_memheap" "$REPS" 2>&1 | sed "s/^/$heap /" || echo "$heap np=$np: run failed"
    done
done
