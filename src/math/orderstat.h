/* SPDX-License-Identifier: Apache-2.0 */
/*
** orderstat.h — order statistics across rows, element by element: the
** median (np.median(stack, axis=0), FedMedian) and the trimmed mean
** (FedTrimmedAvg's trim_mean) of n rows of the same array. No SQLite here.
**
** Each element's n values are selected, not sorted one element at a time:
** a block of elements is read from every row into a tile, each value made
** an integer key in the same order (floats by their bits: -0.0 below 0.0,
** NaN above +inf), and a sorting network, pruned to the ranks asked for,
** runs on 16 (or 8) elements at once with SIMD min and max. Tiles are shared
** among the pool's threads; every element's answer depends on its own
** values only, so the bits never depend on the threads or the CPU. Above
** OS_NET_MAX rows a network grows too large and each element is selected on
** its own (quickselect on the keys).
**
** Results are NumPy's bits. The median is computed as np.median computes
** it: the mean of the middle value(s) in the array's type (float16 in
** float32, then rounded; float64 for integer and bool arrays), a reduction
** NumPy starts from 0.0, so ((0 + lo) + hi) / 2, and a zero comes out as
** 0.0. Where an element holds a NaN, the answer is the NaN that NumPy's
** partition leaves last (NumPy 2 copies its bits; NumPy 1 wrote a plain
** NaN): when the element's NaNs differ in their bits, npselect.c reproduces
** that partition for the element. The trimmed mean sums the kept values in
** double (in rank order) and rounds once.
*/
#ifndef AR_ORDERSTAT_H
#define AR_ORDERSTAT_H

#include <stddef.h>
#include <stdint.h>

#include "codec/dtype.h"

enum { OS_MEDIAN, OS_TRIMMED };

/* Rows up to which a sorting network is used. */
#define OS_NET_MAX 2048

typedef struct os_plan os_plan;

/* A plan for n rows (n >= 1): the median, or the mean of the ranks
** [cut, n - cut) (n > 2 * cut). NULL when out of memory. */
os_plan *os_plan_new(size_t n, int op, size_t cut);
void os_plan_free(os_plan *p);

/* dst (numel elements of type out, native byte order) = the order statistic
** of rows[r][e] over r < n for each e < numel; rows[r] holds numel elements
** of real type t in native byte order. out is t for floating types and
** float64 otherwise (the caller's result type). CODEC_OK or CODEC_NOMEM. */
int os_run(const os_plan *p, dt_type t, const unsigned char *const *rows, uint64_t numel, dt_type out, void *dst);

/* Comparators of the plan's network (0 without one), for tests. */
size_t os_plan_comparators(const os_plan *p);

#endif
