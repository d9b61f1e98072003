/* node.c - the node barrier.  PEs on one node synchronise through a small
   shared segment instead of messages, in dissemination rounds: in round k
   each PE publishes what it has combined so far (its values, then the
   barrier's number) in its round-k slot, of its own cache lines, and waits
   for the slot of the PE 2^k before it, whose values it combines.  After
   ceil(log2 P) rounds every PE has every PE's values, having read one slot
   per round.  On several nodes the barrier is hierarchical: the node's
   leader (its lowest rank) then runs the dissemination rounds with the
   other nodes' leaders by messages, and publishes the result and the
   number in the release slot that the node's other PEs wait on.  A slot
   is double-buffered by the number's parity, each half the number with
   the values after it, so that a reader fetches the fewest lines: a PE
   writes a half again only two barriers later, after every PE has passed
   the barrier in between and so has read it.  SHMALLOC_PMIX_OFI_NODE_BARRIER=0 keeps
   messages among all PEs. */
#include "teams.h"

#include <limits.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SHM__NODE_SPINS 2000 /* polls with a cpu pause before yielding, when every PE has a cpu */
#define SHM__KEY_NODE "shmalloc.node"
#define SHM__KEY_NODE_OK "shmalloc.node.ok"

/* Bytes: whole cache lines, the number and an allreduce_and's values (8 256
   for 1 024), so that a call is one pass; a barrier reads the first line. */
#define SHM__NODE_HALF (((1 + SHMALLOC_REDUCE_AND_MAX) * sizeof(uint64_t) + 63) & ~(size_t)63)

typedef struct shm__node_half {
    uint64_t epoch; /* atomic: the last barrier of this parity written here */
    uint64_t values[SHMALLOC_REDUCE_AND_MAX];
    char pad[SHM__NODE_HALF - (1 + SHMALLOC_REDUCE_AND_MAX) * sizeof(uint64_t)];
} shm__node_half;

struct shm__node_slot {
    shm__node_half half[2]; /* by the barrier's parity */
};

/* 1 when barriers may use node memory: allowed, and some node has
   several PEs. */
static int shm__node_wanted(int allowed)
{
    const shm__collective *c = &shm__coll;
    return allowed && c->nodes.count > 0 && c->nodes.count < c->npes;
}

/* The segment's name: its creator's PID first, which the sweep of stale
   files reads (files.c), then the job's namespace and the leader's rank.
   Its path is removed should this PE end abnormally. */
static void shm__node_name(long creator, const char *nspace, int leader)
{
    char *p, *name = shm__coll.node_file, path[sizeof shm__coll.node_file + 16];
    snprintf(name, sizeof shm__coll.node_file, "/" SHM__NODE_PREFIX "%ld-%.100s-%d", creator, nspace, leader);
    for (p = name + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
            *p = '_';
    snprintf(path, sizeof path, "/dev/shm%s", name);
    shm__files_set(SHM__FILE_NODE, path);
}

/* The leader's segment, its space reserved: a full /dev/shm takes a
   size it cannot back (ftruncate), and the first barrier would die of
   SIGBUS.  -1, said once, when it cannot: barriers go by messages. */
static int shm__node_create(size_t bytes)
{
    const char *file = shm__coll.node_file;
    int fd = shm_open(file, O_RDWR | O_CREAT | O_EXCL, 0600), e = fd < 0 ? errno : 0;
    char space[96];
    unsigned long long free_bytes;
    if (fd >= 0 && (e = posix_fallocate(fd, 0, (off_t)bytes)) != 0) {
        close(fd);
        shm_unlink(file);
        fd = -1;
    }
    if (fd >= 0) return fd;
    shm__dev_shm_space(space, sizeof space, &free_bytes);
    shmalloc_print(2, SHM__PMIX_MSG(PMIX_NODE_BARRIER_NO_SPACE), shm__coll.me, bytes, strerror(e), space);
    return -1;
}

/* The leader creates the segment and says whether it could (its PID, or
   0); the others open it after a fence.  Maps it; an fd < 0 maps nothing.
   nspace: the job's PMIx namespace, which names the segment. */
static void shm__node_attach(int leader, size_t bytes, const char *nspace)
{
    const char *file = shm__coll.node_file;
    int me = shm__coll.me, fd = -1;
    uint64_t creator = 0;
    if (me == leader) {
        shm__node_name((long)getpid(), nspace, leader);
        fd = shm__node_create(bytes);
        creator = fd >= 0 ? (uint64_t)getpid() : 0;
        shm__pmix_put(SHM__KEY_NODE, &creator, sizeof creator);
    }
    shm__fence("node segment", shm__poll);
    if (me != leader) {
        shm__pmix_get_bytes(leader, SHM__KEY_NODE, &creator, sizeof creator);
        if (creator) shm__node_name((long)creator, nspace, leader);
        if (creator) fd = shm_open(file, O_RDWR, 0600);
    }
    if (fd >= 0) {
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m != MAP_FAILED) {
            shm__coll.node = (shm__node_slot *)m;
            shm__coll.node_bytes = bytes;
        }
    }
}

