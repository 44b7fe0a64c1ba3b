/* SPDX-License-Identifier: Apache-2.0 */
/*
** npselect.h — np.partition's order, reproduced: where NumPy's introselect
** leaves each value of a 1-d array for a list of kth positions. A median or
** a partition point is the same number whatever selection computes it, but
** not always the same bits: -0.0 and 0.0 compare equal, and so do NaNs of
** different signs and payloads, so which of them np.median reads at a
** middle position (or at the last one, its NaN check) depends on the swaps
** the algorithm made. orderstat.c runs this only for the elements where that
** can matter (a zero or a NaN in the answer, and the column holding more
** than one kind of it); every other element's answer has one possible bit
** pattern.
**
** The order is NumPy's introselect (numpy/_core/src/npysort/selection.cpp,
** the same since NumPy 1.10 through 2.x when more than one kth is asked, as
** np.median and FedTrimmedAvg's trim_mean always ask): quickselect with a
** median-of-three pivot, partition points kept on a stack (at most 50)
** between kth values, an O(n * kth) selection when kth is within 3 of the
** range's start, a scan for the largest (NaN last) when kth is the last
** position (float32 and float64 only), and median-of-medians-of-5 pivots once 2 * floor(log2(n))
** partitions have not found kth. Values compare as NumPy's floating types
** do: a < b, or b is NaN and a is not. No SQLite here.
*/
#ifndef AR_NPSELECT_H
#define AR_NPSELECT_H

#include <stddef.h>
#include <stdint.h>

/* A value (any float type, exactly as a double) and the row it came from. */
typedef struct nps_item {
  double v;
  uint32_t row;
} nps_item;

/* Reorder v[0..n) as np.partition(v, kth) does, kth holding nkth positions
** in ascending order (NumPy sorts them first; negative ones already made
** positive). n >= 1, every kth < n. half: the values are float16, for which
** NumPy skips its scan for the largest (its float16 type is an integer to
** the template that decides it). */
void nps_partition(nps_item *v, size_t n, const size_t *kth, size_t nkth, int half);

#endif
