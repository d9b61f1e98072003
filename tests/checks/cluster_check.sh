#!/usr/bin/env bash
# tests/checks/cluster_check.sh WORKER - the PMIx + libfabric worker with PEs on
# several nodes: 2 nodes x 2 PEs, 3 nodes (2+1+1) and 4 nodes x 4 PEs built
# by tests/checks/cluster.sh (network namespaces on a private bridge, as root),
# with tcp;ofi_rxm on each node's fab0 between nodes.  Every scenario of
# "all", heaps at one address and at different ones, hierarchical and flat
# barriers, heap growth, the counts against the cost model, teams and
# spaces whose PEs span nodes, and a PE
# killed on one node: under mpirun, then under Slurm's srun --mpi=pmix
# with one slurmd per node (and slurmctld beside the bridge).  Prints PASS/FAIL per run and a final "cluster-check:
# N passed, M failed" line; exits nonzero on any failure.
set -u
worker=$(readlink -f "${1:-build/pmix_ofi_worker}")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/slurm_conf.sh"
if [ -z "${SHMALLOC_TEST_CLUSTER_NS:-}" ]; then
    exec timeout 1200 "$here/cluster.sh" run 4 bash "$0" "$worker"
fi

DEATH_LIMIT=20 # seconds a job may take to end after a PE died
launchers=${CLUSTER_LAUNCHERS:-mpirun srun}
# Fewer random operations than on one node: the same calls, and 16 PEs on
# 2 cores stay well inside the launch timeout.
export SHMALLOC_TEST_WORKER_OPS=${SHMALLOC_TEST_WORKER_OPS:-3000}
passed=0 failed=0 out= rc= seconds=

