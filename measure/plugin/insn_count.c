/*
 * insn_count.c - scaletune's QEMU TCG plugin: kernel-only instruction counts
 * and per-translation-block execution counts.
 *
 * Loaded by QEMU user mode (7.2, plugin API version 1) as
 *
 *   qemu-aarch64 -plugin insn_count.so,start=0xA,end=0xB,text=0xT,out=PATH EXE ...
 *
 * start/end: the kernel's link-time address range [start, end) (from the
 *            executable's symbol table);
 * text:      the link-time address of the lowest executable segment; the
 *            load bias (0 for non-PIE executables) is what QEMU reports as
 *            the start of the code minus this value, so PIE executables work;
 * out:       the file written at exit.
 *
 * Every translated block (TB) gets an inline add to a process-wide counter
 * of executed instructions. A TB that holds instructions inside the kernel
 * range gets a record keyed by (first in-range address, number of in-range
 * instructions) whose counter an inline add increments on every execution
 * of the TB. A TB is straight-line code (the guest front ends end a TB at
 * every branch), so the in-range instructions of one execution are exactly
 * the record's instructions, contiguous from its address. The same address
 * translated twice with the same length shares a record.
 *
 * Output (text, one item per line):
 *
 *   scaletune-insn-count 1
 *   bias 0x<load bias>
 *   total <instructions executed by the whole process>
 *   kernel <instructions executed inside [start, end)>
 *   tb 0x<link-time address> <instructions> <bytes> <executions>   (one per record)
 *
 * Inline adds are not atomic: counts are exact for single-threaded guests
 * (scaletune kernels run on one thread).
 *
 * Diagnostics go to stderr (qemu_plugin_outs prints only with `-d plugin`).
 *
 * No QEMU header is installed on the machines we run on, so the few API
 * declarations used are written out below, following QEMU 7.2's
 * include/qemu/qemu-plugin.h (API version 1).
 */

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- QEMU plugin API, version 1 (the subset used here) ---- */

#define SCALETUNE_EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;

typedef struct {
    const char *target_name;
    struct {
        int min;
        int cur;
    } version;
    bool system_emulation;
    /* (a union with system-emulation facts follows; not read here) */
} qemu_info_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_op {
    QEMU_PLUGIN_INLINE_ADD_U64,
};

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_start_code(void); /* user mode only */

SCALETUNE_EXPORT int qemu_plugin_version = 1;

/* ---- state ---- */

/* One straight-line sequence of kernel instructions and its execution count. */
struct record {
    uint64_t addr;  /* link-time address of the first in-range instruction */
    uint64_t n;     /* in-range instructions */
    uint64_t bytes; /* their total size */
    uint64_t count; /* executions (target of an inline add) */
};

static uint64_t range_start, range_end, text_link;
static char *out_path;
static int64_t bias;
static bool bias_known;
static uint64_t total_insns; /* target of an inline add in every TB */

/* Open-addressing hash table of record pointers (records never move). */
static struct record **table;
static size_t table_cap, table_len;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t slot_of(uint64_t addr, uint64_t n, size_t cap)
{
    uint64_t h = addr * 0x9E3779B97F4A7C15ull ^ (n + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull;
    return (size_t)(h >> 17) & (cap - 1);
}

static bool grow(void)
{
    size_t cap = table_cap ? table_cap * 2 : 1024;
    struct record **t = calloc(cap, sizeof *t);
    if (!t) {
        return false;
    }
    for (size_t i = 0; i < table_cap; i++) {
        struct record *r = table[i];
        if (r) {
            size_t s = slot_of(r->addr, r->n, cap);
            while (t[s]) {
                s = (s + 1) & (cap - 1);
            }
            t[s] = r;
        }
    }
    free(table);
    table = t;
    table_cap = cap;
    return true;
}

/* The record for (addr, n), created if new; NULL if out of memory. Call with the lock held. */
static struct record *record_for(uint64_t addr, uint64_t n, uint64_t bytes)
{
    if ((table_len + 1) * 2 > table_cap && !grow()) {
        return NULL;
    }
    size_t s = slot_of(addr, n, table_cap);
    while (table[s]) {
        if (table[s]->addr == addr && table[s]->n == n) {
            return table[s];
        }
        s = (s + 1) & (table_cap - 1);
    }
    struct record *r = calloc(1, sizeof *r);
    if (!r) {
        return NULL;
    }
    r->addr = addr;
    r->n = n;
    r->bytes = bytes;
    table[s] = r;
    table_len++;
    return r;
}

/* ---- callbacks ---- */

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    if (n == 0) {
        return;
    }
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &total_insns, n);
    pthread_mutex_lock(&lock);
    if (!bias_known) {
        bias = (int64_t)(qemu_plugin_start_code() - text_link);
        bias_known = true;
    }
    uint64_t first = 0, in_range = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t link = qemu_plugin_insn_vaddr(insn) - (uint64_t)bias;
        if (link >= range_start && link < range_end) {
            if (in_range == 0) {
                first = link;
            }
            in_range++;
            bytes += qemu_plugin_insn_size(insn);
        }
    }
    if (in_range > 0) {
        struct record *r = record_for(first, in_range, bytes);
        if (r) {
            qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &r->count, 1);
        } else {
            fprintf(stderr, "scaletune insn_count: out of memory, counts are incomplete\n");
        }
    }
    pthread_mutex_unlock(&lock);
}

