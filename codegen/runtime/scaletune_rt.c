//! scaletune runtime: the thread pool behind parallel loops (`scaletune_parallel_for`).
//
// Linked into every kernel object that contains a parallel loop (see
// codegen/src/llvm/runtime.rs). The kernel calls
//
//     void scaletune_parallel_for(void (*fn)(void *ctx, int64_t begin, int64_t end),
//                                 void *ctx, int64_t n);
//
// which runs `fn` over [0, n) split into contiguous chunks, one per thread:
// chunk c of k covers [c*q + min(c, r), (c+1)*q + min(c+1, r)) with q = n / k
// and r = n % k (static chunking, no work stealing). The calling thread runs
// chunk 0 itself and returns once every chunk is done.
//
// - The pool is created on the first call with more than one iteration:
//   SCALETUNE_NUM_THREADS threads if that variable holds a positive integer,
//   else the number of CPUs the process may run on (its affinity mask, so a
//   driver pinned to one core gets one thread; the online CPUs if the mask
//   cannot be read), at most 256, the caller included. A call
//   uses min(threads, n) chunks. Workers sleep on a condition variable after
//   a short spin; they block every signal.
// - If a worker cannot be created the pool keeps the workers it has (none:
//   every call runs serially).
// - A call made while the pool is running another call (from inside a chunk,
//   or concurrently from another thread) runs serially in the calling thread.
// - Symbols: the merged kernel object makes `scaletune_parallel_for` a local
//   symbol, so every kernel object carries its own copy of the code and two
//   kernels linked into one program never clash. The pool state is one weak,
//   hidden, versioned data object (`scaletune_rt_pool_v1`), so all copies in
//   one program share a single pool. `scaletune_rt_chunk_hook_v1`, if set,
//   is called at the start of every chunk (tests record the running thread).
//
// Results do not depend on the thread count: the schedule space only
// parallelizes loops whose iterations are independent, and the kernel keeps
// scratch buffers private to each chunk.

#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define RT_MAX_THREADS 256
#define RT_SPIN 4096
#define RT_MIN_STACK (8u << 20)

typedef void (*scaletune_body_fn)(void *ctx, int64_t begin, int64_t end);

struct scaletune_rt_pool_v1 {
  pthread_once_t once;
  pthread_mutex_t call;  // held by the caller whose job the pool is running
  pthread_mutex_t lock;  // protects the sleep/wake handshakes
  pthread_cond_t wake;   // workers wait here for a new generation
  pthread_cond_t done;   // the caller waits here for pending == 0
  int n_threads;         // workers + the caller
  int sleepers;          // workers blocked on `wake`
  uint64_t generation;   // bumped once per job (atomic)
  int64_t pending;       // workers that have not finished the job (atomic)
  scaletune_body_fn fn;  // the job: written before `generation` is bumped
  void *ctx;
  int64_t n;
  int64_t n_chunks;
};

__attribute__((weak, visibility("hidden"))) struct scaletune_rt_pool_v1 scaletune_rt_pool_v1 = {
    PTHREAD_ONCE_INIT, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
    PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0};

__attribute__((weak, visibility("hidden"))) void (*scaletune_rt_chunk_hook_v1)(int64_t chunk, int64_t begin,
                                                                                int64_t end) = 0;

void scaletune_parallel_for(scaletune_body_fn fn, void *ctx, int64_t n);

static void rt_run_chunk(struct scaletune_rt_pool_v1 *p, int64_t c) {
  int64_t q = p->n / p->n_chunks, r = p->n % p->n_chunks;
  int64_t begin = c * q + (c < r ? c : r);
  int64_t end = begin + q + (c < r ? 1 : 0);
  void (*hook)(int64_t, int64_t, int64_t) = __atomic_load_n(&scaletune_rt_chunk_hook_v1, __ATOMIC_RELAXED);
  if (hook) hook(c, begin, end);
  p->fn(p->ctx, begin, end);
}

