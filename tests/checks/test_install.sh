#!/bin/sh
# test_install.sh - installs shmalloc into a temporary tree and uses it the
# way a program outside this repository would; run by `make install-check`.
#
# Part A installs with DESTDIR (PREFIX /usr/local inside it) and builds
# examples/hello_pthreads.c against that tree with pkg-config (shared and
# static) and with CMake (shared and static), checks the header layout, the
# header-only package, the sonames and the man pages, then uninstalls and
# requires that nothing is left, directories included.  Part B installs to
# a plain PREFIX (no DESTDIR), where pkg-config needs no sysroot, builds a
# PMIx + libfabric program when that transport is built, runs it as a
# single PE, and uninstalls again.  Part C installs to a PREFIX, moves the
# tree, and builds and runs programs with the moved tree's shmalloc-cc
# (the PMIx one on 2 PEs under mpirun: run install-check under the mpirun
# lock, as make test).  Part D builds a hello world that allocates nothing
# (so a program linked --as-needed does not name libshmalloc) with
# shmalloc-cc, the README's pkg-config line and CMake, for each transport,
# from an installed tree and again after moving it, and runs it.  Part A
# also builds a transport from the installed headers alone (the fork
# transport and README.md's my_transport.c) and runs the fork one.
#
# Each step prints PASS or FAIL; the last line counts them.  The exit status
# is nonzero when a step failed.  The temporary tree is kept on failure.
#
# Environment: MAKE, MAKEFILE (the top-level Makefile), B, CC, HAVE_PMIX_OFI
# as make passes them; run by hand from anywhere with the defaults.

# pkg-config's output is split into words on purpose, as in a makefile.
# shellcheck disable=SC2046,SC2086

cd "$(dirname "$0")/../.." || exit 1
MAKE=${MAKE:-make}
MAKEFILE=${MAKEFILE:-Makefile}
B=${B:-build}
CC=${CC:-cc}
PKG_CONFIG=${PKG_CONFIG:-pkg-config}
SRC=$(pwd)
version_part() { sed -n "s/^#define SHMALLOC_VERSION_$1 \\([0-9][0-9]*\\)\$/\\1/p" shmalloc.h; }
version=$(version_part MAJOR).$(version_part MINOR).$(version_part PATCH)

work=$(mktemp -d "${TMPDIR:-/tmp}/shmalloc-install-check.XXXXXX") || exit 1
log=$work/log
dest=$work/dest
prefix=/usr/local
root=$dest$prefix

. tests/checks/steps.sh
mk() { "$MAKE" --no-print-directory -f "$MAKEFILE" B="$B" "$@"; }

# Files (and symbolic links) left under a directory, one per line.
files_under() { find "$1" ! -type d | sort; }

# NEEDED entries of an ELF file.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# The ring example prints "PE i of 4 received j from PE j" for every i.
run_ring() {
    out=$("$@" 4) || { echo "exit status $?"; return 1; }
    echo "$out"
    for i in 0 1 2 3; do
        echo "$out" | grep -qx "PE $i of 4 received $(((i + 3) % 4)) from PE $(((i + 3) % 4))" || return 1
    done
}

shared_linked() { needed "$1" | grep -qx 'libshmalloc_pthreads\.so\.[0-9.]*'; }
static_linked() { [ -f "$1" ] && ! needed "$1" | grep -q libshmalloc; }

for tool in "$CC" $PKG_CONFIG cmake readelf man col; do
    command -v "$tool" >/dev/null 2>&1 || echo "note: $tool not found: the steps that use it fail"
done

# ---- part A: DESTDIR ------------------------------------------------------
step "make install DESTDIR=... (PREFIX=$prefix)" mk install DESTDIR="$dest" PREFIX="$prefix"
if [ ! -f "$root/include/shmalloc.h" ]; then
    steps_total install-check "(nothing to check without an installation; kept $work)"
    exit 1
fi

check_exact_files() {
    mk -s print-install-files DESTDIR="$dest" PREFIX="$prefix" | sort >"$work/expected" || return 1
    files_under "$dest" >"$work/actual"
    diff "$work/expected" "$work/actual"
}
step "installed files are exactly install's list" check_exact_files

