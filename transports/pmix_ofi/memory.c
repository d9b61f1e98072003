/* memory.c - the symmetric heap's memory: where it is mapped, the regions
   registered with libfabric as the heap creates and grows them, the keys
   of every peer's regions, and same-node peers' heaps mapped here. */
#include "pmix_ofi.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SHM__FIXED_FIRST ((uintptr_t)1 << 45) /* 32 TiB: above ASan's shadow, below libraries */
#define SHM__FIXED_END (((uintptr_t)1 << 47) - ((uintptr_t)1 << 40))
#define SHM__FIXED_TRIES 8
#define SHM__HEAP_KEY 2                      /* requested keys of the heap's regions: 2, 3, ... */
#define SHM__KEY_HEAP "shmalloc.ofi.heap"    /* and the registration's number */

/* What PEs swap through PMIx for each registered region of the heap. */
typedef struct shm__wire_heap {
    uint64_t ok;            /* 0: this PE's registration failed */
    uint64_t base;          /* block space address */
    uint64_t key;
    uint64_t raw_base;      /* FI_MR_RAW only */
    uint64_t raw_size;
    uint8_t raw[SHM__RAW_KEY_MAX];
    uint64_t node, pid;     /* the first region only: how same-node peers map the heap */
    int64_t fd;             /* its memfd, or -1 */
    uint64_t mapped, at;    /* the memfd's length, and the block space's offset in it */
} shm__wire_heap;

shm__heap_state shm__mem;

/* >> mapping ---------------------------------------------------------------------
   The same address on every PE when the kernel agrees: a fixed high address
   aligned to a power of two covering the heap, so shmem_align results are
   symmetric too.  Elsewhere the base is aligned to at most 1 GiB.  With
   peers on this node the heap is a memfd they map (shm__map_peer_heap). */
static int shm__shared_heap(int direct)
{
    uint32_t local = 0;
    if (!direct || shm__mem.npes < 2) return 0; /* without PMIx, PE 0 of 1 */
    return shm__pmix_get_u32(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, &local) != 0 || local > 1;
}

/* Reserves room for the heap of PE me of npes (s: what start-up found;
   o: the settings). */
void shm__place_heap(const shmalloc_start *s, const shm__options *o, int me, int npes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    shmalloc_map_place pl = {SHM__FIXED_FIRST, SHM__FIXED_END, SHM__FIXED_TRIES, NULL};
    size_t step = shmalloc_map_pow2_cover(s->bytes, page, SHMALLOC_MAP_MAX_ALIGN);
    uintptr_t slot = (uintptr_t)me + 1;
    shm__mem.me = me;
    shm__mem.npes = npes;
    shm__mem.peers = (shm__heap_peer *)shmalloc_mem_alloc((size_t)npes, sizeof *shm__mem.peers);
    if (!shm__mem.peers) shm__init_fail(SHM__PMIX_MSG(PMIX_NO_MEMORY_PEERS), npes);
#if defined(SHM__TSAN) /* it owns fixed parts of the address space: map anywhere */
    pl.first = 0;
#endif
#if defined(SHMALLOC_TESTING)
    shm__mem.fail_register = o->fail_register;
#endif
    if (o->any_address) {
        pl.first = 0;
        if (slot < (SHM__FIXED_END - SHM__FIXED_FIRST) / step / 2) pl.hint = (void *)(SHM__FIXED_FIRST + 2 * slot * step);
    }
    if (shmalloc_start_map(s, &shm__mem.map, shm__shared_heap(o->direct), &pl, me) != 0) shm__init_end();
    shm__mem.fixed_address = shm__mem.map.fixed;
    shmalloc_map_report(&shm__mem.map, &s->huge, me);
}

/* >> registration ---------------------------------------------------------------- */
#if defined(SHMALLOC_TESTING)
/* SHMALLOC_TEST_FAIL_REGISTER=PE[:N]: PE's registration number N (0,
   the default: the heap at start-up; 1: its first growth; ...) fails. */
static int shm__registration_fails(unsigned n)
{
    const char *v = shm__mem.fail_register, *colon;
    if (!v || atoi(v) != shm__mem.me) return 0;
    colon = strchr(v, ':');
    if ((colon ? (unsigned)atoi(colon + 1) : 0u) != n) return 0;
    shmalloc_print(2, SHM__PMIX_MSG(PMIX_TEST_REGISTER_FAILED), shm__mem.me, n);
    return 1;
}
#endif

/* Closes region i and forgets the peers' keys for it. */
static void shm__forget_region(int i)
{
    shm__heap_state *h = &shm__mem;
    shm__region *r = &h->regions[i];
    int q;
    for (q = 0; h->peers && q < h->npes; q++)
        if (h->peers[q].key_mapped[i]) {
            shm__key_unmap(h->peers[q].key[i]);
            h->peers[q].key_mapped[i] = 0;
        }
    if (r->mr) fi_close(&r->mr->fid);
    memset(r, 0, sizeof *r);
    h->nregions = i;
    __atomic_store_n(&h->bytes, i ? h->regions[i - 1].offset + h->regions[i - 1].bytes : 0, __ATOMIC_RELEASE);
    if (!i) h->base = NULL;
}