/* Every PE learns whether every node managed, and all use node memory or
   none does; the file is unlinked once every PE has it open, so a crash
   later leaves none. */
static void shm__node_agree(int leader)
{
    shm__collective *c = &shm__coll;
    uint64_t ok = c->node != NULL, all = 1;
    int q;
    shm__pmix_put(SHM__KEY_NODE_OK, &ok, sizeof ok);
    shm__fence("node segment mapped", shm__poll);
    if (c->me == leader) shm_unlink(c->node_file);
    c->node_file[0] = '\0';
    shm__files_set(SHM__FILE_NODE, NULL);
    for (q = 0; q < c->npes; q++) {
        uint64_t theirs = 1;
        if (q != c->me) shm__pmix_get_bytes(q, SHM__KEY_NODE_OK, &theirs, sizeof theirs);
        all &= theirs;
    }
    if (!all && c->node) { /* every PE decides alike: messages for all */
        munmap(c->node, c->node_bytes);
        c->node = NULL;
    }
}

/* The release slot's index: after a slot per PE per round (one round's
   worth for a PE alone). */
static size_t shm__node_release(void)
{
    int rounds = shm__coll.node_rounds;
    return (size_t)shm__coll.nodes.size * (size_t)(rounds ? rounds : 1);
}

/* Each PE's last word, after the release slot: how it ended (a
   SHM__END_* value with its detail above), or 0, so that a peer that
   finds it gone can say what happened. */
static uint64_t *shm__node_ends(void)
{
    return (uint64_t *)(void *)&shm__coll.node[shm__node_release() + 1];
}

/* After them, each PE's team barrier under way (shm__node_note_where), so
   that a team barrier that times out names the members that are not in it. */
static uint64_t *shm__node_wheres(void) { return shm__node_ends() + shm__coll.nodes.size; }

static size_t shm__node_bytes(void)
{
    return (shm__node_release() + 1) * sizeof(shm__node_slot) + 2 * (size_t)shm__coll.nodes.size * sizeof(uint64_t);
}

/* Sets the message group: every PE, or with node memory (when allowed)
   on several nodes only the leaders.  After shm__ends_open; nodes: the
   bootstrap's map (its arrays are kept until shm__node_close); nspace:
   the job's PMIx namespace. */
void shm__node_open(int allowed, const shm__nodes *nodes, const char *nspace)
{
    shm__collective *c = &shm__coll;
    const shm__nodes *m = &c->nodes;
    int leader = nodes->ranks ? nodes->ranks[0] : 0, q;
    c->nodes = *nodes;
    c->world.size = c->npes;
    c->world.me = c->me;
    c->world.stride = 1;
    if (!shm__node_wanted(allowed)) return;
    while ((1 << c->node_rounds) < m->size) c->node_rounds++;
    shm__node_attach(leader, shm__node_bytes(), nspace);
    /* Spin first only on one node with a cpu per PE: across nodes a
       barrier waits for the network anyway, and a spinning PE would hold
       the cpu its node's leader needs. */
    c->node_pauses = m->count == 1 && m->size <= sysconf(_SC_NPROCESSORS_ONLN) ? SHM__NODE_SPINS : 0;
    shm__node_agree(leader);
    if (c->node && m->count > 1) {
        c->world.size = m->count;
        c->world.ranks = m->leaders;
        for (q = 0; q < m->count; q++)
            if (m->leaders[q] == leader) c->world.me = q;
    }
}

/* Index of PE pe among this node's PEs, or -1. */
static int shm__node_index(int pe)
{
    const shm__nodes *m = &shm__coll.nodes;
    int i;
    for (i = 0; m->ranks && i < m->size; i++)
        if (m->ranks[i] == pe) return i;
    return -1;
}

void shm__node_note_end(uint64_t how)
{
    if (shm__coll.node) __atomic_store_n(&shm__node_ends()[shm__coll.nodes.me], how, __ATOMIC_RELEASE);
}