check_layout() {
    # The headers' two spellings: -I$includedir/shmalloc as pkg-config and
    # CMake give it, and -I$includedir alone.
    printf '%s\n' '#include "shmalloc.h"' '#include "transports/shmalloc_pthreads.h"' \
        'int main(void) { return SHMALLOC_PTHREADS_MAX_PES > 0 ? 0 : 1; }' >"$work/layout1.c"
    printf '%s\n' '#include <shmalloc.h>' '#include <shmalloc/transports/shmalloc_pthreads.h>' \
        'int main(void) { return SHMALLOC_PTHREADS_MAX_PES > 0 ? 0 : 1; }' >"$work/layout2.c"
    $CC -std=c99 -Wall -Werror -I"$root/include/shmalloc" -c "$work/layout1.c" -o /dev/null &&
    $CC -std=c99 -Wall -Werror -I"$root/include" -c "$work/layout2.c" -o /dev/null &&
    cmp shmalloc.h "$root/include/shmalloc.h" &&
    cmp transports/shmalloc_pthreads.h "$root/include/shmalloc/transports/shmalloc_pthreads.h"
}
step "header layout: \"shmalloc.h\", \"transports/...\" and <shmalloc/transports/...> resolve" check_layout

export PKG_CONFIG_PATH="$root/lib/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$dest"

check_header_only() {
    # shmalloc.pc alone: the header with its implementation and the
    # one-PE transport, no library.
    cat >"$work/header_only.c" <<'EOF'
#define SHMALLOC_IMPLEMENTATION
#include "shmalloc.h"

#include <stdio.h>

#define ARENA_BYTES ((size_t)1 << 20)
static uint64_t arena[ARENA_BYTES / 8 + 2];

int main(void)
{
    long err;
    long *x;
    void *mem = (void *)(((uintptr_t)arena + 15) & ~(uintptr_t)15); /* the heap wants 16-byte alignment */
    shmalloc_heap *h = shmalloc_heap_create(mem, ARENA_BYTES, shmalloc_transport_single(), &err);
    if (!h) return 1;
    shmalloc_set_process_heap(h);
    x = (long *)shmem_malloc(sizeof *x);
    if (!x || malloc_error != SHMEM_MALLOC_OK) return 2;
    *x = 42;
    printf("header-only: %ld\n", *x);
    shmem_free(x);
    return shmalloc_check(0) == 0 ? 0 : 3;
}
EOF
    $PKG_CONFIG --modversion shmalloc &&
    $CC -std=c99 -Wall -Werror $($PKG_CONFIG --cflags shmalloc) "$work/header_only.c" \
        $($PKG_CONFIG --libs shmalloc) -o "$work/header_only" &&
    "$work/header_only"
}
step "pkg-config shmalloc (header only): build and run" check_header_only

check_versions_agree() {
    # The header's macros, the library's shmalloc_version() and pkg-config.
    printf '%s\n' '#include "shmalloc.h"' '#include <stdio.h>' 'int main(void) {' \
        '    printf("%d.%d.%d %s\n", SHMALLOC_VERSION_MAJOR, SHMALLOC_VERSION_MINOR, SHMALLOC_VERSION_PATCH,' \
        '           shmalloc_version());' '    return 0; }' >"$work/version.c"
    $CC -std=c99 -Wall -Werror $($PKG_CONFIG --cflags shmalloc) "$work/version.c" "$root/lib/libshmalloc.a" \
        -o "$work/version" &&
    got=$("$work/version") && pc=$($PKG_CONFIG --modversion shmalloc) &&
    echo "macros, shmalloc_version(): $got; pkg-config: $pc; header: $version" &&
    [ "$got" = "$version $version" ] && [ "$pc" = "$version" ]
}
step "the header's version macros, shmalloc_version() and pkg-config agree" check_versions_agree

check_pc_shared() {
    $CC -std=c99 -Wall -Werror $($PKG_CONFIG --cflags shmalloc-pthreads) examples/hello_pthreads.c \
        $($PKG_CONFIG --libs shmalloc-pthreads) -o "$work/hello_pc_shared" &&
    shared_linked "$work/hello_pc_shared" &&
    LD_LIBRARY_PATH="$root/lib" run_ring "$work/hello_pc_shared"
}
step "pkg-config shmalloc-pthreads, shared: build and run (LD_LIBRARY_PATH)" check_pc_shared

check_pc_static() {
    $CC -std=c99 -Wall -Werror -static $($PKG_CONFIG --static --cflags shmalloc-pthreads) \
        examples/hello_pthreads.c $($PKG_CONFIG --static --libs shmalloc-pthreads) -o "$work/hello_pc_static" &&
    static_linked "$work/hello_pc_static" &&
    run_ring "$work/hello_pc_static"
}
step "pkg-config --static shmalloc-pthreads: build and run" check_pc_static

unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

# A CMake project using the installed package, configured in its own
# directory.  $1: build directory, $2...: extra cmake arguments.
cmake_project() {
    proj=$work/cmake
    mkdir -p "$proj"
    cat >"$proj/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.13)
project(shmalloc_install_check C)
find_package(shmalloc $version REQUIRED COMPONENTS pthreads)
message(STATUS "shmalloc_DIR: \${shmalloc_DIR}")
message(STATUS "shmalloc_VERSION: \${shmalloc_VERSION}")
add_executable(hello_pthreads "$SRC/examples/hello_pthreads.c")
target_link_libraries(hello_pthreads PRIVATE shmalloc::pthreads)
add_executable(header_only "$work/header_only.c")
target_link_libraries(header_only PRIVATE shmalloc::shmalloc)
if(TARGET shmalloc::pmix_ofi)
  add_executable(hello_pmix_ofi "$work/pmix_ofi.c")
  target_link_libraries(hello_pmix_ofi PRIVATE shmalloc::pmix_ofi)
endif()
EOF
    bdir=$1; shift
    cmake -S "$proj" -B "$bdir" -DCMAKE_PREFIX_PATH="$root" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
        -DCMAKE_C_COMPILER="$(command -v "$CC")" "$@" >"$bdir.configure.log" 2>&1 ||
        { cat "$bdir.configure.log"; return 1; }
    grep -q "shmalloc_DIR: $root/lib/cmake/shmalloc" "$bdir.configure.log" ||
        { echo "find_package did not find the DESTDIR tree:"; grep shmalloc_DIR "$bdir.configure.log"; return 1; }
    grep -q "shmalloc_VERSION: $version\$" "$bdir.configure.log" ||
        { echo "CMake's version is not the header's $version:"; grep shmalloc_VERSION "$bdir.configure.log"; return 1; }
    cmake --build "$bdir"
}

cat >"$work/pmix_ofi.c" <<'EOF'
#include "transports/shmalloc_pmix_ofi.h"

#include <stdio.h>

int main(void)
{
    long *x;
    int ok;
    shmem_init();
    x = (long *)shmem_malloc(sizeof *x);
    if (!x) return 1;
    *x = 1000 + shmem_my_pe();
    shmem_barrier_all();
    ok = *x == 1000 + shmem_my_pe() && shmalloc_check(0) == 0;
    printf("pmix_ofi: PE %d of %d %s\n", shmem_my_pe(), shmem_n_pes(), ok ? "ok" : "WRONG");
    shmem_free(x);
    shmem_finalize();
    return ok ? 0 : 1;
}
EOF

transports="shmalloc_pthreads$([ "$HAVE_PMIX_OFI" = 1 ] && echo " shmalloc_pmix_ofi")"
check_transports_hold_no_allocator() {
    # A transport library is a binding: the allocator's symbols are only
    # ever undefined in it, and defined in libshmalloc.
    for t in $transports; do
        defined=$(nm -g --defined-only "$root/lib/lib$t.a" | grep -E ' (shmalloc_(tlsf|heap)_|shmem_(malloc|free|realloc|align|calloc)|malloc_error)' || true)
        [ -z "$defined" ] || { echo "lib$t.a defines allocator symbols:"; echo "$defined"; return 1; }
    done
    nm -g --defined-only "$root/lib/libshmalloc.a" | grep -q ' T shmalloc_heap_malloc$'
}
step "transport libraries hold no allocator symbol; libshmalloc does" check_transports_hold_no_allocator

check_own_implementation() {
    # The header's usage block: SHMALLOC_IMPLEMENTATION in one of the
    # program's files, then a transport library without libshmalloc.
    { printf '#define SHMALLOC_IMPLEMENTATION\n#include "shmalloc.h"\n'; } >"$work/impl.c"
    $CC -std=c99 -Wall -Werror -I"$root/include/shmalloc" examples/hello_pthreads.c "$work/impl.c" \
        "$root/lib/libshmalloc_pthreads.a" -pthread -o "$work/hello_own_impl" &&
    run_ring "$work/hello_own_impl" &&
    if [ "$HAVE_PMIX_OFI" = 1 ]; then
        $CC -std=c99 -Wall -Werror -I"$root/include/shmalloc" "$work/pmix_ofi.c" "$work/impl.c" \
            "$root/lib/libshmalloc_pmix_ofi.a" $($PKG_CONFIG --libs pmix libfabric) -o "$work/pmix_own_impl"
    fi
}
step "a program that expands the header itself links each transport library" check_own_implementation

