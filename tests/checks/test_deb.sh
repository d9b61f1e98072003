#!/bin/sh
# test_deb.sh - builds shmalloc's Debian packages and uses them as a program
# outside this repository would; run by `make test-deb`.
#
# dpkg-buildpackage writes its packages beside the tree it builds, so the
# tree is copied to $B/deb/shmalloc first (the files git knows, or all but
# build/ outside a git checkout) and everything stays under $B/deb.  Then:
# the build dependencies (the README's `apt-get build-dep ./`, then
# dpkg-checkbuilddeps), `dpkg-buildpackage -us -uc -b`, every package of
# debian/control built, lintian with no error and no warning, the packages
# extracted with dpkg -x (nothing is installed on the machine), programs
# built against the extracted tree with pkg-config (shared and static),
# CMake, the packaged shmalloc-cc and, for a transport, the headers and
# libshmalloc alone, and run (the PMIx one on 2 PEs under
# mpirun: run test-deb under the mpirun lock, as CI runs it alone).
#
# Each step prints PASS or FAIL; the last line counts them.  The exit status
# is nonzero when a step failed.  Environment: B, CC as make passes them.

# pkg-config's output is split into words on purpose, as in a makefile.
# shellcheck disable=SC2046

cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
CC=${CC:-cc}
SRC=$(pwd)
mkdir -p "$B" && work=$(cd "$B" && pwd)/deb
tree=$work/shmalloc
root=$work/root
log=$work/step.log
. tests/checks/steps.sh
finish() {
    steps_total test-deb
    exit
}

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# The ring example prints "PE i of N received j from PE j" for every i.
run_ring() {
    npes=$1; shift
    out=$("$@") || { echo "$out"; echo "exit status $?"; return 1; }
    echo "$out"
    i=0
    while [ $i -lt "$npes" ]; do
        left=$(((i + npes - 1) % npes))
        echo "$out" | grep -qx "PE $i of $npes received $left from PE $left" || return 1
        i=$((i + 1))
    done
}

rm -rf "$work"
mkdir -p "$tree"
copy_tree() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # Tracked and new files, as they are now; none that git ignores.
        git ls-files -z -c -o --exclude-standard | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\n" "$f"; done' sh |
            tar -cf - -T - | tar -xf - -C "$tree"
    else
        tar --exclude="./$B" --exclude=./build -cf - . | tar -xf - -C "$tree"
    fi
    [ -f "$tree/debian/control" ]
}
step "copy of the tree in $B/deb/shmalloc" copy_tree

check_version() {
    # A new version needs a debian/changelog entry, and a new soname new
    # library package names in debian/control (lintian checks those).
    header=$(sed -n 's/^#define SHMALLOC_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' shmalloc.h | paste -sd.)
    deb=$(cd "$tree" && dpkg-parsechangelog -S Version)
    echo "shmalloc.h: $header; debian/changelog: $deb"
    [ "$header" = "$deb" ]
}
step "debian/changelog's version is the header's" check_version
# The README's command for them, simulated (apt-get -s): apt resolves
# debian/control's list; only scripts/deps.sh installs anything.
build_dep() {
    cmd=$(sed -n 's/^    \(apt-get build-dep [^#]*\).*/\1/p' README.md)
    [ -n "$cmd" ] || { echo "README.md shows no apt-get build-dep command"; return 1; }
    cmd=$(echo "$cmd" | sed 's/apt-get /apt-get -s /')
    echo "$cmd"
    (cd "$tree" && eval "$cmd" </dev/null)
}
step "the build dependencies: the README's apt-get build-dep, simulated" build_dep
step "build dependencies (dpkg-checkbuilddeps)" sh -c "cd '$tree' && dpkg-checkbuilddeps"
step "dpkg-buildpackage -us -uc -b" sh -c "cd '$tree' && dpkg-buildpackage -us -uc -b"
changes=$(ls "$work"/*.changes 2>/dev/null)
[ -n "$changes" ] || finish

check_packages() {
    for p in $(sed -n 's/^Package: *//p' "$tree/debian/control"); do
        deb=$(ls "$work/${p}_"*.deb 2>/dev/null) || { echo "no package $p"; return 1; }
        echo "$deb:"; dpkg-deb -c "$deb" | awk '{ print "    " $6 $7 $8 }'
    done
}
step "every package of debian/control was built" check_packages