uint64_t shm__node_end_of(int pe)
{
    int i = shm__node_index(pe);
    return shm__coll.node && i >= 0 ? __atomic_load_n(&shm__node_ends()[i], __ATOMIC_ACQUIRE) : 0;
}

void shm__node_note_where(uint64_t where)
{
    if (shm__coll.node) __atomic_store_n(&shm__node_wheres()[shm__coll.nodes.me], where, __ATOMIC_RELEASE);
}

/* 1 and *where when PE pe shares this node's memory, else 0. */
int shm__node_where_of(int pe, uint64_t *where)
{
    int i = shm__node_index(pe);
    if (!shm__coll.node || i < 0) return 0;
    *where = __atomic_load_n(&shm__node_wheres()[i], __ATOMIC_ACQUIRE);
    return 1;
}

/* The PE other than this one that a PE of this node gave up waiting
   for, and *by that PE; -1 when none did.  Only reads memory. */
int shm__node_gave_up(int *by)
{
    const shm__collective *c = &shm__coll;
    int i;
    for (i = 0; c->node && i < c->nodes.size; i++) {
        uint64_t how = __atomic_load_n(&shm__node_ends()[i], __ATOMIC_ACQUIRE);
        if (SHM__END_KIND(how) == SHM__END_GAVE_UP && i != c->nodes.me && (int)SHM__END_DETAIL(how) != c->me) {
            *by = c->nodes.ranks[i];
            return (int)SHM__END_DETAIL(how);
        }
    }
    return -1;
}

/* The PEs of this node that have not entered the node barrier this PE
   waits in (their round-0 slot does not show it yet), up to max of them
   into pes; -1 when no node barrier is under way.  Only reads memory:
   the signal handler calls it. */
int shm__node_absent(int *pes, int max)
{
    const shm__collective *c = &shm__coll;
    const shm__nodes *m = &c->nodes;
    uint64_t epoch = c->node_epoch;
    int i, n = 0;
    if (!c->node || c->node_rounds == 0 || __atomic_load_n(&shm__coll.waiting_for, __ATOMIC_RELAXED) < 0 ||
        (c->current && c->current->tag))
        return -1; /* none, or a team's barrier (shm__team_gave_up) */
    for (i = 0; i < m->size && n < max; i++)
        if (i != m->me && __atomic_load_n(&c->node[i].half[epoch & 1u].epoch, __ATOMIC_ACQUIRE) < epoch)
            pes[n++] = m->ranks[i];
    return n;
}

void shm__node_close(void)
{
    shm__collective *c = &shm__coll;
    if (c->node) munmap(c->node, c->node_bytes);
    c->node = NULL;
    c->nodes.ranks = c->nodes.leaders = c->nodes.leader_of = NULL; /* borrowed: freed next, and a signal reads them */
    if (c->node_file[0]) shm_unlink(c->node_file);
    c->node_file[0] = '\0';
    shm__files_set(SHM__FILE_NODE, NULL);
}

/* Publishes values and the barrier's number in its half of slot s. */
static void shm__node_write(shm__node_slot *s, uint64_t epoch, const uint64_t *values, int count)
{
    shm__node_half *h = &s->half[epoch & 1u];
    int i;
    for (i = 0; i < count; i++) h->values[i] = values[i];
    __atomic_store_n(&h->epoch, epoch, __ATOMIC_RELEASE);
}

/* Waits until slot s shows barrier epoch, and returns its values; pe is
   the PE that writes it.  The wait never sleeps: past its pauses each
   step makes progress, which a PE that is not here yet may need. */
static const uint64_t *shm__node_read(const shm__node_slot *s, uint64_t epoch, int count, int pe, shmalloc_wait *w)
{
    const shm__node_half *h = &s->half[epoch & 1u];
    while (__atomic_load_n(&h->epoch, __ATOMIC_ACQUIRE) < epoch) {
        if (w->polls < w->pauses) {
            shmalloc_wait_step(w); /* a cpu pause */
            continue;
        }
        __atomic_store_n(&shm__coll.waiting_for, pe, __ATOMIC_RELAXED); /* named if it is gone */
        shm__enter();
        shm__progress();
        shm__leave();
        if (shmalloc_wait_step(w) == SHMALLOC_WAIT_EXPIRED) shm__coll.gave_up(pe);
    }
    SHM__COUNT(slot_reads, 1);
    SHM__COUNT(lines_read, ((uintptr_t)&h->values[count] - 1) / 64 - (uintptr_t)h / 64 + 1);
    return h->values;
}

/* Round k of the node's dissemination: publish, then combine the slot of
   the PE 2^k before this one (max and AND are idempotent: overlaps do no
   harm). */