check_both_transports() {
    # Both transport libraries and libshmalloc in one program, shared and static.
    [ "$HAVE_PMIX_OFI" = 1 ] || { echo "no PMIx transport built: nothing to check"; return 0; }
    $CC -std=c99 -Wall -Werror -I"$root/include/shmalloc" examples/hello_pthreads.c -L"$root/lib" \
        -Wl,--no-as-needed -lshmalloc_pthreads -lshmalloc_pmix_ofi -lshmalloc -pthread -o "$work/hello_both" &&
    needed "$work/hello_both" | grep -qx 'libshmalloc_pmix_ofi\.so\.[0-9.]*' &&
    LD_LIBRARY_PATH="$root/lib" run_ring "$work/hello_both" &&
    # Static: the archives share the helper units; each comes in once.
    $CC -std=c99 -Wall -Werror -I"$root/include/shmalloc" examples/hello_pthreads.c "$root/lib/libshmalloc_pthreads.a" \
        "$root/lib/libshmalloc_pmix_ofi.a" "$root/lib/libshmalloc.a" $($PKG_CONFIG --libs pmix libfabric) -pthread \
        -o "$work/hello_both_static" &&
    run_ring "$work/hello_both_static"
}
step "both transport libraries link into one program with libshmalloc" check_both_transports


