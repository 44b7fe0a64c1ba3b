/* SPDX-License-Identifier: Apache-2.0 */
/*
** pool.c — the thread pool of pool.h.
**
** Workers are detached threads started on demand (never more than the
** threads set, minus the caller) that wait on a condition variable for
** jobs; they are never stopped, and the process's exit ends them. A job
** lives on its caller's stack: a function, a range split into parts, and
** counts of parts claimed and done, all under one mutex. The caller claims
** parts of its own job like any worker, then waits for the parts workers
** took. Workers keep their scratch on their own stack, so the pool
** allocates nothing.
**
** A loadable extension is unloaded (dlclose) when the last connection that
** loaded it closes, which would pull the code from under waiting workers.
** So before starting its first worker the pool pins the library that holds
** it (RTLD_NODELETE); where that cannot be done, it runs everything on the
** caller.
*/
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* dladdr, RTLD_NODELETE, sysconf(_SC_NPROCESSORS_ONLN) */
#endif
#include "math/pool.h"

#include <stdlib.h>

#include "math/arraymath.h"

#if !defined(AR_NO_THREADS) && (defined(__unix__) || defined(__unix) || defined(__APPLE__))
#include <unistd.h>
#if defined(_POSIX_THREADS) && _POSIX_THREADS > 0
#define POOL_PTHREADS 1
#endif
#endif

static void run_alone(uint64_t n, pool_fn fn, void *ctx, unsigned char *scratch) {
  if (n) fn(ctx, 0, n, scratch);
}

#if defined(POOL_PTHREADS)

#include <dlfcn.h>
#include <pthread.h>

/* Settings from the environment: a positive integer, else the default. */
static uint64_t env_number(const char *name, uint64_t dflt, uint64_t max) {
  const char *s = getenv(name);
  char *end;
  unsigned long long v;
  if (!s || !*s) return dflt;
  v = strtoull(s, &end, 10);
  if (*end || v == 0) return dflt;
  return v > max ? max : (uint64_t)v;
}

typedef struct pool_job {
  pool_fn fn;
  void *ctx;
  uint64_t n, part; /* elements, and elements per part (the last may be short) */
  int parts, claimed, done;
  struct pool_job *next; /* in the queue while parts are unclaimed */
} pool_job;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cv = PTHREAD_COND_INITIALIZER; /* a job was queued */
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER; /* a job's last part is done */
static pthread_once_t once = PTHREAD_ONCE_INIT;
/* Under mu: */
static pool_job *queue;
static int threads = 1, workers, pinned; /* pinned: 1 done, -1 impossible */
static uint64_t min_elements = POOL_MIN_DEFAULT;

/* fork() copies the mutex as it is and none of the workers: hold it across
** the fork, and let the child start from no workers. */
static void at_prepare(void) { pthread_mutex_lock(&mu); }
static void at_parent(void) { pthread_mutex_unlock(&mu); }
static void at_child(void) {
  workers = 0;
  queue = NULL;
  pthread_cond_init(&work_cv, NULL);
  pthread_cond_init(&done_cv, NULL);
  pthread_mutex_unlock(&mu);
}

static void init(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  uint64_t dflt = cores < 1 ? 1 : cores > POOL_MAX_DEFAULT ? POOL_MAX_DEFAULT : (uint64_t)cores;
  pthread_mutex_lock(&mu);
  threads = (int)env_number("AR_THREADS", dflt, POOL_MAX_THREADS);
  min_elements = env_number("AR_THREADS_MIN", POOL_MIN_DEFAULT, UINT64_MAX);
  pthread_mutex_unlock(&mu);
  pthread_atfork(at_prepare, at_parent, at_child);
}

/* Keep the library holding this code loaded for good (see the file comment).
** Code that dlopen cannot find by its name is in the program itself, which
** is never unloaded. */
static int pin_library(void) {
  Dl_info info;
  void *self;
  if (!dladdr((void *)(uintptr_t)pin_library, &info) || !info.dli_fname) return -1;
  self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  if (self) dlclose(self); /* RTLD_NODELETE stays */
  return 1;
}

