/* copy.h - the copy of every put and get of the transports: into and out
   of a peer's heap mapped here, and this PE's own.
   MIT licence: see the end of ../../shmalloc.h.

   A peer may watch the bytes a put writes: a flag it waits for, clears and
   waits for again.  memcpy and memmove may store a byte twice (glibc copies
   8 to 15 bytes as two overlapping words), and a store repeated after the
   peer's clear sets the flag again.  shmalloc_copy stores each byte of dest
   exactly once, by relaxed atomic stores as wide as dest's alignment
   allows, up to 8 bytes, and aligned 16-byte volatile stores between the
   end words, which the compiler can neither merge into a memcpy call nor
   split: an aligned 1, 2, 4 or 8 bytes is one store of that width, and a
   longer copy stores its last aligned word whole, last.  A source aligned
   as dest is read the same way, so an aligned get of 1 to 8 bytes is one
   load.  Ranges may overlap, as memmove's.

   Part of the API a transport builds on (start.h lists the others),
   inline, for a transport whose puts and gets are copies in memory.
   SHM__COPY_STORE and SHM__COPY_STORE16 are private: for a test that
   watches every store (tests/common/test_copy.c). */
#if !defined(SHMALLOC_COPY_H_INCLUDED)
#define SHMALLOC_COPY_H_INCLUDED

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One store of v at `at`, which is aligned for type. */
#if !defined(SHM__COPY_STORE)
#  define SHM__COPY_STORE(type, at, v) __atomic_store_n((type *)(void *)(at), (v), __ATOMIC_RELAXED)
#endif

/* One store of the 16 bytes v at `at`, aligned for them: volatile, as
   no atomic store is that wide. */
#if !defined(SHM__COPY_STORE16)
#  define SHM__COPY_STORE16(at, v) (*(volatile shm__copy128 *)(void *)(at) = (v))
#endif

/* Words that may hold any type's bytes. */
typedef uint16_t shm__copy16 __attribute__((may_alias));
typedef uint32_t shm__copy32 __attribute__((may_alias));
typedef uint64_t shm__copy64 __attribute__((may_alias));
typedef uint64_t shm__copy128 __attribute__((vector_size(16), may_alias));

/* sizeof(type) bytes from s to d (aligned for type): one load when s is
   aligned too, else an unaligned one, then one store. */
#define SHM__COPY_ONE(type, d, s)                                                          \
    do {                                                                                   \
        type v_;                                                                           \
        if (((uintptr_t)(s) & (sizeof v_ - 1)) == 0)                                       \
            v_ = __atomic_load_n((const type *)(const void *)(s), __ATOMIC_RELAXED);       \
        else                                                                               \
            memcpy(&v_, (s), sizeof v_);                                                   \
        SHM__COPY_STORE(type, (d), v_);                                                    \
    } while (0)

/* The same, stepping up past the bytes copied, or down before them. */
#define SHM__COPY_UP(type, d, s, n)                                                        \
    do {                                                                                   \
        SHM__COPY_ONE(type, d, s);                                                         \
        (d) += sizeof(type), (s) += sizeof(type), (n) -= sizeof(type);                     \
    } while (0)
#define SHM__COPY_DOWN(type, d, s, n)                                                      \
    do {                                                                                   \
        (d) -= sizeof(type), (s) -= sizeof(type), (n) -= sizeof(type);                     \
        SHM__COPY_ONE(type, d, s);                                                         \
    } while (0)

/* n bytes from source to dest, each byte of dest stored once: from the
   start up, bytes up to dest's 8-byte alignment, 16-byte vectors, words
   (the last word a word's store) and the bytes left; or from the end down
   when dest lies above an overlapping source.  Any time, from any
   thread; no errors (dest and source must hold n bytes). */
static inline void shmalloc_copy(void *dest, const void *source, size_t n)
{
    unsigned char *d = (unsigned char *)dest;
    const unsigned char *s = (const unsigned char *)source;
    if ((uintptr_t)d - (uintptr_t)s < n) {
        d += n, s += n;
        if (n >= 1 && ((uintptr_t)d & 1)) SHM__COPY_DOWN(uint8_t, d, s, n);
        if (n >= 2 && ((uintptr_t)d & 2)) SHM__COPY_DOWN(shm__copy16, d, s, n);
        if (n >= 4 && ((uintptr_t)d & 4)) SHM__COPY_DOWN(shm__copy32, d, s, n);
        while (n >= 8) SHM__COPY_DOWN(shm__copy64, d, s, n);
        if (n >= 4) SHM__COPY_DOWN(shm__copy32, d, s, n);
        if (n >= 2) SHM__COPY_DOWN(shm__copy16, d, s, n);
        if (n >= 1) SHM__COPY_DOWN(uint8_t, d, s, n);
        return;
    }
    if (((uintptr_t)d | n) & 7) { /* not whole words: a head to align dest */
        if (n >= 1 && ((uintptr_t)d & 1)) SHM__COPY_UP(uint8_t, d, s, n);
        if (n >= 2 && ((uintptr_t)d & 2)) SHM__COPY_UP(shm__copy16, d, s, n);
        if (n >= 4 && ((uintptr_t)d & 4)) SHM__COPY_UP(shm__copy32, d, s, n);
    }
    if (n >= 24) {
        if ((uintptr_t)d & 8) SHM__COPY_UP(shm__copy64, d, s, n);
        for (; n >= 24; d += 16, s += 16, n -= 16) { /* the last word is left to a word's store */
            shm__copy128 v;
            memcpy(&v, s, sizeof v);
            SHM__COPY_STORE16(d, v);
        }
    }
    if (n >= 16) SHM__COPY_UP(shm__copy64, d, s, n); /* n < 24: two words at most */
    if (n >= 8) SHM__COPY_UP(shm__copy64, d, s, n);
    if (n & 7) { /* the tail */
        if (n >= 4) SHM__COPY_UP(shm__copy32, d, s, n);
        if (n >= 2) SHM__COPY_UP(shm__copy16, d, s, n);
        if (n >= 1) SHM__COPY_UP(uint8_t, d, s, n);
    }
}

#endif /* SHMALLOC_COPY_H_INCLUDED */