static void *rt_worker(void *arg) {
  struct scaletune_rt_pool_v1 *p = &scaletune_rt_pool_v1;
  int64_t id = (int64_t)(intptr_t)arg;
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = seen;
    for (int spin = 0; spin < RT_SPIN && g == seen; spin++) g = __atomic_load_n(&p->generation, __ATOMIC_ACQUIRE);
    if (g == seen) {
      pthread_mutex_lock(&p->lock);
      while ((g = __atomic_load_n(&p->generation, __ATOMIC_ACQUIRE)) == seen) {
        p->sleepers++;
        pthread_cond_wait(&p->wake, &p->lock);
        p->sleepers--;
      }
      pthread_mutex_unlock(&p->lock);
    }
    seen = g;
    // Every worker acknowledges every job, so the caller never rewrites the
    // job while a worker may still read it.
    if (id < p->n_chunks) rt_run_chunk(p, id);
    if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL) == 0) {
      pthread_mutex_lock(&p->lock);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->lock);
    }
  }
  return 0;
}

static long rt_thread_count(void) {
  const char *env = getenv("SCALETUNE_NUM_THREADS");
  long t = 0;
  if (env && *env) {
    char *end = 0;
    long v = strtol(env, &end, 10);
    if (end && *end == '\0' && v > 0) t = v;
  }
#ifdef CPU_COUNT
  if (t <= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) t = CPU_COUNT(&set);
  }
#endif
  if (t <= 0) t = sysconf(_SC_NPROCESSORS_ONLN);
  if (t < 1) t = 1;
  if (t > RT_MAX_THREADS) t = RT_MAX_THREADS;
  return t;
}

static void rt_init(void) {
  struct scaletune_rt_pool_v1 *p = &scaletune_rt_pool_v1;
  long wanted = rt_thread_count();
  int created = 0;
  pthread_attr_t attr;
  if (wanted > 1 && pthread_attr_init(&attr) == 0) {
    size_t stack = 0;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_attr_getstacksize(&attr, &stack) == 0 && stack < RT_MIN_STACK)
      pthread_attr_setstacksize(&attr, RT_MIN_STACK);
    sigset_t all, old;
    sigfillset(&all);
    int masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
    for (long w = 1; w < wanted; w++) {
      pthread_t tid;
      if (pthread_create(&tid, &attr, rt_worker, (void *)(intptr_t)w) != 0) break;
      created++;
    }
    if (masked) pthread_sigmask(SIG_SETMASK, &old, 0);
    pthread_attr_destroy(&attr);
  }
  p->n_threads = created + 1;
}

__attribute__((weak, visibility("hidden"))) void scaletune_parallel_for(scaletune_body_fn fn, void *ctx, int64_t n) {
  struct scaletune_rt_pool_v1 *p = &scaletune_rt_pool_v1;
  if (n <= 0) return;
  if (n == 1) {
    fn(ctx, 0, 1);
    return;
  }
  pthread_once(&p->once, rt_init);
  if (p->n_threads <= 1 || pthread_mutex_trylock(&p->call) != 0) {
    fn(ctx, 0, n);  // no workers, a nested call, or the pool is busy
    return;
  }
  int64_t workers = p->n_threads - 1;
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  p->n_chunks = n < p->n_threads ? n : p->n_threads;
  __atomic_store_n(&p->pending, workers, __ATOMIC_RELAXED);
  pthread_mutex_lock(&p->lock);
  __atomic_store_n(&p->generation, __atomic_load_n(&p->generation, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
  if (p->sleepers > 0) pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->lock);
  rt_run_chunk(p, 0);
  int done = 0;
  for (int spin = 0; spin < RT_SPIN && !done; spin++) done = __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) == 0;
  if (!done) {
    pthread_mutex_lock(&p->lock);
    while (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) != 0) pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
  }
  pthread_mutex_unlock(&p->call);
}
