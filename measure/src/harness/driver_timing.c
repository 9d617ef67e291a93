
#define SCALETUNE_DRV_MAX_COUNT 1000000000L
#define SCALETUNE_DRV_MAX_REPEAT 1000L

struct scaletune_drv_timing {
    long warmup;
    long number;
    long repeat;
    long min_repeat_ms;
    int flush_cache;
    long pin_core;
};

static int scaletune_drv_parse_count(const char *s, long max, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 || v > max) {
        return -1;
    }
    *out = v;
    return 0;
}

/* Parses the timing options; 0 on success, -1 (after a message on stderr) on a bad option. */
static int scaletune_drv_parse_timing(int n, char **opts, struct scaletune_drv_timing *t) {
    t->warmup = 0;
    t->number = 1;
    t->repeat = 0;
    t->min_repeat_ms = 0;
    t->flush_cache = 0;
    t->pin_core = -1;
    for (int i = 0; i < n; i++) {
        const char *o = opts[i];
        long *slot = NULL;
        long max = SCALETUNE_DRV_MAX_COUNT;
        if (strcmp(o, "--flush-cache") == 0) {
            t->flush_cache = 1;
            continue;
        } else if (strcmp(o, "--warmup") == 0) {
            slot = &t->warmup;
        } else if (strcmp(o, "--number") == 0) {
            slot = &t->number;
        } else if (strcmp(o, "--repeat") == 0) {
            slot = &t->repeat;
            max = SCALETUNE_DRV_MAX_REPEAT;
        } else if (strcmp(o, "--min-repeat-ms") == 0) {
            slot = &t->min_repeat_ms;
        } else if (strcmp(o, "--pin-core") == 0) {
            slot = &t->pin_core;
            max = 1L << 20;
        } else {
            fprintf(stderr, "scaletune-driver: unknown option `%s`\n", o);
            return -1;
        }
        if (i + 1 >= n || scaletune_drv_parse_count(opts[i + 1], max, slot) != 0) {
            fprintf(stderr, "scaletune-driver: option %s needs a count from 0 to %ld\n", o, max);
            return -1;
        }
        i++;
    }
    if (t->number < 1) {
        fprintf(stderr, "scaletune-driver: --number must be at least 1\n");
        return -1;
    }
    return 0;
}

/* Pins the process to one CPU; 0 on success, -1 (after a message on stderr) on failure. */
static int scaletune_drv_pin(long core) {
#if defined(__linux__)
    cpu_set_t set;
    if (core >= CPU_SETSIZE) {
        fprintf(stderr, "scaletune-driver: cannot pin to CPU %ld: beyond CPU_SETSIZE\n", core);
        return -1;
    }
    CPU_ZERO(&set);
    CPU_SET((int)core, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "scaletune-driver: cannot pin to CPU %ld: %s\n", core, strerror(errno));
        return -1;
    }
    return 0;
#else
    fprintf(stderr, "scaletune-driver: cannot pin to CPU %ld: not supported on this system\n", core);
    return -1;
#endif
}

static int64_t scaletune_drv_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + (int64_t)ts.tv_nsec;
}

/* Bytes written to evict the caches: 64 MiB, or twice the L3 if that is larger. */
static size_t scaletune_drv_flush_bytes(void) {
    size_t n = (size_t)64 << 20;
#if defined(_SC_LEVEL3_CACHE_SIZE)
    long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (llc > 0 && (size_t)llc * 2 > n) {
        n = (size_t)llc * 2;
    }
#endif
    return n;
}

static void scaletune_drv_flush(unsigned char *buf, size_t n, long round) {
    memset(buf, (int)(round & 0x7f) + 1, n);
    /* The buffer escapes and memory is clobbered: the stores cannot be elided. */
    __asm__ volatile("" : : "r"(buf) : "memory");
}

/* Runs `number` calls and returns the elapsed nanoseconds. */
static int64_t scaletune_drv_timed(void (*call)(void), long number) {
    int64_t t0 = scaletune_drv_now_ns();
    for (long c = 0; c < number; c++) {
        call();
    }
    return scaletune_drv_now_ns() - t0;
}

/* Warm-up, calibration and the timed repeats; prints the report. 0 on success, -1 on allocation failure. */
static int scaletune_drv_time_calls(void (*call)(void), const struct scaletune_drv_timing *t) {
    double *repeats = (double *)malloc(sizeof(double) * (size_t)t->repeat);
    unsigned char *flush_buf = NULL;
    size_t flush_bytes = 0;
    if (!repeats) {
        fprintf(stderr, "scaletune-driver: cannot allocate the timing table\n");
        return -1;
    }
    if (t->flush_cache) {
        flush_bytes = scaletune_drv_flush_bytes();
        flush_buf = (unsigned char *)malloc(flush_bytes);
        if (!flush_buf) {
            fprintf(stderr, "scaletune-driver: cannot allocate a %zu-byte cache flush buffer\n", flush_bytes);
            return -1;
        }
    }
    for (long w = 0; w < t->warmup; w++) {
        call();
    }
    long number = t->number;
    if (t->min_repeat_ms > 0) {
        int64_t want_ns = (int64_t)t->min_repeat_ms * 1000000;
        for (;;) {
            int64_t elapsed = scaletune_drv_timed(call, number);
            if (elapsed * 8 >= want_ns) {
                /* Near the target: keep the fastest of three measurements, so
                   that one preemption cannot end the calibration early. */
                for (int again = 0; again < 2; again++) {
                    int64_t e = scaletune_drv_timed(call, number);
                    if (e < elapsed) elapsed = e;
                }
            }
            if (elapsed >= want_ns) {
                break;
            }
            if (elapsed * 8 >= want_ns || number > SCALETUNE_DRV_MAX_COUNT / 2) {
                double scaled = (double)number * (double)want_ns * 1.05 / (double)(elapsed > 0 ? elapsed : 1);
                number = scaled >= (double)SCALETUNE_DRV_MAX_COUNT ? SCALETUNE_DRV_MAX_COUNT : (long)scaled + 1;
                break;
            }
            number *= 2;
        }
    }
    for (long r = 0; r < t->repeat; r++) {
        if (flush_buf) {
            scaletune_drv_flush(flush_buf, flush_bytes, r);
        }
        repeats[r] = (double)scaletune_drv_timed(call, number) * 1e-9 / (double)number;
    }
    printf("scaletune-timing: number=%ld repeat=%ld\n", number, t->repeat);
    for (long r = 0; r < t->repeat; r++) {
        printf("scaletune-timing: repeat_s=%.9e\n", repeats[r]);
    }
    printf("scaletune-timing: end\n");
    fflush(stdout);
    free(flush_buf);
    free(repeats);
    return 0;
}