# A layout: its PEs, then per node "PES@HOST" (mpirun's --host entry is
# HOST:PES, srun's node is nodeI for 10.77.0.I).
TWO="4 2@10.77.0.1 2@10.77.0.2"
THREE="4 2@10.77.0.1 1@10.77.0.2 1@10.77.0.3"
FOUR="16 4@10.77.0.1 4@10.77.0.2 4@10.77.0.3 4@10.77.0.4"
npes_of() { echo "${1%% *}"; }
nodes_of() { set -- $1; echo $(($# - 1)); }

# $via is mpirun or srun; LAYOUT as above.
launch() { # LAYOUT SCENARIO NAME=VALUE...
    local layout=$1 scenario=$2 start xs=() v cmd hosts= nodes= sizes= n
    shift 2
    for v in ${layout#* }; do
        hosts+=${hosts:+,}${v#*@}:${v%@*} nodes+=${nodes:+,}node${v##*.} sizes+=${sizes:+,}${v%@*}
    done
    n=$(npes_of "$layout")
    if [ "$via" = srun ]; then # srun passes the whole environment
        cmd=(srun --mpi=pmix -n "$n" -N "$(nodes_of "$layout")" -w "$nodes" -m block --overcommit)
    else
        for v in "$@"; do xs+=(-x "${v%%=*}"); done
        cmd=(mpirun --oversubscribe --host "$hosts" -np "$n" -x FI_TCP_IFACE -x SHMALLOC_VERBOSE -x IPATH_NO_BACKTRACE
             "${xs[@]}")
    fi
    start=$(date +%s%N)
    out=$(env "$@" FI_TCP_IFACE=fab0 SHMALLOC_VERBOSE=1 IPATH_NO_BACKTRACE=1 timeout -k 5 60 \
        "${cmd[@]}" "$worker" "$scenario" 2>&1 </dev/null)
    rc=$?
    seconds=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
}

count() { grep -c -- "$1" <<<"$out"; }
result() { # OK? WHAT
    if [ "$1" = 1 ]; then
        echo "PASS $via: $2 ($seconds s)"
        passed=$((passed + 1))
    else
        echo "FAIL $via: $2 (status $rc after $seconds s)"; tail -25 <<<"$out"; failed=$((failed + 1))
    fi
}

# Every PE passed SCENARIO and said how it synchronises; endpoints on fab0.
check_run() { # WHAT LAYOUT SCENARIO EXPECT_BARRIERS EXPECT_ADDRESSES NAME=VALUE...
    local what=$1 layout=$2 scenario=$3 barriers=$4 addresses=$5 ok=1 n v k
    shift 5
    n=$(npes_of "$layout")
    launch "$layout" "$scenario" "$@"
    [ $rc -eq 0 ] || ok=0
    [ "$(count ": OK $scenario\$")" -eq "$n" ] || ok=0
    [ "$(count FAIL)" -eq 0 ] || ok=0
    [ "$(count "barriers $barriers")" -eq "$n" ] || ok=0
    [ "$(count "($addresses")" -eq "$n" ] || ok=0
    # direct copies only to the PEs of the same node: K others for each of its K + 1
    for k in $(for v in ${layout#* }; do echo "${v%@*}"; done | sort -u); do
        [ "$(count "direct copies to $((k - 1)) PE$([ "$k" -eq 2 ] || echo s) of this node")" -eq \
          $(($(for v in ${layout#* }; do [ "${v%@*}" = "$k" ] && echo "$k"; done | paste -sd+) + 0)) ] || ok=0
    done
    [ "$(count "provider tcp;ofi_rxm, endpoint fi_sockaddr_in://10.77.0.")" -eq "$n" ] || ok=0
    [ -z "$(ls /dev/shm | grep '^shmalloc-')" ] || ok=0
    result $ok "$what"
}

# PE 1 dies: the job ends in bounded time, someone names PE 1 and says why.
check_death() { # WHAT LAYOUT SCENARIO
    local ok=1
    launch "$2" "$3" SHMALLOC_TIMEOUT=5
    [ $rc -ne 0 ] || ok=0
    awk -v s="$seconds" -v l=$DEATH_LIMIT 'BEGIN { exit !(s < l) }' || ok=0
    [ "$(count FAIL)" -eq 0 ] || ok=0
    grep -qE 'for PE 1|PE 1 ended|rank 1 |,1\]|task 1: Killed' <<<"$out" || ok=0
    # srun kills the other tasks itself (SIGKILL) as soon as task 1 dies:
    # then Slurm's line naming task 1 is the message.
    [ "$via" = srun ] || grep -q 'shmalloc: ' <<<"$out" || ok=0
    [ -z "$(ls /dev/shm | grep '^shmalloc-')" ] || ok=0
    result $ok "$1"
}

HIER2="through node memory on each of 2 nodes, messages between their leaders"
HIER3="through node memory on each of 3 nodes, messages between their leaders"
HIER4="through node memory on each of 4 nodes, messages between their leaders"
SAME="same address on every PE" DIFFER="addresses differ"
ALL=(SHMEM_SYMMETRIC_HEAP_SIZE=128M)
GROW=(SHMEM_SYMMETRIC_HEAP_SIZE=1M SHMALLOC_HEAP_MAX=256M)
# FI_PROVIDER unset: PEs on several nodes choose tcp;ofi_rxm themselves.
cases() {
    check_run "2 nodes x 2 PEs, all scenarios, one heap address, hierarchical barriers" "$TWO" all "$HIER2" "$SAME" \
        "${ALL[@]}" SHMALLOC_TEST_EXPECT_ADDRESSES=same
    check_run "2 nodes x 2 PEs, all scenarios, different heap addresses, barriers by messages" "$TWO" all "by messages" \
        "$DIFFER" "${ALL[@]}" FI_PROVIDER="tcp;ofi_rxm" SHMALLOC_PMIX_OFI_ANY_ADDRESS=1 SHMALLOC_TEST_EXPECT_ADDRESSES=differ \
        SHMALLOC_PMIX_OFI_NODE_BARRIER=0
    check_run "3 nodes (2+1+1), all scenarios, one heap address, hierarchical barriers" "$THREE" all "$HIER3" "$SAME" \
        "${ALL[@]}" FI_PROVIDER="tcp;ofi_rxm" SHMALLOC_TEST_EXPECT_ADDRESSES=same
    check_run "3 nodes (2+1+1), all scenarios, different heap addresses, hierarchical barriers" "$THREE" all "$HIER3" \
        "$DIFFER" "${ALL[@]}" FI_PROVIDER="tcp;ofi_rxm" SHMALLOC_PMIX_OFI_ANY_ADDRESS=1 SHMALLOC_TEST_EXPECT_ADDRESSES=differ
    check_run "2 nodes x 2 PEs, heap growth 1 MiB -> 23 MiB, different heap addresses" "$TWO" grow "$HIER2" "$DIFFER" \
        "${GROW[@]}" FI_PROVIDER="tcp;ofi_rxm" SHMALLOC_PMIX_OFI_ANY_ADDRESS=1
    check_run "3 nodes (2+1+1), heap growth 1 MiB -> 23 MiB, one heap address" "$THREE" grow "$HIER3" "$SAME" \
        "${GROW[@]}" FI_PROVIDER="tcp;ofi_rxm"
    check_run "4 nodes x 4 PEs, all scenarios, one heap address, hierarchical barriers" "$FOUR" all "$HIER4" "$SAME" \
        "${ALL[@]}" SHMALLOC_TEST_EXPECT_ADDRESSES=same
    check_run "4 nodes x 4 PEs, heap growth 1 MiB -> 23 MiB, one heap address" "$FOUR" grow "$HIER4" "$SAME" \
        "${GROW[@]}"
    check_run "2 nodes x 2 PEs, slot reads and messages per call as the model says" "$TWO" counts "$HIER2" "$SAME" \
        SHMALLOC_TEST_EXPECT_NODE_SIZE=2
    check_run "4 nodes x 4 PEs, slot reads and messages per call as the model says" "$FOUR" counts "$HIER4" "$SAME" \
        SHMALLOC_TEST_EXPECT_NODE_SIZE=4
    check_run "2 nodes x 2 PEs, teams: SHMEM_TEAM_SHARED the node, splits across nodes" "$TWO" teams "$HIER2" \
        "$SAME" SHMALLOC_TEST_EXPECT_SHARED=2
    check_run "2 nodes x 2 PEs, spaces of teams across nodes: puts and gets by their keys" "$TWO" spaces "$HIER2" \
        "$SAME"
    check_run "4 nodes x 4 PEs, teams: SHMEM_TEAM_SHARED the node, splits across nodes" "$FOUR" teams "$HIER4" \
        "$SAME" SHMALLOC_TEST_EXPECT_SHARED=4
    check_run "4 nodes x 4 PEs, spaces of 8 PEs on 4 nodes each, at once" "$FOUR" spaces "$HIER4" "$SAME"
    check_death "2 nodes x 2 PEs, PE 1 SIGKILLed in a barrier: the job ends" "$TWO" kill
    check_death "3 nodes (2+1+1), PE 1 SIGKILLed inside shmem_malloc: the job ends" "$THREE" kill_in_malloc
    check_death "4 nodes x 4 PEs, PE 1 SIGKILLed inside shmem_malloc: the job ends" "$FOUR" kill_in_malloc
}

# One slurmd per node, each with the node's own host name and a private
# directory mounted at the same path (spool, pid, log, and the temporary
# directories of Slurm's PMIx plugin, which would clash between nodes of one
# file system); slurmctld beside the bridge with host name "ctl".  No
# munge: auth/none and cred/none.
slurm_start() {
    local i
    slurm=$(mktemp -d /tmp/shmalloc-slurm-cluster.XXXXXX)
    export SLURM_CONF=$slurm/slurm.conf
    { slurm_common_conf; cat <<CONF
ClusterName=shmalloc-cluster
SlurmctldHost=ctl(10.77.0.254)
SlurmctldPort=16917
SlurmdPort=16918
StateSaveLocation=$slurm/state
SlurmctldPidFile=$slurm/ctld.pid
SlurmctldLogFile=$slurm/ctld.log
SlurmdSpoolDir=$slurm/node/spool
SlurmdPidFile=$slurm/node/d.pid
SlurmdLogFile=$slurm/node/d.log
TmpFS=$slurm/node/tmp
NodeName=node[1-4] NodeAddr=10.77.0.[1-4] CPUs=2 State=UNKNOWN
PartitionName=test Nodes=node[1-4] Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
CONF
    } >"$SLURM_CONF"
    echo "PMIxCliTmpDirBase=$slurm/node/tmp" >"$slurm/mpi.conf"
    mkdir -p "$slurm/state" "$slurm/node"
    unshare --uts sh -c 'hostname ctl && exec slurmctld' || return 1
    for i in 1 2 3 4; do
        mkdir -p "$slurm/n$i/spool" "$slurm/n$i/tmp"
        "$here/cluster.sh" on $i unshare --mount sh -c "mount --bind $slurm/n$i $slurm/node && exec slurmd -N node$i" ||
            return 1
    done
    for _ in $(seq 60); do
        [ "$(sinfo -h -N -o %t 2>/dev/null | grep -c idle)" = 4 ] && return 0
        sleep 0.5
    done
    return 1
}

slurm_stop() {
    local f
    [ -n "$slurm" ] || return 0
    for f in "$slurm"/ctld.pid "$slurm"/n*/d.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
    sleep 1
    rm -rf "$slurm"
    slurm=
}
slurm=
trap slurm_stop EXIT # the daemons outlive their namespaces otherwise

if [[ " $launchers " = *" mpirun "* ]]; then
    via=mpirun cases
fi
if [[ " $launchers " = *" srun "* ]]; then
    via=srun
    if slurm_start; then
        cases
    else
        rc=1 out="$(tail -n 20 "$slurm"/*.log "$slurm"/n*/*.log 2>&1)"
        result 0 "the Slurm daemons did not start"
    fi
    slurm_stop
fi
echo "cluster-check: $passed passed, $failed failed"
[ $failed -eq 0 ]