/* This PE's own registration of region r: 1 when it worked. */
static int shm__register_here(shm__region *r, void *base, size_t bytes, unsigned n)
{
    int rc;
#if defined(SHMALLOC_TESTING)
    if (shm__registration_fails(n)) return 0;
#else
    (void)n;
#endif
    if (!shm__fabric_up()) return 1;
    rc = shm__mr_register(base, bytes, FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE,
                          SHM__HEAP_KEY + (uint64_t)(r - shm__mem.regions), &r->mr, &r->desc);
    if (rc)
        shmalloc_print(2, SHM__PMIX_MSG(PMIX_MR_REG_FAILED), bytes, base, shm__mem.me, fi_strerror(-rc));
    return rc == 0;
}

/* This PE's record of region r, and its key for the peers. */
static void shm__describe_region(const shm__region *r, int ok, shm__wire_heap *mine)
{
    const shm__heap_state *h = &shm__mem;
    memset(mine, 0, sizeof *mine);
    mine->ok = (uint64_t)ok;
    mine->base = (uint64_t)(uintptr_t)h->base;
    mine->node = r == &h->regions[0] ? shmalloc_map_node_id() : 0;
    mine->pid = (uint64_t)getpid();
    mine->fd = h->map.fd;
    mine->mapped = h->map.mapped;
    mine->at = (uint64_t)(h->base - h->map.base);
    if (!ok || !r->mr) return;
    if (shm__fabric_mr_mode() & FI_MR_RAW) {
        size_t size = sizeof mine->raw;
        int rc = fi_mr_raw_attr(r->mr, &mine->raw_base, mine->raw, &size, 0);
        if (rc) shm__fatal(SHM__PMIX_MSG(PMIX_MR_RAW_ATTR_FAILED), fi_strerror(-rc), SHM__RAW_KEY_MAX);
        mine->raw_size = size;
    } else {
        mine->key = fi_mr_key(r->mr);
        if (mine->key == FI_KEY_NOTAVAIL) shm__fatal(SHM__PMIX_MSG(PMIX_MR_KEY_UNAVAILABLE));
    }
}

/* A same-node peer's block space, mapped here whole (the regions it may
   grow into too), so puts and gets to it are copies and shmem_ptr has an
   address for it.  A peer that cannot be mapped is reached by libfabric. */
static void shm__map_peer_heap(int q, const shm__wire_heap *theirs, const shm__wire_heap *mine)
{
    shm__heap_peer *p = &shm__mem.peers[q];
    if (theirs->fd < 0 || mine->fd < 0 || theirs->node != mine->node || theirs->at >= theirs->mapped) return;
    p->direct_map = shmalloc_map_peer((long)theirs->pid, (int)theirs->fd, (size_t)theirs->mapped);
    if (!p->direct_map) {
        shm__note(SHM__PMIX_MSG(PMIX_NOTE_PEER_UNMAPPED), shm__mem.me, q, strerror(errno));
        return;
    }
    p->direct_len = (size_t)theirs->mapped;
    p->direct = p->direct_map + theirs->at;
}

/* What PE q's record of region i tells this PE: with the first region its
   base and mapping, with every region its key. */
static void shm__learn_peer(int q, int i, int ok, const shm__wire_heap *theirs,
                            const shm__wire_heap *mine)
{
    shm__heap_peer *p = &shm__mem.peers[q];
    if (i == 0) {
        p->base = theirs->base;
        if (theirs->base != mine->base) shm__mem.same_address = 0;
        if (q != shm__mem.me && theirs->node == mine->node) p->pid = (long)theirs->pid;
        if (q != shm__mem.me) shm__map_peer_heap(q, theirs, mine);
    }
    if (!ok || !theirs->ok) return;
    if (shm__fabric_mr_mode() & FI_MR_RAW) {
        int rc = shm__key_map_raw(theirs->raw_base, (uint8_t *)(uintptr_t)theirs->raw, (size_t)theirs->raw_size,
                                  &p->key[i]);
        if (rc) shm__fatal(SHM__PMIX_MSG(PMIX_MR_MAP_RAW_FAILED), q, fi_strerror(-rc));
        p->key_mapped[i] = 1;
    } else {
        p->key[i] = theirs->key;
    }
}

/* Every PE's record of region i, through a PMIx fence (entered and left
   with the progress lock held; the fence runs without it). */
