/* fabric.c - the libfabric side of start-up and shut-down: the provider
   chosen, the endpoint and its queues, the message buffers, memory
   registration, the peers' addresses, and what it obtained in words. */
#include "pmix_ofi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHM__LOCAL_KEY 1 /* requested key of the message buffers, when the provider lets us choose */
#define SHM__KEY_EP "shmalloc.ofi.ep"

static void shm__ofi_check(int rc, const char *call)
{
    if (rc != 0)
        shm__init_fail(SHM__PMIX_MSG(PMIX_FABRIC_CALL_FAILED), call, fi_strerror(rc < 0 ? -rc : rc),
                       shm__ofi.prov ? shm__ofi.prov : "none", shm__ofi.me, shm__ofi.npes);
}

static int shm__is_shm(const char *prov)
{
    return strncmp(prov, "shm", 3) == 0 && (prov[3] == '\0' || prov[3] == ';');
}

/* >> provider ----------------------------------------------------------------------- */
/* Every mr_mode bit offered; the provider's answer rules.  want: the
   provider chosen for an unset FI_PROVIDER, or NULL. */
static struct fi_info *shm__hints(const char *want)
{
    struct fi_info *hints = fi_allocinfo();
    if (!hints) shm__init_fail(SHM__PMIX_MSG(PMIX_FABRIC_NO_MEMORY), "fi_allocinfo");
    hints->caps = FI_RMA | FI_MSG;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                  FI_MR_ENDPOINT | FI_MR_RAW;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    if (want) hints->fabric_attr->prov_name = strdup(want); /* fi_freeinfo frees it */
    return hints;
}

#define SHM__SHM_ROOM_PER_CPU ((unsigned long long)32 << 20) /* above what shm (1.17) checks for in /dev/shm */

/* Why the shm provider refused, when /dev/shm is the likely cause: it
   offers no endpoint (FI_ENODATA) unless /dev/shm has room for one per
   cpu (libfabric 1.17 on 2 cpus: 32 MiB is too little, 40 MiB enough).
   Else "". */
static void shm__shm_refusal(char *out, size_t cap, const char *prov, int rc)
{
    char space[96];
    unsigned long long free_bytes;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    out[0] = '\0';
    if (!shm__is_shm(prov) || rc != -FI_ENODATA) return;
    shm__dev_shm_space(space, sizeof space, &free_bytes);
    if (free_bytes >= SHM__SHM_ROOM_PER_CPU * (unsigned long long)(cpus > 0 ? cpus : 1)) return;
    snprintf(out, cap, "; the likely cause: /dev/shm has %s, and the shm provider needs room there for an "
             "endpoint per cpu (%ld here): free space in /dev/shm, or use FI_PROVIDER=\"tcp;ofi_rxm\"", space, cpus);
}

/* env: FI_PROVIDER, or NULL. */
static void shm__no_provider(const char *want, const char *env, int rc)
{
    char why[320];
    shm__shm_refusal(why, sizeof why, want ? want : env, rc);
    if (want)
        shm__init_fail(SHM__PMIX_MSG(PMIX_NO_PROVIDER_CHOSEN), want,
                       strcmp(want, "shm") == 0 ? "every PE is on this node" : "PEs are on several nodes",
                       fi_strerror(-rc), why);
    shm__init_fail(SHM__PMIX_MSG(PMIX_NO_PROVIDER), env, fi_strerror(-rc), why);
}