check_lintian() {
    lintian --fail-on error,warning --info "$changes"
}
step "lintian: no error, no warning" check_lintian

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=$root/usr/lib/$multiarch
extract() {
    for deb in "$work"/*.deb; do
        case $deb in *-dbgsym_*) continue ;; esac
        dpkg -x "$deb" "$root" || return 1
    done
    ls -l "$libdir"
}
step "dpkg -x each package into $B/deb/root" extract

check_pc_shared() (
    export PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_LIBDIR="$libdir/pkgconfig"
    pkg-config --modversion shmalloc-pthreads &&
    $CC -std=c99 -Wall -Werror $(pkg-config --cflags shmalloc-pthreads) examples/hello_pthreads.c \
        $(pkg-config --libs shmalloc-pthreads) -o "$work/hello_pc" &&
    needed "$work/hello_pc" | grep -qx 'libshmalloc_pthreads\.so\.[0-9.]*' &&
    LD_LIBRARY_PATH="$libdir" run_ring 4 "$work/hello_pc" 4
)
step "pkg-config shmalloc-pthreads of the packages, shared: build and run" check_pc_shared

check_pc_static() (
    export PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_LIBDIR="$libdir/pkgconfig"
    $CC -std=c99 -Wall -Werror -static $(pkg-config --static --cflags shmalloc-pthreads) examples/hello_pthreads.c \
        $(pkg-config --static --libs shmalloc-pthreads) -o "$work/hello_pc_static" &&
    ! needed "$work/hello_pc_static" | grep -q libshmalloc &&
    run_ring 3 "$work/hello_pc_static" 3
)
step "pkg-config --static shmalloc-pthreads of the packages: build and run" check_pc_static

check_cmake() {
    mkdir -p "$work/cmake" &&
    printf '%s\n' 'cmake_minimum_required(VERSION 3.13)' 'project(deb_check C)' \
        'find_package(shmalloc REQUIRED COMPONENTS pthreads)' 'message(STATUS "shmalloc_DIR: ${shmalloc_DIR}")' \
        "add_executable(hello \"$SRC/examples/hello_pthreads.c\")" \
        'target_link_libraries(hello PRIVATE shmalloc::pthreads)' >"$work/cmake/CMakeLists.txt" &&
    cmake -S "$work/cmake" -B "$work/cmake/b" -DCMAKE_PREFIX_PATH="$root/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
        -DCMAKE_C_COMPILER="$(command -v "$CC")" >"$work/cmake/configure.log" 2>&1 ||
        { cat "$work/cmake/configure.log"; return 1; }
    grep "shmalloc_DIR:" "$work/cmake/configure.log" | grep -qF "$libdir/cmake/shmalloc" &&
    cmake --build "$work/cmake/b" &&
    LD_LIBRARY_PATH="$libdir" run_ring 4 "$work/cmake/b/hello" 4
}
step "CMake find_package(shmalloc) of the packages: build and run" check_cmake

check_transport_outside() {
    # The fork transport, built with the -dev package's headers alone and
    # linked with the packaged libshmalloc, which holds the start-up.
    mkdir -p "$work/fork" && cp tests/fork/transport_fork/*.[ch] tests/fork/fork_ring.c "$work/fork"/ &&
    $CC -std=c99 -Wall -Wextra -Werror -I"$root/usr/include/shmalloc" "$work"/fork/*.c -L"$libdir" -lshmalloc \
        -pthread -o "$work/fork_ring" &&
    LD_LIBRARY_PATH="$libdir" run_ring 4 "$work/fork_ring" 4
}
step "the packages' headers and libshmalloc build a transport (the fork one): build and run" check_transport_outside

wrapper=$root/usr/bin/shmalloc-cc
check_wrapper() {
    "$wrapper" --showme prog.c &&
    "$wrapper" -std=c99 -Wall -Werror examples/hello_pthreads.c -o "$work/hello_cc" &&
    run_ring 4 "$work/hello_cc" 4 &&
    (cd / && MANWIDTH=80 man -l "$root/usr/share/man/man1/shmalloc-cc.1.gz" 2>&1) | col -b | grep -q 'transport=pmix_ofi'
}
step "the packaged shmalloc-cc: build and run a pthreads program; its man page" check_wrapper

check_wrapper_pmix() {
    "$wrapper" --transport=pmix_ofi -std=c99 -Wall -Werror examples/hello_pmix_ofi.c -o "$work/hello_pmix_cc" &&
    needed "$work/hello_pmix_cc" | grep -q libshmalloc_pmix_ofi &&
    run_ring 2 env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=lo \
        FI_PROVIDER=shm timeout 120 mpirun --oversubscribe -np 2 -x FI_PROVIDER "$work/hello_pmix_cc"
}
step "the packaged shmalloc-cc --transport=pmix_ofi: build, run on 2 PEs under mpirun" check_wrapper_pmix

finish