static int by_address(const void *a, const void *b)
{
    const struct record *x = *(struct record *const *)a, *y = *(struct record *const *)b;
    if (x->addr != y->addr) {
        return x->addr < y->addr ? -1 : 1;
    }
    return x->n < y->n ? -1 : (x->n > y->n);
}

static void at_exit(qemu_plugin_id_t id, void *userdata)
{
    (void)id;
    (void)userdata;
    pthread_mutex_lock(&lock);
    size_t k = 0;
    struct record **rs = calloc(table_len ? table_len : 1, sizeof *rs);
    FILE *f = fopen(out_path, "w");
    if (!rs || !f) {
        fprintf(stderr, "scaletune insn_count: cannot write %s\n", out_path);
        if (f) {
            fclose(f);
        }
        free(rs);
        pthread_mutex_unlock(&lock);
        return;
    }
    uint64_t kernel = 0;
    for (size_t i = 0; i < table_cap; i++) {
        if (table[i]) {
            rs[k++] = table[i];
            kernel += table[i]->n * table[i]->count;
        }
    }
    qsort(rs, k, sizeof *rs, by_address);
    fprintf(f, "scaletune-insn-count 1\n");
    fprintf(f, "bias 0x%" PRIx64 "\n", (uint64_t)bias);
    fprintf(f, "total %" PRIu64 "\n", total_insns);
    fprintf(f, "kernel %" PRIu64 "\n", kernel);
    for (size_t i = 0; i < k; i++) {
        if (rs[i]->count > 0) {
            fprintf(f, "tb 0x%" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", rs[i]->addr, rs[i]->n, rs[i]->bytes,
                    rs[i]->count);
        }
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "scaletune insn_count: error writing %s\n", out_path);
    }
    free(rs);
    pthread_mutex_unlock(&lock);
}

/* ---- installation ---- */

static bool parse_u64(const char *s, uint64_t *v)
{
    char *end;
    if (!*s) {
        return false;
    }
    *v = strtoull(s, &end, 0);
    return *end == '\0';
}

SCALETUNE_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    bool have_start = false, have_end = false, have_text = false;
    if (info->system_emulation) {
        fprintf(stderr, "scaletune insn_count: user-mode emulation only\n");
        return -1;
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "start=", 6) == 0) {
            have_start = parse_u64(a + 6, &range_start);
        } else if (strncmp(a, "end=", 4) == 0) {
            have_end = parse_u64(a + 4, &range_end);
        } else if (strncmp(a, "text=", 5) == 0) {
            have_text = parse_u64(a + 5, &text_link);
        } else if (strncmp(a, "out=", 4) == 0 && a[4]) {
            out_path = strdup(a + 4);
        } else {
            fprintf(stderr, "scaletune insn_count: unknown or malformed argument `%s`\n", a);
            return -1;
        }
    }
    if (!have_start || !have_end || !have_text || !out_path || range_end <= range_start) {
        fprintf(stderr, "scaletune insn_count: needs start=ADDR,end=ADDR,text=ADDR,out=PATH with start < end\n");
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