static void shm__node_round(uint64_t *values, int count, int k, uint64_t epoch, shmalloc_wait *w)
{
    shm__collective *c = &shm__coll;
    const shm__nodes *m = &c->nodes;
    int from = (m->me - (1 << k) + m->size) % m->size;
    const uint64_t *theirs;
    shm__node_write(&c->node[k * m->size + m->me], epoch, values, count);
    theirs = shm__node_read(&c->node[k * m->size + from], epoch, count, m->ranks[from], w);
    shm__combine(values, theirs, count);
}

/* This node's rounds of the next node barrier; returns its number. */
static uint64_t shm__node_gather(uint64_t *values, int count, shmalloc_wait *w)
{
    shm__collective *c = &shm__coll;
    uint64_t epoch = ++c->node_epoch;
    int k;
    shmalloc_wait_begin(w, c->timeout, c->node_pauses, SHMALLOC_WAIT_ALL_YIELDS);
    for (k = 0; k < c->node_rounds; k++) shm__node_round(values, count, k, epoch, w);
    return epoch;
}

void shm__node_sync(uint64_t *values, int count)
{
    shm__collective *c = &shm__coll;
    const shm__nodes *m = &c->nodes;
    shm__node_slot *release = &c->node[shm__node_release()];
    shmalloc_wait w;
    uint64_t epoch = shm__node_gather(values, count, &w);
    int i;
    if (m->count > 1 && m->me == 0) {
        shm__disseminate(&c->world, values, count);
        shm__node_write(release, epoch, values, count);
    } else if (m->count > 1) {
        const uint64_t *all = shm__node_read(release, epoch, count, m->ranks[0], &w);
        for (i = 0; i < count; i++) values[i] = all[i];
    } else {
        shm__enter();
        c->world.epoch = (uint32_t)epoch; /* names the barrier in messages */
        shm__leave();
    }
    __atomic_store_n(&shm__coll.waiting_for, -1, __ATOMIC_RELAXED);
}

/* SHMEM_TEAM_SHARED, when it is this node's PEs: the world's rounds on
   this node without the leaders' messages, numbered as the world's
   barriers (the two teams have the same PEs here, which call them in one
   order), so that the slots go on serving both. */
void shm__node_shared_sync(shm__group *g, uint64_t *values, int count)
{
    shmalloc_wait w;
    shm__coll.current = g;
    shm__node_gather(values, count, &w);
    __atomic_store_n(&shm__coll.waiting_for, -1, __ATOMIC_RELAXED);
    shm__coll.current = NULL;
    g->epoch++;
}

/* >> a team's own segments -----------------------------------------------------
   A team synchronises as the world does: its PEs on each node in
   dissemination rounds through slots of their own segment (a slot per PE
   per round and a release slot, double-buffered by the barrier's parity),
   then across nodes its node leaders by messages under a tag of their
   own, and each leader publishes the result in the release slot.  A
   segment's name carries its creator's PID (for the sweep of stale
   files), the job and the team's tag. */

/* The team's PEs on this node, and its leaders' group when this PE leads
   one of several nodes (tag: its messages'), linked.  The team's nodes
   when some node has several of its PEs and node memory is on, else 0;
   then nothing is made.  A PE out of memory makes nothing: it is known by
   its NULL node_ranks, and the members agree on messages. */
int shm__node_team_plan(shm__group *g, uint32_t tag)
{
    const shm__nodes *m = &shm__coll.nodes;
    int i, q, nodes = 0, *lead = NULL;
    shm__group *l = NULL;
    if (!shm__coll.node || !m->leader_of || g->size < 2) return 0;
    for (i = 0; i < g->size; i++) /* a member is its node's first when the one before is elsewhere: ranks ascend */
        nodes += i == 0 || m->leader_of[shm__group_member(g, i - 1)] != m->leader_of[shm__group_member(g, i)];
    if (nodes == g->size) return 0;
    g->node_ranks = (int *)shmalloc_mem_alloc((size_t)g->size, sizeof *g->node_ranks);
    lead = (int *)shmalloc_mem_alloc((size_t)nodes, sizeof *lead);
    l = (shm__group *)shmalloc_mem_alloc(1, sizeof *l);
    if (!g->node_ranks || !lead || !l) goto out_of_memory;
    g->node_size = 0;
    for (i = 0, l->size = 0; i < g->size; i++) {
        q = shm__group_member(g, i);
        if (i == 0 || m->leader_of[shm__group_member(g, i - 1)] != m->leader_of[q]) lead[l->size++] = q;
        if (q == shm__coll.me) g->node_me = g->node_size;
        if (m->leader_of[q] == m->leader_of[shm__coll.me]) g->node_ranks[g->node_size++] = q;
    }
    for (g->node_rounds = 0; (1 << g->node_rounds) < g->node_size;) g->node_rounds++;
    if (nodes == 1 || g->node_me != 0) {
        shmalloc_mem_free(lead);
        shmalloc_mem_free(l);
        return nodes;
    }
    for (l->me = 0; lead[l->me] != shm__coll.me;) l->me++;
    l->ranks = lead;
    l->tag = tag;
    l->team = g;
    if (shm__group_open(l) != 0) goto out_of_memory;
    shm__group_link(l);
    g->leaders = l;
    return nodes;
out_of_memory:
    shmalloc_mem_free(lead);
    shmalloc_mem_free(l);
    shmalloc_mem_free(g->node_ranks);
    g->node_ranks = NULL;
    return nodes;
}

