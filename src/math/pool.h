/* SPDX-License-Identifier: Apache-2.0 */
/*
** pool.h — a small process-wide thread pool for elementwise work on large
** arrays: pool_run splits a range of elements into contiguous parts and runs
** them on the caller and on worker threads at once. Accumulating a model is
** memory-bound, and one core does not saturate the memory bus; a second one
** nearly doubles the speed.
**
** Only elementwise work may be split: each element's result depends on that
** element alone, so any split gives the very bits one thread gives. (Sums
** are not split: their pairwise blocking would change.)
**
** Settings (process-wide): the number of threads (the caller included) and
** the fewest elements an array needs before it is split. At first use they
** are read from the environment: AR_THREADS (default: the cores online, at
** most POOL_MAX_DEFAULT) and AR_THREADS_MIN (default POOL_MIN_DEFAULT).
** Without POSIX threads (say, a mingw build) everything runs on the caller.
*/
#ifndef AR_POOL_H
#define AR_POOL_H

#include <stddef.h>
#include <stdint.h>

#define POOL_MAX_THREADS 64
#define POOL_MAX_DEFAULT 4
#define POOL_MIN_DEFAULT ((uint64_t)1 << 18) /* 256 Ki elements: 1 MiB of float32 */

/* Work on elements [begin, end) with scratch (AM_SCRATCH bytes, the caller's
** own or a worker's). */
typedef void (*pool_fn)(void *ctx, uint64_t begin, uint64_t end, unsigned char *scratch);

/* fn over [0, n), split into parts whose bounds are multiples of `align`
** when n is large enough and more than one thread is set; otherwise one
** call fn(ctx, 0, n, scratch). Returns when every part is done. Safe to call
** from many threads at once: each caller also works through its own parts,
** so it never waits on workers busy with someone else's. */
void pool_run(uint64_t n, uint64_t align, pool_fn fn, void *ctx, unsigned char *scratch);

/* Set the number of threads (1 to POOL_MAX_THREADS; n <= 0 keeps it) and the
** minimum elements per array (min == 0 keeps it); returns the number of
** threads set before. */
int pool_configure(int n, uint64_t min);
/* The current settings. */
int pool_threads(void);
uint64_t pool_min_elements(void);
/* Can this build run threads at all? */
int pool_available(void);

#endif
