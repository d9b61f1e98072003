#!/bin/sh
# cpp_check.sh - the headers' declarations under each C++ standard with g++
# and clang++; `make cpp-check`, which then runs examples/hello_cpp.cpp.
#
#   B=build CXX_WARN='-Wall ... -Werror' tests/checks/cpp_check.sh HEADER...
#
# HEADER: the transports' headers (in transports/) included after
# shmalloc.h, one at a time.  Each with the options that change the
# declarations (SHMALLOC_STATIC is left out: it only makes sense with the
# implementation in the same file).
set -e
cd "$(dirname "$0")/../.."
probe=${B:-build}/gen/cpp_probe.cpp
mkdir -p "${probe%/*}"
printf '%s\n' '#include "shmalloc.h"' '#include <type_traits>' \
    '#if !defined(SHMALLOC_NO_SHMEM_NAMES)' \
    'static_assert(std::is_same<decltype(&shmem_malloc), void *(*)(size_t)>::value, "shmem_malloc");' \
    'static_assert(std::is_same<decltype(&shmem_align), void *(*)(size_t, size_t)>::value, "shmem_align");' \
    'static_assert(std::is_same<decltype(&shmem_free), void (*)(void *)>::value, "shmem_free");' \
    'static_assert(std::is_same<decltype(malloc_error), long>::value, "malloc_error");' \
    'long probe_error() { return malloc_error == SHMEM_MALLOC_OK ? 0 : malloc_error; }' \
    '#endif' \
    '#if defined(PROBE_TRANSPORT)' '#include PROBE_TRANSPORT' '#endif' \
    'int main() { return 0; }' >"$probe"
for cxx in g++ clang++; do for std in c++11 c++14 c++17 c++20; do
    echo "$cxx -std=$std $CXX_WARN: shmalloc.h with $*"
    for v in "" -DSHMALLOC_NO_SHMEM_NAMES "-DSHMALLOC_DEBUG_LEVEL=3 -DSHMALLOC_SL_LOG2=4 -DSHMALLOC_MAX_LOG2=40"; do
        for tp in "$@"; do
            $cxx -std=$std $CXX_WARN $v -DPROBE_TRANSPORT="\"transports/$tp\"" -I. -c "$probe" -o /dev/null ||
                { echo "failed: $cxx -std=$std $v with transports/$tp" >&2; exit 1; }
        done
    done
done; done