/* Claim and run parts of job until none is left unclaimed; called and
** returns with mu held. */
static void work_on(pool_job *job, unsigned char *scratch) {
  while (job->claimed < job->parts) {
    int i = job->claimed++;
    uint64_t begin = (uint64_t)i * job->part;
    uint64_t end = i == job->parts - 1 ? job->n : begin + job->part;
    if (job->claimed == job->parts) { /* fully claimed: out of the queue */
      pool_job **p = &queue;
      while (*p != job) p = &(*p)->next;
      *p = job->next;
    }
    pthread_mutex_unlock(&mu);
    job->fn(job->ctx, begin, end, scratch);
    pthread_mutex_lock(&mu);
    if (++job->done == job->parts) pthread_cond_broadcast(&done_cv);
  }
}

static void *worker(void *arg) {
  /* The widest element type's alignment, for the scratch slots. */
  union {
    double d;
    int64_t i;
    unsigned char bytes[AM_SCRATCH];
  } scratch;
  (void)arg;
  pthread_mutex_lock(&mu);
  for (;;) {
    while (!queue) pthread_cond_wait(&work_cv, &mu);
    work_on(queue, scratch.bytes);
  }
  return NULL; /* not reached */
}

/* Start workers until `want` run (or starting one fails). Under mu. */
static void start_workers(int want) {
  pthread_attr_t attr;
  if (workers >= want) return;
  if (!pinned) pinned = pin_library();
  if (pinned < 0 || pthread_attr_init(&attr)) return;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, AM_SCRATCH + ((size_t)1 << 20));
  while (workers < want) {
    pthread_t t;
    if (pthread_create(&t, &attr, worker, NULL)) break;
    workers++;
  }
  pthread_attr_destroy(&attr);
}

void pool_run(uint64_t n, uint64_t align, pool_fn fn, void *ctx, unsigned char *scratch) {
  pool_job job;
  uint64_t units, per;
  int parts;
  /* Arrays below two aligned parts never split: no lock taken for them. */
  if (n < 2 * align) {
    run_alone(n, fn, ctx, scratch);
    return;
  }
  pthread_once(&once, init);
  pthread_mutex_lock(&mu);
  parts = threads;
  if (n < min_elements || parts < 2) {
    pthread_mutex_unlock(&mu);
    run_alone(n, fn, ctx, scratch);
    return;
  }
  start_workers(parts - 1);
  if (parts > workers + 1) parts = workers + 1;
  units = (n + align - 1) / align;
  if ((uint64_t)parts > units) parts = (int)units;
  per = (units + (uint64_t)parts - 1) / (uint64_t)parts;
  parts = (int)((units + per - 1) / per); /* every part non-empty */
  if (parts < 2) {
    pthread_mutex_unlock(&mu);
    run_alone(n, fn, ctx, scratch);
    return;
  }
  job.fn = fn;
  job.ctx = ctx;
  job.n = n;
  job.part = per * align;
  job.parts = parts;
  job.claimed = job.done = 0;
  job.next = queue; /* order does not matter: every queued job is claimed from */
  queue = &job;
  if (parts == 2)
    pthread_cond_signal(&work_cv);
  else
    pthread_cond_broadcast(&work_cv);
  work_on(&job, scratch);
  while (job.done < job.parts) pthread_cond_wait(&done_cv, &mu);
  pthread_mutex_unlock(&mu);
}

int pool_configure(int n, uint64_t min) {
  int before;
  pthread_once(&once, init);
  pthread_mutex_lock(&mu);
  before = threads;
  if (n > 0) threads = n > POOL_MAX_THREADS ? POOL_MAX_THREADS : n;
  if (min) min_elements = min;
  pthread_mutex_unlock(&mu);
  return before;
}

int pool_threads(void) { return pool_configure(0, 0); }

uint64_t pool_min_elements(void) {
  uint64_t v;
  pthread_once(&once, init);
  pthread_mutex_lock(&mu);
  v = min_elements;
  pthread_mutex_unlock(&mu);
  return v;
}

int pool_available(void) { return 1; }

#else /* no POSIX threads: everything runs on the caller */

void pool_run(uint64_t n, uint64_t align, pool_fn fn, void *ctx, unsigned char *scratch) {
  (void)align;
  run_alone(n, fn, ctx, scratch);
}

int pool_configure(int n, uint64_t min) {
  (void)n;
  (void)min;
  return 1;
}

int pool_threads(void) { return 1; }
uint64_t pool_min_elements(void) { return POOL_MIN_DEFAULT; }
int pool_available(void) { return 0; }

#endif