static void shm__node_team_name(char *name, size_t cap, long creator, uint32_t tag)
{
    char *p;
    snprintf(name, cap, "/" SHM__NODE_PREFIX "%ld-%.100s-t%u", creator, shm__job.proc.nspace, tag);
    for (p = name + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
            *p = '_';
}

/* The segment of the team's PEs on this node mapped (made first when
   create), or NULL; *bytes its length.  A made file is named for removal
   should this PE end abnormally. */
shm__node_slot *shm__node_team_map(const shm__group *g, long creator, int create, size_t *bytes)
{
    char name[160], path[176];
    int fd;
    void *m;
    *bytes = ((size_t)g->node_size * (size_t)g->node_rounds + 1) * sizeof(shm__node_slot);
    if (creator <= 0) return NULL;
    shm__node_team_name(name, sizeof name, creator, g->tag);
    fd = create ? shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600) : shm_open(name, O_RDWR, 0600);
    if (fd < 0) return NULL;
    if (create) {
        snprintf(path, sizeof path, "/dev/shm%s", name);
        shm__files_set(SHM__FILE_NODE, path);
        if (posix_fallocate(fd, 0, (off_t)*bytes) != 0) {
            close(fd);
            return NULL; /* unlinked after the members agree */
        }
    }
    m = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return m == MAP_FAILED ? NULL : (shm__node_slot *)m;
}

/* Once every member has it open, or has failed to. */
void shm__node_team_unlink(const shm__group *g, long creator)
{
    char name[160];
    shm__node_team_name(name, sizeof name, creator, g->tag);
    shm_unlink(name);
    shm__files_set(SHM__FILE_NODE, NULL);
}

/* Gather on this node, the leaders' messages, then the release. */
void shm__node_team_sync(shm__group *g, uint64_t *values, int count)
{
    uint64_t epoch = (uint64_t)g->epoch + 1;
    shm__node_slot *release = g->node ? &g->node[g->node_size * g->node_rounds] : NULL;
    shmalloc_wait w;
    int k, i;
    shmalloc_wait_begin(&w, shm__coll.timeout, shm__coll.node_pauses, SHMALLOC_WAIT_ALL_YIELDS);
    shm__coll.current = g;
    for (k = 0; k < g->node_rounds; k++) {
        int n = g->node_size, from = (g->node_me - (1 << k) + n) % n;
        shm__node_write(&g->node[k * n + g->node_me], epoch, values, count);
        shm__combine(values, shm__node_read(&g->node[k * n + from], epoch, count, g->node_ranks[from], &w), count);
    }
    if (g->leaders) {
        shm__disseminate(g->leaders, values, count);
        shm__coll.current = g;
        if (release) shm__node_write(release, epoch, values, count);
    } else if (g->nodes > 1) {
        const uint64_t *all = shm__node_read(release, epoch, count, g->node_ranks[0], &w);
        for (i = 0; i < count; i++) values[i] = all[i];
    }
    __atomic_store_n(&shm__coll.waiting_for, -1, __ATOMIC_RELAXED);
    shm__coll.current = NULL;
    g->epoch++;
}

/* The team goes by messages among all its PEs from now on. */
void shm__node_team_close(shm__group *g)
{
    if (g->node) munmap(g->node, g->node_bytes);
    g->node = NULL;
    if (g->leaders) {
        shm__group_close(g->leaders);
        shmalloc_mem_free((void *)(uintptr_t)g->leaders->ranks);
        shmalloc_mem_free(g->leaders);
    }
    g->leaders = NULL;
    shmalloc_mem_free(g->node_ranks);
    g->node_ranks = NULL;
    g->nodes = 0;
}