/* env: FI_PROVIDER, or NULL; nodes: how many the PEs run on (0: unknown). */
static void shm__choose_provider(const char *env, int nodes)
{
    shm__fabric *f = &shm__ofi;
    const char *want = NULL;
    struct fi_info *hints, *list = NULL, *pick, *i;
    int rc;
    if (!env || !*env) want = nodes == 1 ? "shm" : "tcp;ofi_rxm";
    hints = shm__hints(want);
    rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &list);
    fi_freeinfo(hints);
    if (rc != 0 || !list) shm__no_provider(want, env, rc);
    /* IPv4 first where sockets are the addresses (tcp lists ::1 too). */
    for (pick = list, i = list; i; i = i->next)
        if (i->addr_format == FI_SOCKADDR_IN) {
            pick = i;
            break;
        }
    f->info = fi_dupinfo(pick);
    fi_freeinfo(list);
    if (!f->info) shm__init_fail(SHM__PMIX_MSG(PMIX_FABRIC_NO_MEMORY), "fi_dupinfo");
    f->prov = f->info->fabric_attr->prov_name;
    f->mr_mode = (uint64_t)f->info->domain_attr->mr_mode;
    f->max_msg = f->info->ep_attr->max_msg_size ? f->info->ep_attr->max_msg_size : SIZE_MAX;
    /* shm: delivery-complete breaks it, and quiet flushes with reads instead.
       Others (tcp;ofi_rxm): without it a write may land after a barrier. */
    f->tx_flags = shm__is_shm(f->prov) ? 0 : FI_DELIVERY_COMPLETE;
    f->info->tx_attr->op_flags &= ~(uint64_t)(FI_DELIVERY_COMPLETE | FI_TRANSMIT_COMPLETE);
    f->info->tx_attr->op_flags |= f->tx_flags;
}

/* >> endpoint ------------------------------------------------------------------------ */
/* 1 once the endpoint is open: PEs to reach. */
int shm__fabric_up(void)
{
    return shm__ofi.ep != NULL;
}

/* The provider's FI_MR_* bits. */
uint64_t shm__fabric_mr_mode(void)
{
    return shm__ofi.mr_mode;
}

/* Registers buf, honouring FI_MR_ENDPOINT; 0 or a libfabric error. */
int shm__mr_register(void *buf, size_t len, uint64_t access, uint64_t key, struct fid_mr **mr, void **desc)
{
    int rc = fi_mr_reg(shm__ofi.domain, buf, len, access, 0, key, 0, mr, NULL);
    if (rc) {
        *mr = NULL;
        return rc;
    }
    if (shm__ofi.mr_mode & FI_MR_ENDPOINT) {
        rc = fi_mr_bind(*mr, &shm__ofi.ep->fid, 0);
        if (!rc) rc = fi_mr_enable(*mr);
        if (rc) {
            fi_close(&(*mr)->fid);
            *mr = NULL;
            return rc;
        }
    }
    *desc = fi_mr_desc(*mr);
    return 0;
}

/* A peer's FI_MR_RAW key, mapped into *key; 0 or a libfabric error. */
int shm__key_map_raw(uint64_t base, uint8_t *raw, size_t size, uint64_t *key)
{
    return fi_mr_map_raw(shm__ofi.domain, base, raw, size, key, 0);
}

void shm__key_unmap(uint64_t key)
{
    if (shm__ofi.domain) fi_mr_unmap_key(shm__ofi.domain, key);
}

/* The shm provider names its /dev/shm file after the endpoint. */
static void shm__remember_shm_file(const char *name, size_t len)
{
    const char *prefix = "fi_shm://";
    size_t plen = strlen(prefix);
    struct stat st;
    char path[160];
    if (len <= plen || strncmp(name, prefix, plen) != 0 || memchr(name, '\0', len) == NULL) return;
    if ((size_t)snprintf(path, sizeof path, "/dev/shm/%s", name + plen) >= sizeof path) return;
    if (strchr(path + 9, '/') || stat(path, &st) != 0) return;
    shm__files_set(SHM__FILE_ENDPOINT, path);
}

static void shm__open_endpoint(void)
{
    shm__fabric *f = &shm__ofi;
    struct fi_av_attr av_attr;
    struct fi_cq_attr cq_attr;
    shm__ofi_check(fi_fabric(f->info->fabric_attr, &f->fabric, NULL), "fi_fabric");
    shm__ofi_check(fi_domain(f->fabric, f->info, &f->domain, NULL), "fi_domain");
    memset(&av_attr, 0, sizeof av_attr);
    av_attr.type = FI_AV_TABLE;
    av_attr.count = (size_t)f->npes;
    shm__ofi_check(fi_av_open(f->domain, &av_attr, &f->av, NULL), "fi_av_open");
    memset(&cq_attr, 0, sizeof cq_attr);
    cq_attr.format = FI_CQ_FORMAT_DATA;
    shm__ofi_check(fi_cq_open(f->domain, &cq_attr, &f->cq, NULL), "fi_cq_open");
    shm__ofi_check(fi_endpoint(f->domain, f->info, &f->ep, NULL), "fi_endpoint");
    shm__ofi_check(fi_ep_bind(f->ep, &f->av->fid, 0), "fi_ep_bind(av)");
    shm__ofi_check(fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV), "fi_ep_bind(cq)");
    shm__ofi_check(fi_enable(f->ep), "fi_enable");
}

