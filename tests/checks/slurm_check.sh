#!/usr/bin/env bash
# tests/checks/slurm_check.sh WORKER - the PMIx + libfabric worker under Slurm's
# srun --mpi=pmix, on a one-node cluster that this script starts and stops
# itself inside a network namespace that has only the loopback interface.
# No munge: auth/none and cred/none.  Prints PASS/FAIL per run and a final
# "slurm-check: N passed, M failed" line; exits nonzero on any failure.
set -u
worker=$(readlink -f "${1:-build/pmix_ofi_worker}")
if [ "${SLURM_CHECK_INSIDE:-0}" != 1 ]; then
    exec timeout 300 unshare -n env SLURM_CHECK_INSIDE=1 bash "$0" "$worker"
fi

dir=$(mktemp -d /tmp/shmalloc-slurm.XXXXXX)
ip link set lo up
ip addr add 10.254.254.1/32 dev lo # the daemons' host name look-ups stall without a second address
export SLURM_CONF=$dir/slurm.conf
. "$(dirname "$0")/slurm_conf.sh"
{ slurm_common_conf; cat <<CONF
ClusterName=shmalloc
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/ctld.pid
SlurmdPidFile=$dir/d.pid
SlurmctldLogFile=$dir/ctld.log
SlurmdLogFile=$dir/d.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
CONF
} >"$SLURM_CONF"
mkdir -p "$dir/state" "$dir/spool"
stop() {
    [ -f "$dir/d.pid" ] && kill "$(cat "$dir/d.pid")" 2>/dev/null
    [ -f "$dir/ctld.pid" ] && kill "$(cat "$dir/ctld.pid")" 2>/dev/null
    sleep 1
    rm -rf "$dir"
}
trap stop EXIT
slurmctld && slurmd || { echo "FAIL: the Slurm daemons did not start"; cat "$dir"/*.log 2>/dev/null | tail -20; exit 1; }
for _ in $(seq 40); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 0.5; done

passed=0 failed=0
check() { # PROVIDER NPES
    local out rc
    out=$(FI_PROVIDER=$1 FI_TCP_IFACE=lo timeout 120 srun --mpi=pmix -n "$2" --overcommit "$worker" all 2>&1); rc=$?
    if [ $rc -eq 0 ] && [ "$(grep -c ': OK all$' <<<"$out")" -eq "$2" ] && ! grep -q FAIL <<<"$out"; then
        echo "PASS srun --mpi=pmix -n $2, FI_PROVIDER=$1"; passed=$((passed + 1))
    else
        echo "FAIL srun --mpi=pmix -n $2, FI_PROVIDER=$1 (status $rc)"; tail -20 <<<"$out"; failed=$((failed + 1))
    fi
}
check shm 2
check shm 4
check "tcp;ofi_rxm" 2
check "tcp;ofi_rxm" 4
echo "slurm-check: $passed passed, $failed failed"
[ $failed -eq 0 ]