check_transport_outside() {
    # The fork transport and README.md's my_transport.c, copied out of the
    # tree and built with the installed headers alone, the start-up from
    # libshmalloc (static, then shared); the fork transport runs a ring.
    dir=$work/transport-outside
    mkdir -p "$dir" && cp tests/fork/transport_fork/*.[ch] tests/fork/fork_ring.c "$dir"/ || return 1
    awk '/^\/\* my_transport\.c/ { c = 1 } c && /^```/ { exit } c' README.md >"$dir/my_transport.c"
    inc=-I$root/include/shmalloc
    [ -s "$dir/my_transport.c" ] && $CC -std=c99 -Wall -Wextra -Werror "$inc" -c "$dir/my_transport.c" -o "$dir/my_transport.o" &&
    $CC -std=c99 -Wall -Wextra -Werror "$inc" "$dir"/fork.c "$dir"/teams.c "$dir"/spaces.c "$dir"/fork_ring.c \
        "$root/lib/libshmalloc.a" -pthread -o "$dir/ring_static" &&
    static_linked "$dir/ring_static" && run_ring "$dir/ring_static" &&
    $CC -std=c99 -Wall -Wextra -Werror "$inc" "$dir"/fork.c "$dir"/teams.c "$dir"/spaces.c "$dir"/fork_ring.c \
        -L"$root/lib" -lshmalloc -pthread -o "$dir/ring_shared" &&
    needed "$dir/ring_shared" | grep -qx 'libshmalloc\.so\.[0-9.]*' &&
    LD_LIBRARY_PATH="$root/lib" run_ring "$dir/ring_shared"
}
step "a transport outside the tree (the fork transport, README's my_transport.c): installed headers alone" \
    check_transport_outside

check_cmake_shared() {
    cmake_project "$work/build-shared" &&
    shared_linked "$work/build-shared/hello_pthreads" &&
    LD_LIBRARY_PATH="$root/lib" run_ring "$work/build-shared/hello_pthreads" &&
    "$work/build-shared/header_only" &&
    if [ "$HAVE_PMIX_OFI" = 1 ]; then
        needed "$work/build-shared/hello_pmix_ofi" | grep -q libshmalloc_pmix_ofi &&
        LD_LIBRARY_PATH="$root/lib" timeout 60 "$work/build-shared/hello_pmix_ofi"
    fi
}
step "CMake find_package(shmalloc), shared: build and run$([ "$HAVE_PMIX_OFI" = 1 ] && echo ' (with shmalloc::pmix_ofi)')" \
    check_cmake_shared

check_cmake_static() {
    cmake_project "$work/build-static" -Dshmalloc_USE_STATIC_LIBS=ON &&
    static_linked "$work/build-static/hello_pthreads" &&
    run_ring "$work/build-static/hello_pthreads" &&
    if [ "$HAVE_PMIX_OFI" = 1 ]; then
        static_linked "$work/build-static/hello_pmix_ofi" &&
        timeout 60 "$work/build-static/hello_pmix_ofi"
    fi
}
step "CMake find_package(shmalloc) with shmalloc_USE_STATIC_LIBS: build and run" check_cmake_static

check_cmake_missing_component() {
    # Asking for a component that is not there must fail cleanly.
    mkdir -p "$work/cmake-missing"
    printf '%s\n' 'cmake_minimum_required(VERSION 3.13)' 'project(missing C)' \
        'find_package(shmalloc REQUIRED COMPONENTS no_such_transport)' >"$work/cmake-missing/CMakeLists.txt"
    if cmake -S "$work/cmake-missing" -B "$work/cmake-missing/b" -DCMAKE_PREFIX_PATH="$root" \
        >"$work/cmake-missing/out" 2>&1; then
        echo "configure succeeded"; return 1
    fi
    cat "$work/cmake-missing/out"
    grep -q "there is no component no_such_transport" "$work/cmake-missing/out"
}
step "CMake: a missing component fails find_package" check_cmake_missing_component

check_sonames() {
    # The soname changes whenever the ABI may: with the minor version
    # before 1.0 (CHANGELOG.md), with the major version from 1.0 on.
    major=${version%%.*}
    minor=${version#*.}; minor=${minor%%.*}
    if [ "$major" = 0 ]; then so=0.$minor; else so=$major; fi
    for t in shmalloc $transports; do
        got=$(readelf -d "$root/lib/lib$t.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
        echo "lib$t.so.$version: soname $got"
        [ "$got" = "lib$t.so.$so" ] && [ "$(readlink "$root/lib/lib$t.so.$so")" = "lib$t.so.$version" ] || return 1
    done
}
step "each library's soname carries the version that may change its ABI" check_sonames

check_transport_exports() {
    # A transport library exports the SHMEM entry points (shmemx_ spaces
    # among them), the team handles of shmalloc_teams.h and its own
    # shmalloc_<transport>_* calls; the helpers its files share are hidden.
    for t in $transports; do
        extra=$(nm -D --defined-only "$root/lib/lib$t.so.$version" | awk '{ print $3 }' |
            grep -v -e '^shmemx\{0,1\}_' -e '^shmalloc_team_world$' -e '^shmalloc_team_shared$' -e "^${t}_")
        echo "lib$t.so.$version: $(nm -D --defined-only "$root/lib/lib$t.so.$version" | wc -l) symbols${extra:+, beyond its API: $extra}"
        [ -z "$extra" ] || return 1
    done
}
step "each transport library exports only its API" check_transport_exports

check_man() {
    for page in shmem_malloc shfree shmalloc_stats shmalloc_pthreads; do
        MANWIDTH=80 man -M "$root/share/man" 3 "$page" 2>&1 | col -b >"$work/page.txt"
        if ! grep -q "^NAME" "$work/page.txt" || ! grep -qw "$page" "$work/page.txt"; then
            echo "man 3 $page:"; head -5 "$work/page.txt"; return 1
        fi
    done
    MANWIDTH=80 man -M "$root/share/man" 7 shmalloc 2>&1 | grep -q SHMEM_SYMMETRIC_HEAP_SIZE &&
    # An alias is a link: man -l renders it from any directory.
    [ -L "$root/share/man/man3/shmem_free.3" ] &&
    (cd / && MANWIDTH=80 man -l "$root/share/man/man3/shmem_free.3" 2>&1) | col -b | grep -q "shmem_free"
}
step "man -M <DESTDIR>/share/man finds and renders the pages and aliases" check_man

check_uninstall() {
    mk uninstall DESTDIR="$dest" PREFIX="$prefix" || return 1
    left=$(find "$dest" -mindepth 1)
    [ -z "$left" ] || { echo "left behind:"; echo "$left"; return 1; }
}
step "make uninstall DESTDIR=... leaves nothing, no empty directory either" check_uninstall

# ---- part B: PREFIX only --------------------------------------------------
pre=$work/prefix
check_prefix_install() {
    mk install PREFIX="$pre" &&
    PKG_CONFIG_PATH="$pre/lib/pkgconfig" $PKG_CONFIG --exists --print-errors shmalloc-pthreads &&
    $CC -std=c99 $(PKG_CONFIG_PATH="$pre/lib/pkgconfig" $PKG_CONFIG --cflags shmalloc-pthreads) \
        examples/hello_pthreads.c $(PKG_CONFIG_PATH="$pre/lib/pkgconfig" $PKG_CONFIG --libs shmalloc-pthreads) \
        -Wl,-rpath,"$pre/lib" -o "$work/hello_prefix" &&
    run_ring "$work/hello_prefix"
}
step "make install PREFIX=<tmp> (no DESTDIR): pkg-config build, run with rpath" check_prefix_install

if [ "$HAVE_PMIX_OFI" = 1 ]; then
    check_pc_pmix() {
        export PKG_CONFIG_PATH="$pre/lib/pkgconfig"
        libs=$($PKG_CONFIG --libs shmalloc-pmix-ofi) || return 1
        echo "libs: $libs"
        for l in -lshmalloc_pmix_ofi -lpmix -lfabric; do
            echo " $libs " | grep -q -- " $l " || { echo "missing $l"; return 1; }
        done
        $CC -std=c99 -Wall -Werror $($PKG_CONFIG --cflags shmalloc-pmix-ofi) "$work/pmix_ofi.c" \
            $libs -Wl,-rpath,"$pre/lib" -o "$work/pmix_prefix" &&
        needed "$work/pmix_prefix" | grep -q libshmalloc_pmix_ofi &&
        timeout 60 "$work/pmix_prefix"
    }
    step "pkg-config shmalloc-pmix-ofi: build, run as a single PE" check_pc_pmix
    unset PKG_CONFIG_PATH
fi

check_prefix_uninstall() {
    # A directory that holds something else stays, with that file.
    mkdir -p "$pre/share/doc" && echo mine >"$pre/share/doc/other" &&
    mk uninstall PREFIX="$pre" || return 1
    left=$(find "$pre" -mindepth 1)
    [ "$left" = "$(printf '%s\n' "$pre/share" "$pre/share/doc" "$pre/share/doc/other")" ] ||
        { echo "left behind:"; echo "$left"; return 1; }
    rm -r "$pre/share" && mk install PREFIX="$pre" >/dev/null && mk uninstall PREFIX="$pre" &&
    if [ -e "$pre" ]; then echo "left behind:"; find "$pre"; return 1; fi
}
step "make uninstall PREFIX=<tmp> leaves nothing but another's file" check_prefix_uninstall

# ---- part C: shmalloc-cc from a tree moved after install -------------------
staged=$work/staged
moved=$work/moved
MPIRUN_ENV="OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_oob_tcp_if_include=lo FI_PROVIDER=shm"
check_wrapper_moved() {
    mk install PREFIX="$staged" >/dev/null && mv "$staged" "$moved" || return 1
    cmd=$("$moved/bin/shmalloc-cc" --showme -std=c99 examples/hello_pthreads.c -o "$work/hello cc") || return 1
    echo "--showme: $cmd"
    case $cmd in *"$staged"*) echo "it names the tree's old place"; return 1 ;; esac
    case $cmd in *"-I$moved/include/shmalloc "*"'$work/hello cc' -L$moved/lib -Wl,-rpath,$moved/lib "*) ;;
    *) echo "not the moved tree's flags around the arguments"; return 1 ;; esac
    "$moved/bin/shmalloc-cc" -std=c99 -Wall -Werror examples/hello_pthreads.c -o "$work/hello cc" &&
    shared_linked "$work/hello cc" && (unset LD_LIBRARY_PATH; run_ring "$work/hello cc")
}
step "shmalloc-cc of a tree moved after install: --showme, build, run without LD_LIBRARY_PATH" check_wrapper_moved

check_wrapper_link_and_compile_only() {
    # Through a symbolic link on PATH it still uses its own tree; with -c
    # it compiles only.
    mkdir -p "$work/path" && ln -sf "$moved/bin/shmalloc-cc" "$work/path/shmalloc-cc" &&
    cmd=$(PATH="$work/path:$PATH" shmalloc-cc --showme -c prog.c) &&
    echo "$cmd" && [ "$cmd" = "cc -I$moved/include/shmalloc -pthread -c prog.c" ] &&
    PATH="$work/path:$PATH" shmalloc-cc -c examples/hello_pthreads.c -o "$work/hello_cc.o" &&
    "$moved/bin/shmalloc-cc" "$work/hello_cc.o" -o "$work/hello_cc_linked" && run_ring "$work/hello_cc_linked"
}
step "shmalloc-cc through a link on PATH, and -c then a link step" check_wrapper_link_and_compile_only

check_wrapper_errors() {
    out=$("$moved/bin/shmalloc-cc" --transport=mpi prog.c 2>&1)
    status=$?
    echo "exit status $status: $out"
    [ $status = 2 ] && echo "$out" | grep -qF "unknown transport 'mpi': use --transport=pthreads or --transport=pmix_ofi" ||
        return 1
    # A wrapper copied out of its tree says where it looked.
    cp "$moved/bin/shmalloc-cc" "$work/lone-cc" || return 1
    out=$("$work/lone-cc" prog.c 2>&1)
    status=$?
    echo "exit status $status: $out"
    [ $status = 2 ] && echo "$out" | grep -qF "no shmalloc.h in $work/../include" &&
    "$moved/bin/shmalloc-cc" --version | grep -qxF "shmalloc-cc (shmalloc) $version"
}
step "shmalloc-cc: an unknown transport and a wrapper out of its tree are refused with the reason" check_wrapper_errors

if [ "$HAVE_PMIX_OFI" = 1 ]; then
    check_wrapper_pmix() {
        # examples/hello_pmix_ofi.c: the ring's lines, on 2 PEs.
        "$moved/bin/shmalloc-cc" --transport=pmix_ofi -std=c99 -Wall -Werror examples/hello_pmix_ofi.c \
            -o "$work/hello_pmix_cc" &&
        needed "$work/hello_pmix_cc" | grep -q libshmalloc_pmix_ofi || return 1
        out=$(env -u LD_LIBRARY_PATH $MPIRUN_ENV timeout 120 mpirun --oversubscribe -np 2 -x FI_PROVIDER \
            "$work/hello_pmix_cc" 2>&1) || { echo "$out"; return 1; }
        echo "$out"
        echo "$out" | grep -qx "PE 0 of 2 received 1 from PE 1" && echo "$out" | grep -qx "PE 1 of 2 received 0 from PE 0"
    }
    step "shmalloc-cc --transport=pmix_ofi: build, run on 2 PEs under mpirun" check_wrapper_pmix

    check_readme_wrapper() {
        # The README's first block of shmalloc-cc commands as written,
        # /opt/shmalloc replaced by the moved tree, run where examples/ is.
        sed -n '/^## Compiling with shmalloc-cc/,/^## /p' README.md | awk '/^    /{ b = 1; print; next } b { exit }' |
            sed -e 's/^    //' -e "s|/opt/shmalloc|$moved|g" -e "s|prog\.c|examples/hello_pthreads.c|g" >"$work/readme-cc.sh"
        cat "$work/readme-cc.sh"
        [ "$(grep -c 'shmalloc-cc' "$work/readme-cc.sh")" -ge 3 ] || { echo "the README's commands were not found"; return 1; }
        mkdir -p "$work/readme-cc" && ln -sf "$SRC/examples" "$work/readme-cc/examples" &&
        out=$(cd "$work/readme-cc" && env -u LD_LIBRARY_PATH $MPIRUN_ENV timeout 240 sh -e "$work/readme-cc.sh" 2>&1)
        status=$?
        echo "$out"
        # 4 PEs of the pthreads program, then 2 for each mpirun (the user's
        # form and the root's: both as root here, as MPIRUN_ENV allows).
        [ $status = 0 ] && [ "$(echo "$out" | grep -c ' received ')" = $((4 + 2 * $(grep -c mpirun "$work/readme-cc.sh"))) ]
    }
    step "the README's shmalloc-cc commands, as written, build and run both programs" check_readme_wrapper
fi

# ---- part D: a program that calls nothing of libshmalloc ------------------
# Linked --as-needed (Debian's default; asked for here, so any toolchain
# checks it), a program that allocates nothing does not name libshmalloc:
# the transport library must find it itself.  Each documented way builds
# such a program for each transport, from an installed tree and again
# after the tree is moved, and runs it without LD_LIBRARY_PATH.
hello=$work/hello-nothing
mkdir -p "$hello/cmake"
cat >"$hello/pthreads.c" <<'EOF'
#include "transports/shmalloc_pthreads.h"

#include <stdio.h>

static void pe_main(void *arg)
{
    (void)arg;
    printf("hello from PE %d of %d\n", shmem_my_pe(), shmem_n_pes());
}

int main(void) { return shmalloc_pthreads_run(2, 0, pe_main, NULL); }
EOF
cat >"$hello/pmix_ofi.c" <<'EOF'
#include "transports/shmalloc_pmix_ofi.h"

#include <stdio.h>

int main(void)
{
    shmem_init();
    printf("hello from PE %d of %d\n", shmem_my_pe(), shmem_n_pes());
    shmem_finalize();
    return 0;
}
EOF
hello_transports=$(for t in $transports; do echo "${t#shmalloc_}"; done)
{
    echo 'cmake_minimum_required(VERSION 3.13)'
    echo 'project(hello_nothing C)'
    echo "find_package(shmalloc $version REQUIRED COMPONENTS" $hello_transports ')'
    for t in $hello_transports; do
        echo "add_executable(hello_$t \"$hello/$t.c\")"
        echo "target_link_libraries(hello_$t PRIVATE shmalloc::$t)"
    done
} >"$hello/cmake/CMakeLists.txt"

# Runs the hello world $2 of transport $1 on 2 PEs (pmix_ofi: under mpirun).
run_hello() {
    if needed "$2" | grep -q '^libshmalloc\.so'; then
        echo "$2 names libshmalloc itself: the case is not checked"; return 1
    fi
    if [ "$1" = pmix_ofi ]; then
        out=$(env -u LD_LIBRARY_PATH $MPIRUN_ENV timeout 120 mpirun --oversubscribe -np 2 -x FI_PROVIDER "$2" 2>&1)
    else
        out=$(env -u LD_LIBRARY_PATH timeout 60 "$2" 2>&1)
    fi
    status=$?
    echo "$out"
    [ $status = 0 ] || { echo "exit status $status"; return 1; }
    echo "$out" | grep -qx "hello from PE 0 of 2" && echo "$out" | grep -qx "hello from PE 1 of 2"
}

# Transport $1 built with the way $2 from the tree $3 ("installed" or
# "moved", $4), then run.  pkg-config's files record the prefix they were
# installed with: for a moved tree, --define-prefix takes it from where
# the file is.
hello_nothing() {
    t=$1 way=$2 tree=$3 where=$4
    bin=$hello/$where-$way-$t src=$hello/$t.c pc=shmalloc-$(echo "$t" | tr _ -) define=
    [ "$where" = moved ] && define=--define-prefix
    case $way in
    shmalloc-cc) "$tree/bin/shmalloc-cc" --transport="$t" -std=c99 -Wall -Werror -Wl,--as-needed "$src" -o "$bin" ;;
    pkg-config)
        flags=$(PKG_CONFIG_PATH="$tree/lib/pkgconfig" $PKG_CONFIG $define --cflags --libs "$pc") &&
        libdir=$(PKG_CONFIG_PATH="$tree/lib/pkgconfig" $PKG_CONFIG $define --variable=libdir "$pc") &&
        echo "$flags -Wl,-rpath,$libdir" &&
        $CC -std=c99 -Wall -Werror -Wl,--as-needed "$src" $flags -Wl,-rpath,"$libdir" -o "$bin" ;;
    cmake)
        [ -f "$hello/$where-cmake/CMakeCache.txt" ] ||
            cmake -S "$hello/cmake" -B "$hello/$where-cmake" -DCMAKE_PREFIX_PATH="$tree" \
                -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_C_COMPILER="$(command -v "$CC")" \
                -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed >"$hello/$where-cmake.log" 2>&1 ||
            { cat "$hello/$where-cmake.log"; return 1; }
        cmake --build "$hello/$where-cmake" --target "hello_$t" && cp "$hello/$where-cmake/hello_$t" "$bin" ;;
    esac || return 1
    run_hello "$t" "$bin"
}

check_hello_trees() {
    for where in installed moved; do
        for t in $hello_transports; do
            for way in shmalloc-cc pkg-config cmake; do
                step "$t, $way, $where tree: a program that allocates nothing runs" \
                    hello_nothing "$t" "$way" "$hello/$where" "$where"
            done
        done
        [ "$where" = moved ] || { mv "$hello/installed" "$hello/moved" || return 1; }
    done
}
if step "make install PREFIX=<tmp> for part D" mk install PREFIX="$hello/installed"; then
    check_hello_trees
fi

if steps_total install-check; then
    rm -rf "$work"
    exit 0
fi
echo "install-check: the trees and logs are kept in $work" >&2
exit 1
