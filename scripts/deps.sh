#!/bin/sh
# scripts/deps.sh GROUP... - installs, with apt-get as root, the Debian
# packages a group of targets needs and this machine lacks.  The only place
# the project installs anything; make calls it, CI through make.
#   test   make test and the sanitizer, Valgrind and fuzz builds
#   bench  make bench's system allocators and plots
#   openmpi  make test-openmpi: Open MPI's oshmem, its headers, oshrun
#   deb    make test-deb: dpkg-buildpackage, debhelper, lintian and the
#          packages' build dependencies
# Not root and something missing: says what to install, exits 1.
set -u
pkgs_test="libcriterion-dev pkgconf libpmix-dev libfabric-dev openmpi-bin slurm-wlm iproute2 valgrind clang
  mandoc groff-base man-db bsdextrautils cmake binutils"
pkgs_bench="libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev gnuplot-nox valgrind libopenmpi-dev"
pkgs_openmpi="libopenmpi-dev openmpi-bin"
pkgs_deb="build-essential dpkg-dev debhelper lintian fakeroot libpmix-dev libfabric-dev pkgconf"

want=
for group in "$@"; do
    case $group in
    test) want="$want $pkgs_test" ;;
    bench) want="$want $pkgs_bench" ;;
    openmpi) want="$want $pkgs_openmpi" ;;
    deb) want="$want $pkgs_deb" ;;
    *) echo "deps.sh: unknown group '$group' (test, bench, openmpi, deb)" >&2; exit 2 ;;
    esac
done

missing=
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "deps.sh: missing:$missing (apt-get install them as root)" >&2
    exit 1
fi
echo "deps.sh: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2086
apt-get install -y -qq $missing >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null && apt-get install -y -qq $missing >/dev/null; }
