
#define SCALETUNE_DRV_MAX_COUNT 1000000000L
#define SCALETUNE_DRV_MAX_REPEAT 1000L
/* A repeat whose threads waited for a CPU longer than this share of it (per
   mille) was disturbed by other tasks and is timed again. */
#define SCALETUNE_DRV_MAX_WAIT_PERMILLE 20

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

/* Nanoseconds the threads of this process have spent runnable but waiting
   for a CPU (the run-queue delay, second field of each thread's
   /proc/self/task/TID/schedstat), summed over the threads; -1 where the
   system does not report it. The kernel runtime's worker threads live from
   the first parallel call on, so the same threads are summed before and
   after a repeat. */
static int64_t scaletune_drv_waited_ns(void) {
#if defined(__linux__)
    DIR *dir = opendir("/proc/self/task");
    if (!dir) {
        return -1;
    }
    int64_t total = 0;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') {
            continue;
        }
        char path[96];
        char buf[128];
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0) {
            continue;
        }
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0) {
            continue;
        }
        buf[n] = '\0';
        unsigned long long on_cpu, waited;
        if (sscanf(buf, "%llu %llu", &on_cpu, &waited) == 2) {
            total += (int64_t)waited;
            found = 1;
        }
    }
    closedir(dir);
    return found ? total : -1;
#else
    return -1;
#endif
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
    /* A repeat during which other tasks held the CPU is timed again, after a
       pause, at most `repeat` times in all; after that, disturbed repeats are
       kept and their wait is reported with them. */
    double *waited = (double *)malloc(sizeof(double) * (size_t)(t->repeat > 0 ? t->repeat : 1));
    if (!waited) {
        fprintf(stderr, "scaletune-driver: cannot allocate the timing table\n");
        return -1;
    }
    long kept = 0, discarded = 0, attempt = 0;
    int known = 1;
    while (kept < t->repeat) {
        if (flush_buf) {
            scaletune_drv_flush(flush_buf, flush_bytes, attempt);
        }
        attempt++;
        int64_t w0 = scaletune_drv_waited_ns();
        int64_t elapsed = scaletune_drv_timed(call, number);
        int64_t w1 = scaletune_drv_waited_ns();
        int64_t w = -1;
        if (w0 >= 0 && w1 >= 0) {
            w = w1 > w0 ? w1 - w0 : 0;
        } else {
            known = 0;
        }
        if (w >= 0 && w * 1000 > elapsed * SCALETUNE_DRV_MAX_WAIT_PERMILLE && discarded < t->repeat) {
            /* Give the CPU away before the first 8 retries, longer each time
               (1 ms, 2 ms, ... 128 ms; 255 ms in all): a burst of other work
               ends sooner, and the next repeat is less likely to meet it. */
            if (discarded < 8) {
                long ms = 1L << discarded;
                struct timespec pause = {ms / 1000, (ms % 1000) * 1000000L};
                nanosleep(&pause, NULL);
            }
            discarded++;
            continue;
        }
        repeats[kept] = (double)elapsed * 1e-9 / (double)number;
        waited[kept] = (double)(w > 0 ? w : 0) * 1e-9 / (double)number;
        kept++;
    }
    printf("scaletune-timing: number=%ld repeat=%ld\n", number, t->repeat);
    for (long r = 0; r < t->repeat; r++) {
        if (known) {
            printf("scaletune-timing: repeat_s=%.9e waited_s=%.9e\n", repeats[r], waited[r]);
        } else {
            printf("scaletune-timing: repeat_s=%.9e\n", repeats[r]);
        }
    }
    printf("scaletune-timing: discarded=%ld\n", discarded);
    printf("scaletune-timing: end\n");
    fflush(stdout);
    free(flush_buf);
    free(waited);
    free(repeats);
    return 0;
}
