/*
 * insn_count.c - scaletune's QEMU TCG plugin: kernel-only instruction counts
 * and per-translation-block execution counts.
 *
 * Loaded by QEMU user mode (7.2, plugin API version 1) as
 *
 *   qemu-aarch64 -plugin insn_count.so,range=0xA:0xB,range=0xC:0xD,text=0xT,out=PATH EXE ...
 *
 * range:     one link-time address range [A, B) of the kernel's code (from
 *            the executable's symbol table), given once per function: the
 *            kernel and the bodies of its parallel loops; at most MAX_RANGES;
 * text:      the link-time address of the lowest executable segment; the
 *            load bias (0 for non-PIE executables) is what QEMU reports as
 *            the start of the code minus this value, so PIE executables work;
 * out:       the file written at exit.
 *
 * Every translated block (TB) gets an inline add to a process-wide counter
 * of executed instructions. A TB that holds instructions inside the ranges
 * gets one record per contiguous run of in-range instructions, keyed by
 * (address of the run's first instruction, number of instructions), whose
 * counter an inline add increments on every execution of the TB. A TB is
 * straight-line code (the guest front ends end a TB at every branch), so
 * the instructions of one execution of a run are exactly the record's
 * instructions, contiguous from its address. The same address translated
 * twice with the same length shares a record.
 *
 * Output (text, one item per line):
 *
 *   scaletune-insn-count 2
 *   bias 0x<load bias>
 *   threads <guest threads started, the main thread included>
 *   total <instructions executed by the whole process>
 *   kernel <instructions executed inside the ranges>
 *   tb 0x<link-time address> <instructions> <bytes> <executions>   (one per record)
 *
 * Inline adds are not atomic, so counts are exact only when the guest runs
 * one thread. The plugin counts the guest's threads (a vCPU is created per
 * guest thread in user mode) and reports them; the runner runs kernels with
 * one pool thread (SCALETUNE_NUM_THREADS=1) and refuses counts from a run
 * that started more than one.
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
typedef void (*qemu_plugin_vcpu_simple_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op, void *ptr,
                                              uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_simple_cb_t cb);
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

#define MAX_RANGES 256

/* The kernel's code: [start, end) link-time address ranges. */
struct range {
    uint64_t start, end;
};

static struct range ranges[MAX_RANGES];
static size_t n_ranges;
static uint64_t text_link;
static char *out_path;
static int64_t bias;
static bool bias_known;
static uint64_t total_insns; /* target of an inline add in every TB */
static uint64_t threads;     /* vCPUs (guest threads) created; atomic */

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

/* The index of the range holding `link`, or -1. */
static long range_of(uint64_t link)
{
    for (size_t i = 0; i < n_ranges; i++) {
        if (link >= ranges[i].start && link < ranges[i].end) {
            return (long)i;
        }
    }
    return -1;
}

/* Gives the run of `n` in-range instructions from `first` a record counted on every execution of `tb`. */
static void count_run(struct qemu_plugin_tb *tb, uint64_t first, uint64_t n, uint64_t bytes)
{
    struct record *r = record_for(first, n, bytes);
    if (r) {
        qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &r->count, 1);
    } else {
        fprintf(stderr, "scaletune insn_count: out of memory, counts are incomplete\n");
    }
}

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
    /*
     * The current run of in-range instructions: its first address, length,
     * bytes, range, and the address it must continue at. A run never spans
     * two ranges (functions), so that each record lies in one function.
     */
    uint64_t first = 0, in_run = 0, bytes = 0, next = 0;
    long run_range = -1;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t link = qemu_plugin_insn_vaddr(insn) - (uint64_t)bias;
        uint64_t size = qemu_plugin_insn_size(insn);
        long r = range_of(link);
        if (in_run > 0 && (r != run_range || link != next)) {
            count_run(tb, first, in_run, bytes);
            in_run = 0;
        }
        if (r >= 0) {
            if (in_run == 0) {
                first = link;
                bytes = 0;
                run_range = r;
            }
            in_run++;
            bytes += size;
            next = link + size;
        }
    }
    if (in_run > 0) {
        count_run(tb, first, in_run, bytes);
    }
    pthread_mutex_unlock(&lock);
}

static void vcpu_init(qemu_plugin_id_t id, unsigned int vcpu_index)
{
    (void)id;
    (void)vcpu_index;
    __atomic_add_fetch(&threads, 1, __ATOMIC_RELAXED);
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
    fprintf(f, "scaletune-insn-count 2\n");
    fprintf(f, "bias 0x%" PRIx64 "\n", (uint64_t)bias);
    fprintf(f, "threads %" PRIu64 "\n", __atomic_load_n(&threads, __ATOMIC_RELAXED));
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

/* START:END with START < END. */
static bool parse_range(const char *s, struct range *r)
{
    const char *colon = strchr(s, ':');
    if (!colon || colon == s) {
        return false;
    }
    char start[32];
    size_t len = (size_t)(colon - s);
    if (len >= sizeof start) {
        return false;
    }
    memcpy(start, s, len);
    start[len] = '\0';
    return parse_u64(start, &r->start) && parse_u64(colon + 1, &r->end) && r->start < r->end;
}

SCALETUNE_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
    bool have_text = false;
    if (info->system_emulation) {
        fprintf(stderr, "scaletune insn_count: user-mode emulation only\n");
        return -1;
    }
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "range=", 6) == 0) {
            if (n_ranges == MAX_RANGES || !parse_range(a + 6, &ranges[n_ranges])) {
                fprintf(stderr, "scaletune insn_count: bad or too many ranges at `%s`\n", a);
                return -1;
            }
            n_ranges++;
        } else if (strncmp(a, "text=", 5) == 0) {
            have_text = parse_u64(a + 5, &text_link);
        } else if (strncmp(a, "out=", 4) == 0 && a[4]) {
            out_path = strdup(a + 4);
        } else {
            fprintf(stderr, "scaletune insn_count: unknown or malformed argument `%s`\n", a);
            return -1;
        }
    }
    if (n_ranges == 0 || !have_text || !out_path) {
        fprintf(stderr, "scaletune insn_count: needs range=START:END (one or more),text=ADDR,out=PATH\n");
        return -1;
    }
    qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