static void shm__exchange_keys(const shm__region *r, int i, unsigned n, int ok)
{
    shm__wire_heap mine, theirs;
    char key[64];
    int q;
    shm__describe_region(r, ok, &mine);
    shm__leave();
    snprintf(key, sizeof key, "%s.%u", SHM__KEY_HEAP, n);
    shm__pmix_put(key, &mine, sizeof mine);
    shm__fence("heap keys", shm__poll);
    shm__enter();
    if (i == 0) {
        shm__mem.same_address = 1;
        /* Every peer has opened this PE's shm provider file by now (it
           inserted our address before this fence): its name can go, so
           even a SIGKILL later leaves nothing in /dev/shm. */
        shm__files_unlink(SHM__FILE_ENDPOINT);
    }
    for (q = 0; q < shm__mem.npes; q++) {
        if (q == shm__mem.me) theirs = mine;
        else shm__pmix_get_bytes(q, key, &theirs, sizeof theirs);
        shm__learn_peer(q, i, ok, &theirs, &mine);
    }
}

/* Called on every PE at the same point (heap creation, each growth): every
   PE registers its region and learns every peer's key through a PMIx fence,
   even when its own registration failed, so none is left waiting.  A peer
   whose registration failed makes the heap's all-reduce fail the call,
   which deregisters the regions that did register.  Other threads' puts
   may run meanwhile: libfabric calls and the new region's state are
   changed under the lock, and the heap's new size is published last. */
int shm__tp_register(void *user, void *base, size_t bytes)
{
    shm__heap_state *h = &shm__mem;
    unsigned n = h->registrations++;
    (void)user;
    int ok, i = h->nregions;
    shm__region *r = &h->regions[i];
    if (i == SHMALLOC_MAX_REGIONS) shm__fatal(SHM__PMIX_MSG(PMIX_TOO_MANY_REGIONS), SHMALLOC_MAX_REGIONS);
    if (i == 0) h->base = (char *)base;
    shm__enter();
    r->offset = (size_t)((char *)base - h->base);
    r->bytes = bytes;
    ok = shm__register_here(r, base, bytes, n);
    if (shm__fabric_up()) shm__exchange_keys(r, i, n, ok);
    else if (i == 0) h->same_address = 1;
    if (!ok) {
        shm__forget_region(i);
        shm__leave();
        return -1;
    }
    h->nregions = i + 1;
    __atomic_store_n(&h->bytes, r->offset + bytes, __ATOMIC_RELEASE);
    shm__leave();
    return 0;
}

/* The heap deregisters its regions last first. */
int shm__tp_deregister(void *user, void *base, size_t bytes)
{
    int i = shm__mem.nregions - 1;
    (void)user, (void)bytes;
    if (i < 0 || shm__mem.base + shm__mem.regions[i].offset != (char *)base) return -1;
    shm__enter();
    shm__forget_region(i);
    shm__leave();
    return 0;
}

/* >> pieces for puts and gets ------------------------------------------------------ */
/* The region holding heap offset `offset` (< the heap's bytes). */
static const shm__region *shm__region_at(size_t offset)
{
    int i = shm__mem.nregions - 1;
    while (i > 0 && shm__mem.regions[i].offset > offset) i--;
    return &shm__mem.regions[i];
}

/* Where [offset, offset + len) of PE pe's heap is, into *remote; returns
   len cut at the end of the region holding offset.  With threads the
   caller holds the lock. */
size_t shm__heap_remote(int pe, uint64_t offset, size_t len, shm__remote *remote)
{
    const shm__region *r = shm__region_at(offset);
    const shm__heap_peer *p = &shm__mem.peers[pe];
    remote->base = p->base + r->offset;
    remote->offset = offset - r->offset;
    remote->key = p->key[r - shm__mem.regions];
    return len < r->offset + r->bytes - offset ? len : r->offset + r->bytes - offset;
}

/* The registration of local, inside this PE's heap, into *desc; returns
   len cut at the end of its region. */
size_t shm__heap_local(const char *local, size_t len, void **desc)
{
    size_t at = (size_t)(local - shm__mem.base);
    const shm__region *l = shm__region_at(at);
    *desc = l->desc;
    return len < l->offset + l->bytes - at ? len : l->offset + l->bytes - at;
}

/* Closes what is open, in order, before the fabric closes: the regions,
   the peers' heaps mapped here, then the heap's memory.  Safe at any
   point of start-up. */
void shm__memory_close(void)
{
    shm__heap_state *h = &shm__mem;
    int q;
    while (h->nregions > 0) shm__forget_region(h->nregions - 1);
    for (q = 0; h->peers && q < h->npes; q++)
        if (h->peers[q].direct_map) munmap(h->peers[q].direct_map, h->peers[q].direct_len);
    shmalloc_mem_free(h->peers);
    h->peers = NULL;
    shmalloc_map_release(&h->map);
}

/* PE pe's process, when it shares this PE's node and PID namespace; else
   0.  Only reads memory: the signal handler calls it. */
long shm__peer_pid(int pe)
{
    return shm__mem.peers ? shm__mem.peers[pe].pid : 0;
}
