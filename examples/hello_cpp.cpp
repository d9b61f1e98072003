// hello_cpp.cpp - shmalloc from C++, with the pthreads transport (PEs are
// threads).
//
// Build:  make cpp-check   (or, by hand, with the library built as C:
//         g++ -std=c++11 -I. examples/hello_cpp.cpp build/libshmalloc_pthreads.a -pthread)
// Run:    ./hello_cpp [npes]       (4 PEs by default)
//
// Every PE allocates a symmetric array with shmem_malloc, owned by a
// std::unique_ptr whose deleter calls shmem_free, fills it, and reads its
// right-hand neighbour's copy into a std::vector on the host side.  Then it
// grows the array with shmem_realloc, takes an aligned block and a zeroed
// one, and checks that freeing a pointer into a block is refused.  Any wrong value makes the
// program exit with status 1.
#include "shmalloc.h"
#include "transports/shmalloc_pthreads.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace {

const std::size_t kWords = 16;

std::atomic<int> wrong_values(0); // PE threads add to it; read after they finish

// Releases a symmetric block.  shmem_free is collective, so every PE must
// destroy its owners in the same order: plain scopes give that.
struct SymmetricFree {
    void operator()(void *p) const { shmem_free(p); }
};
template <typename T> using symmetric_ptr = std::unique_ptr<T[], SymmetricFree>;

template <typename T> symmetric_ptr<T> symmetric_array(std::size_t n)
{
    return symmetric_ptr<T>(static_cast<T *>(shmem_malloc(n * sizeof(T))));
}

void expect(int me, const char *what, long got, long expected)
{
    if (got == expected) return;
    std::fprintf(stderr, "PE %d: %s is %ld, expected %ld\n", me, what, got, expected);
    ++wrong_values;
}

long value_of(int pe, std::size_t i) { return 1000L * pe + static_cast<long>(i); }

// Lines in PE order: each PE prints in its turn, between barriers.
void print_in_order(int me, int npes, const std::vector<long> &seen)
{
    for (int turn = 0; turn < npes; turn++) {
        if (turn == me) {
            std::printf("PE %d of %d: neighbour's words %ld .. %ld\n", me, npes, seen.front(), seen.back());
            std::fflush(stdout);
        }
        shmem_barrier_all();
    }
}

void pe_main(void *)
{
    const int me = shmem_my_pe(), npes = shmem_n_pes(), right = (me + 1) % npes;

    symmetric_ptr<long> words = symmetric_array<long>(kWords);
    if (!words) {
        std::fprintf(stderr, "PE %d: shmem_malloc failed: %s\n", me, shmalloc_strerror(malloc_error));
        shmem_global_exit(1);
    }
    for (std::size_t i = 0; i < kWords; i++) words[i] = value_of(me, i);
    shmem_barrier_all(); // every PE's copy is filled

    std::vector<long> seen(kWords);
    shmem_getmem(seen.data(), words.get(), kWords * sizeof(long), right);
    for (std::size_t i = 0; i < kWords; i++) expect(me, "neighbour's word", seen[i], value_of(right, i));
    print_in_order(me, npes, seen);

    // Grow the block: the contents stay, and the new address is symmetric
    // (the neighbour's copy is read at the same address).
    long *grown = static_cast<long *>(shmem_realloc(words.get(), 4 * kWords * sizeof(long)));
    if (!grown) {
        std::fprintf(stderr, "PE %d: shmem_realloc failed: %s\n", me, shmalloc_strerror(malloc_error));
        shmem_global_exit(1);
    }
    static_cast<void>(words.release());
    words.reset(grown);
    for (std::size_t i = 0; i < kWords; i++) expect(me, "word kept by shmem_realloc", words[i], value_of(me, i));
    for (std::size_t i = kWords; i < 4 * kWords; i++) words[i] = value_of(me, i);
    shmem_barrier_all();
    long last = 0;
    shmem_getmem(&last, &words[4 * kWords - 1], sizeof last, right);
    expect(me, "neighbour's last word after shmem_realloc", last, value_of(right, 4 * kWords - 1));

    {
        symmetric_ptr<double> aligned(static_cast<double *>(shmem_align(256, 8 * sizeof(double))));
        symmetric_ptr<int> zeroed(static_cast<int *>(shmem_calloc(kWords, sizeof(int))));
        expect(me, "shmem_align result modulo 256",
               aligned ? static_cast<long>(reinterpret_cast<std::uintptr_t>(aligned.get()) % 256) : -1, 0);
        long nonzero = 0;
        for (std::size_t i = 0; zeroed && i < kWords; i++) nonzero += zeroed[i] != 0;
        expect(me, "nonzero words from shmem_calloc", zeroed ? nonzero : -1, 0);
        shmem_barrier_all(); // no PE reads them any more; zeroed, then aligned, are freed
    }

    // A pointer into the middle of a block is refused, on every PE alike,
    // and the block stays as it was.
    shmem_free(&words[1]);
    expect(me, "malloc_error after freeing an interior pointer", malloc_error, SHMEM_MALLOC_NOT_ALIGNED);
    expect(me, "first word after the refused shmem_free", words[0], value_of(me, 0));

    shmem_barrier_all();
    words.reset(); // collective, as every PE gets here
    expect(me, "malloc_error after the last shmem_free", malloc_error, SHMEM_MALLOC_OK);
    expect(me, "shmalloc_check(-1)", shmalloc_check(-1), 0);
}

} // namespace

int main(int argc, char **argv)
{
    const int npes = argc > 1 ? std::atoi(argv[1]) : 4;
    if (shmalloc_pthreads_run(npes, std::size_t(1) << 20, pe_main, nullptr) != 0) return 1;
    if (wrong_values != 0) {
        std::fprintf(stderr, "hello_cpp: %d wrong values\n", wrong_values.load());
        return 1;
    }
    std::printf("hello_cpp: every value right on %d PE%s\n", npes, npes == 1 ? "" : "s");
    return 0;
}