/* Message slots, the flush word and the bounce buffer, in one region,
   then the receives posted.  A slot per round of the largest group (all
   PEs) to send from, and two per round and two more to receive in: the
   messages in flight to one PE (2 epochs x rounds); 8 256 bytes each. */
static void shm__open_buffers(void)
{
    shm__fabric *f = &shm__ofi;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    int q, rounds = 1, slots;
    while (rounds < SHM__MAX_ROUNDS && (1 << rounds) < f->npes) rounds++;
    slots = 2 * rounds + 2; /* <= SHM__RECV_SLOTS */
    f->local_bytes = ((size_t)(rounds + slots) * SHM__SLOT_BYTES + 64 + SHM__BOUNCE_BYTES + page - 1) & ~(page - 1);
    f->local = (char *)mmap(NULL, f->local_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (f->local == (char *)MAP_FAILED) {
        f->local = NULL;
        shm__init_fail(SHM__PMIX_MSG(PMIX_BUFFERS_MAP_FAILED), f->local_bytes);
    }
    f->send_slots = f->local;
    f->recv_slots = f->send_slots + (size_t)rounds * SHM__SLOT_BYTES;
    f->flush_word = f->recv_slots + (size_t)slots * SHM__SLOT_BYTES;
    f->bounce = f->flush_word + 64;
    if (f->mr_mode & FI_MR_LOCAL)
        shm__ofi_check(shm__mr_register(f->local, f->local_bytes, FI_SEND | FI_RECV | FI_READ | FI_WRITE,
                                        SHM__LOCAL_KEY, &f->local_mr, &f->local_desc),
                       "fi_mr_reg(message buffers)");
    if (f->info->rx_attr->size && f->info->rx_attr->size < (size_t)slots) slots = (int)f->info->rx_attr->size;
    for (q = 0; q < slots; q++) shm__post_recv(q);
}

/* Swap endpoint names; fi_av_insert one at a time keeps the table's index
   equal to the rank whatever the address format. */
static void shm__swap_addresses(char *name, size_t name_len, size_t cap)
{
    shm__fabric *f = &shm__ofi;
    int q, rc, npes = f->npes;
    char *names;
    shm__pmix_put(SHM__KEY_EP, name, name_len);
    shm__fence("endpoint names", shm__poll);
    f->addrs = (fi_addr_t *)shmalloc_mem_alloc((size_t)npes, sizeof *f->addrs);
    names = (char *)shmalloc_mem_alloc(1, cap);
    if (!f->addrs || !names) shm__init_fail(SHM__PMIX_MSG(PMIX_NO_MEMORY_PEERS), npes);
    for (q = 0; q < npes; q++) {
        shm__pmix_get_bytes(q, SHM__KEY_EP, names, cap);
        rc = fi_av_insert(f->av, names, 1, &f->addrs[q], 0, NULL);
        if (rc != 1) shm__init_fail(SHM__PMIX_MSG(PMIX_AV_INSERT_FAILED), q, fi_strerror(rc < 0 ? -rc : FI_EINVAL));
    }
    shmalloc_mem_free(names);
}

/* PE me of npes, on nodes nodes (0: unknown); provider: FI_PROVIDER, or
   NULL; timeout: seconds an operation may take; check: what every poll of
   progress runs after the completions. */
void shm__fabric_open(int me, int npes, int nodes, const char *provider, int timeout, void (*check)(void))
{
    char name[256];
    size_t name_len = sizeof name;
    shm__ofi.me = me;
    shm__ofi.npes = npes;
    shm__ofi.timeout = timeout;
    shm__ofi.check = check;
    shm__choose_provider(provider, nodes);
#if defined(SHMALLOC_TESTING)
    shm__test_step("endpoint");
#endif
    shm__open_endpoint();
#if defined(SHMALLOC_TESTING)
    shm__test_step("endpoint open"); /* its file exists, its name is not known yet */
#endif
    shm__ofi_check(fi_getname(&shm__ofi.ep->fid, name, &name_len), "fi_getname");
    if (shm__is_shm(shm__ofi.prov)) shm__remember_shm_file(name, name_len);
    shm__open_buffers();
    shm__swap_addresses(name, name_len, sizeof name);
}

/* What puts, gets and quiet need of the open fabric. */
void shm__fabric_rma(shm__rma_means *out)
{
    const shm__fabric *f = &shm__ofi;
    out->max_msg = f->max_msg;
    out->bounce = f->mr_mode & FI_MR_LOCAL ? f->bounce : NULL;
    out->flush_word = f->flush_word;
    out->local_desc = f->local_desc;
    out->flush_by_read = !(f->tx_flags & FI_DELIVERY_COMPLETE);
}

/* Closes what is open, in order; safe at any point of start-up. */
void shm__fabric_close(void)
{
    shm__fabric *f = &shm__ofi;
    if (f->local_mr) fi_close(&f->local_mr->fid);
    if (f->ep) fi_close(&f->ep->fid); /* removes the shm provider's file */
    if (f->av) fi_close(&f->av->fid);
    if (f->cq) fi_close(&f->cq->fid);
    if (f->domain) fi_close(&f->domain->fid);
    if (f->fabric) fi_close(&f->fabric->fid);
    if (f->info) fi_freeinfo(f->info);
    if (f->local) munmap(f->local, f->local_bytes);
    shmalloc_mem_free(f->addrs);
    f->local_mr = NULL;
    f->ep = NULL;
    f->av = NULL;
    f->cq = NULL;
    f->domain = NULL;
    f->fabric = NULL;
    f->info = NULL;
    f->prov = NULL;
    f->local = NULL;
    f->addrs = NULL;
    shm__files_set(SHM__FILE_ENDPOINT, NULL);
}

/* >> description ------------------------------------------------------------------------ */
static void shm__mr_mode_text(char *modes, size_t cap)
{
    static const struct { uint64_t bit; const char *name; } bits[] = {
        {FI_MR_LOCAL, "LOCAL"}, {FI_MR_RAW, "RAW"}, {FI_MR_VIRT_ADDR, "VIRT_ADDR"}, {FI_MR_ALLOCATED, "ALLOCATED"},
        {FI_MR_PROV_KEY, "PROV_KEY"}, {FI_MR_MMU_NOTIFY, "MMU_NOTIFY"}, {FI_MR_RMA_EVENT, "RMA_EVENT"},
        {FI_MR_ENDPOINT, "ENDPOINT"}};
    size_t i, n = 0;
    modes[0] = '\0';
    for (i = 0; i < sizeof bits / sizeof bits[0]; i++)
        if (shm__ofi.mr_mode & bits[i].bit)
            n += (size_t)snprintf(modes + n, n < cap ? cap - n : 0, "%s%s", n ? "|" : "", bits[i].name);
    if (!modes[0]) snprintf(modes, cap, "0");
}

/* What start-up obtained, for SHMALLOC_VERBOSE: "provider P, endpoint A,
   mr_mode M, how quiet completes". */
void shm__fabric_text(char *out, size_t cap)
{
    const shm__fabric *f = &shm__ofi;
    char addr[128] = "", modes[128], name[256];
    size_t len = sizeof addr, name_len = sizeof name;
    if (fi_getname(&f->ep->fid, name, &name_len) == 0) fi_av_straddr(f->av, name, addr, &len);
    shm__mr_mode_text(modes, sizeof modes);
    snprintf(out, cap, "provider %s, endpoint %s, mr_mode %s, %s", f->prov, addr, modes,
             f->tx_flags ? "FI_DELIVERY_COMPLETE" : "quiet flushes by read");
}
