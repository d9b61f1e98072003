#!/usr/bin/env bash
# Builds Sandia OpenSHMEM (SOS) twice from a source tarball, stock (its own
# dlmalloc) and with sos-shmalloc.patch (configure --with-shmalloc), runs
# SOS's `make check` and the heap tests of tests/ and SOS's examples on
# both, and prints the results side by side.  Fails when a test that
# passes on stock SOS fails with shmalloc.
#
#   integrations/sos/test-sos.sh SOS_TARBALL [WORKDIR]      (make test-sos)
#
# SOS_NP     PEs per run (default 2: this machine has 2 cores, and SOS's
#            hard polling spins, so more PEs than cores only waits)
# SOS_BENCH  1: also run bench_heap.c on both builds (make bench-sos)
#
# One node, loopback only: libfabric's shm provider, Open MPI's mpirun
# (PMIx), every run under timeout.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] && [ -f "$1" ] || { echo "usage: $0 SOS_TARBALL [WORKDIR]" >&2; exit 2; }
tarball=$(realpath "$1")
work=$(mkdir -p "${2:-$repo/build/sos}" && cd "${2:-$repo/build/sos}" && pwd)
np=${SOS_NP:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
       OMPI_MCA_oob_tcp_if_include=lo FI_PROVIDER=shm
mpirun_np="mpirun --oversubscribe -np $np -x FI_PROVIDER"
variants="dlmalloc shmalloc"
mkdir -p "$work/logs" "$work/results"

# Runs "$@" with its output in a log; on failure shows the log's end.
logged() {
    local log=$1; shift
    if ! "$@" >"$log" 2>&1; then
        echo "FAILED: $* (last lines of $log):" >&2
        tail -30 "$log" >&2
        return 1
    fi
}

# SOS's tests live in the tests-sos submodule.  A tree without it (a plain
# snapshot of the repository) cannot run ./autogen.sh, so the modules
# directory is left out of the build; `make check` then has no tests.
has_suite() { [ -f "$1/modules/tests-sos/test/Makefile.am" ]; }

unpack() {
    local dir=$1 top
    rm -rf "$dir" && mkdir -p "$dir"
    tar xzf "$tarball" -C "$dir"
    if [ ! -f "$dir/configure.ac" ]; then  # a release tarball has one top directory
        top=$(find "$dir" -mindepth 2 -maxdepth 2 -name configure.ac -printf '%h\n' | head -1)
        [ -n "$top" ] || { echo "$tarball: no configure.ac inside" >&2; exit 1; }
        mv "$top"/* "$top"/.[!.]* "$dir"/ 2>/dev/null || true
        rmdir "$top" 2>/dev/null || true
    fi
}

drop_missing_suite() {
    sed -i -e 's|^\(  \)modules/tests-sos/test/apps/Makefile\])|\1])|' \
           -e '/^  modules\/tests-sos/d; /^  modules\/Makefile$/d' configure.ac
    sed -i 's/^\(SUBDIRS = .*\) modules$/\1/' Makefile.am
    [ -f man/Makefile.am ] || : >man/Makefile.am  # autogen.sh writes it
}

build() {
    local v=$1 src=$work/$1-src inst=$work/$1 extra=()
    rm -rf "$inst"
    unpack "$src"
    if [ "$v" = shmalloc ]; then
        logged "$work/logs/$v-patch.log" patch -d "$src" -p1 -i "$here/sos-shmalloc.patch"
        extra=(--with-shmalloc="$repo")
    fi
    (
        cd "$src"
        if has_suite .; then logged "$work/logs/$v-autogen.log" ./autogen.sh
        else drop_missing_suite; logged "$work/logs/$v-autogen.log" autoreconf -if; fi
        # shm needs manual progress, polling, and no target counters
        logged "$work/logs/$v-configure.log" ./configure --prefix="$inst" \
            --with-ofi --with-pmix="$(pkg-config --variable=prefix pmix)" \
            --disable-fortran --disable-cxx --enable-ofi-manual-progress \
            --enable-manual-progress --enable-hard-polling "${extra[@]}"
        logged "$work/logs/$v-make.log" make -j2
        logged "$work/logs/$v-install.log" make install
    )
}

# Each result is a line "name PASS|FAIL" in results/VARIANT.
record() { echo "$2 $3" >>"$work/results/$1"; }

# SOS's own suite: automake's harness leaves one .trs file per test.
sos_make_check() {
    local v=$1 src=$work/$1-src trs name res
    (cd "$src" && timeout 3600 make check NPROCS="$np" \
        TEST_RUNNER="timeout 300 $mpirun_np" >"$work/logs/$v-check.log" 2>&1) || true
    if ! has_suite "$src"; then
        echo "  $v: SOS make check ran, but this SOS tree has no tests (modules/tests-sos is empty)"
        return
    fi
    while IFS= read -r trs; do
        name=sos/${trs#"$src/modules/tests-sos/"}
        res=$(sed -n 's/^:test-result: //p' "$trs" | head -1)
        case $res in PASS|XFAIL|SKIP) record "$v" "${name%.trs}" PASS ;; *) record "$v" "${name%.trs}" FAIL ;; esac
    done < <(find "$src/modules/tests-sos" -name '*.trs' | sort)
}

# A run passes when it exits 0, prints what it should, and the heap
# checker found nothing at shmem_finalize.
run_one() {
    local v=$1 name=$2 expect=$3; shift 3
    local out=$work/logs/$v-run-${name//\//-}.log
    if timeout 120 $mpirun_np "$@" >"$out" 2>&1 && grep -q -- "$expect" "$out" &&
       ! grep -q "symmetric heap found inconsistent" "$out"; then
        record "$v" "$name" PASS
    else
        record "$v" "$name" FAIL
    fi
}

heap_tests() {
    local v=$1 inst=$work/$1 bin=$work/$1-bin t name
    mkdir -p "$bin"
    for t in "$here"/tests/heap_*.c; do
        name=$(basename "$t" .c)
        logged "$work/logs/$v-cc-$name.log" "$inst/bin/oshcc" -std=c99 -O2 -Wall -Werror "$t" -o "$bin/$name"
        run_one "$v" "$name" "^$name: " "$bin/$name"
    done
    for t in hello pi pi_reduce; do
        logged "$work/logs/$v-cc-$t.log" "$inst/bin/oshcc" -O2 "$work/$v-src/examples/$t.c" -o "$bin/$t" -lm
    done
    run_one "$v" example/hello "Hello World from" "$bin/hello"
    run_one "$v" example/pi "^Pi from .* PEs: 3\.1" "$bin/pi"
    run_one "$v" example/pi_reduce "^Pi from .* PEs: 3\.1" "$bin/pi_reduce"
}

bench() {
    local v=$1 inst=$work/$1 bin=$work/$1-bin n
    "$inst/bin/oshcc" -std=c99 -O2 "$here/bench_heap.c" -o "$bin/bench_heap"
    for n in 1 "$np"; do
        echo "  -- $v, $n PE(s)"
        timeout 300 mpirun --oversubscribe -np "$n" -x FI_PROVIDER "$bin/bench_heap"
    done
}

seconds() { echo $(( $(date +%s) - $1 )); }

t0=$(date +%s)
for v in $variants; do
    t=$(date +%s)
    build "$v"
    echo "built SOS ($v) in $(seconds "$t") s"
done
rm -f "$work"/results/*

t=$(date +%s)
for v in $variants; do
    sos_make_check "$v"
    heap_tests "$v"
done
echo "ran the tests in $(seconds "$t") s"
if [ "${SOS_BENCH:-0}" = 1 ]; then
    for v in $variants; do bench "$v"; done
fi

# Side by side; a test that passes with dlmalloc must pass with shmalloc.
regressions=0
printf '\n%-32s %-9s %-9s\n' test dlmalloc shmalloc
while read -r name; do
    a=$(awk -v n="$name" '$1 == n { print $2 }' "$work/results/dlmalloc")
    b=$(awk -v n="$name" '$1 == n { print $2 }' "$work/results/shmalloc")
    printf '%-32s %-9s %-9s\n' "$name" "${a:-absent}" "${b:-absent}"
    if [ "${a:-}" = PASS ] && [ "${b:-}" != PASS ]; then regressions=$((regressions + 1)); fi
done < <(cut -d' ' -f1 "$work"/results/* | sort -u)
echo "test-sos: $(seconds "$t0") s in all; logs in $work/logs"
for v in $variants; do
    echo "$v: $(grep -c ' PASS$' "$work/results/$v" || true) passed, $(grep -c ' FAIL$' "$work/results/$v" || true) failed"
done
if [ "$regressions" -ne 0 ]; then
    echo "test-sos: $regressions test(s) pass with dlmalloc and fail with shmalloc" >&2
    exit 1
fi
