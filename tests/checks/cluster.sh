#!/usr/bin/env bash
# tests/checks/cluster.sh - a cluster of "nodes" on one machine, for the tests and
# benchmarks that need PEs on several nodes.
#
#   tests/checks/cluster.sh run NODES COMMAND...   (as root)
#
# runs COMMAND in a fresh network namespace (unshare -n: no route out of
# the machine) holding a private bridge 10.77.0.254/24 and NODES network
# namespaces, node i with interface fab0 at 10.77.0.i.  COMMAND sees:
#   OMPI_MCA_plm_rsh_agent      this script in its "rsh" role, so
#                               mpirun --host 10.77.0.1:2,10.77.0.2:2 starts
#                               one orted inside each node
#   OMPI_MCA_oob_tcp_if_include 10.77.0.0/24
#   SHMALLOC_TEST_CLUSTER_NS         the prefix of the nodes' namespace names
#   SHMALLOC_TEST_CLUSTER_NODES      NODES
# and "tests/checks/cluster.sh on I COMMAND..." runs a command inside node I.
# The namespaces are removed when COMMAND ends, however it ends.
#
#   tests/checks/cluster.sh rsh HOST COMMAND...
#
# is the rsh agent: HOST is 10.77.0.I or nodeI; COMMAND is one shell line,
# as ssh takes it, run inside node I with its own host name nodeI (a UTS
# namespace), so Open MPI and Slurm see separate machines.
set -u
self=$(readlink -f "$0")
role=${1:-}
shift || true

node_of() { # HOST -> I
    case $1 in
    10.77.0.*) echo "${1##*.}" ;;
    node*) echo "${1#node}" ;;
    *) return 1 ;;
    esac
}

case $role in
rsh)
    host=$1; shift
    i=$(node_of "$host") || { echo "cluster.sh rsh: unknown host $host" >&2; exit 1; }
    exec ip netns exec "${SHMALLOC_TEST_CLUSTER_NS:?}$i" unshare --uts sh -c "hostname node$i; $*"
    ;;
on)
    i=$1; shift
    # nsenter, not ip netns exec: the node keeps the machine's /sys (its
    # cgroups, which slurmd needs).
    exec nsenter --net="/run/netns/${SHMALLOC_TEST_CLUSTER_NS:?}$i" unshare --uts sh -c 'hostname "$0"; exec "$@"' "node$i" "$@"
    ;;
run) ;;
*)
    echo "usage: $0 run NODES COMMAND... | rsh HOST COMMAND... | on I COMMAND..." >&2
    exit 2
    ;;
esac

nodes=$1; shift
if [ "${SHMALLOC_TEST_CLUSTER_INSIDE:-0}" != 1 ]; then
    [ "$(id -u)" = 0 ] || { echo "cluster.sh: network namespaces need root" >&2; exit 77; }
    exec unshare -n env SHMALLOC_TEST_CLUSTER_INSIDE=1 bash "$self" run "$nodes" "$@"
fi

# Namespace names are global to the machine: this run's own prefix.
ns=shmc$$n
cleanup() {
    local i
    for i in $(seq 1 "$nodes"); do ip netns del "$ns$i" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 143' TERM INT

ip link set lo up
ip link add br0 type bridge && ip addr add 10.77.0.254/24 dev br0 && ip link set br0 up || exit 1
for i in $(seq 1 "$nodes"); do
    ip netns add "$ns$i" &&
        ip link add "vh$i" type veth peer name "ve$i" &&
        ip link set "ve$i" netns "$ns$i" &&
        ip netns exec "$ns$i" ip link set "ve$i" name fab0 &&
        ip netns exec "$ns$i" ip addr add "10.77.0.$i/24" dev fab0 &&
        ip netns exec "$ns$i" ip link set fab0 up &&
        ip netns exec "$ns$i" ip link set lo up &&
        ip link set "vh$i" master br0 && ip link set "vh$i" up || { echo "cluster.sh: node $i not built" >&2; exit 1; }
done
export SHMALLOC_TEST_CLUSTER_NS=$ns SHMALLOC_TEST_CLUSTER_NODES=$nodes
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_plm_rsh_agent="$self rsh" OMPI_MCA_oob_tcp_if_include=10.77.0.0/24
"$@"
