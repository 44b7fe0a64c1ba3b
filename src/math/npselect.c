/* SPDX-License-Identifier: Apache-2.0 */
/*
** npselect.c — np.partition's order (see npselect.h). Every comparison and
** swap below is one NumPy makes, in its order: the point is not a fast
** selection (orderstat.c has that) but the same final arrangement, so the
** helpers mirror NumPy's steps one for one.
*/
#include "math/npselect.h"

#include <stddef.h>

#define NPS_MAX_PIVOTS 50 /* NumPy's NPY_MAX_PIVOT_STACK */

/* NumPy's floating less-than: NaN orders after every number. */
static int less(double a, double b) { return a < b || (b != b && a == a); }

static void swap(nps_item *v, ptrdiff_t a, ptrdiff_t b) {
  nps_item t = v[a];
  v[a] = v[b];
  v[b] = t;
}

/* A partition point found while looking for kth: kept when it lies at or
** after kth (later kth values start from it), the last slot overwritten
** by kth itself when the stack is full. */
static void store_pivot(ptrdiff_t pivot, ptrdiff_t kth, ptrdiff_t *pivots, ptrdiff_t *npiv) {
  if (!pivots) return;
  if (pivot == kth && *npiv == NPS_MAX_PIVOTS)
    pivots[*npiv - 1] = pivot;
  else if (pivot >= kth && *npiv < NPS_MAX_PIVOTS)
    pivots[(*npiv)++] = pivot;
}

/* The median of v[low], v[mid], v[high] moves to low, the smallest of the
** three to low + 1 (a sentinel for the unguarded partition). */
static void median3_swap(nps_item *v, ptrdiff_t low, ptrdiff_t mid, ptrdiff_t high) {
  if (less(v[high].v, v[mid].v)) swap(v, high, mid);
  if (less(v[high].v, v[low].v)) swap(v, high, low);
  if (less(v[low].v, v[mid].v)) swap(v, low, mid);
  swap(v, mid, low + 1);
}

/* The position of the median of v[0..5), after NumPy's five exchanges. */
static ptrdiff_t median5(nps_item *v) {
  if (less(v[1].v, v[0].v)) swap(v, 1, 0);
  if (less(v[4].v, v[3].v)) swap(v, 4, 3);
  if (less(v[3].v, v[0].v)) swap(v, 3, 0);
  if (less(v[4].v, v[1].v)) swap(v, 4, 1);
  if (less(v[2].v, v[1].v)) swap(v, 2, 1);
  if (less(v[3].v, v[2].v)) return less(v[3].v, v[1].v) ? 1 : 3;
  return 2;
}

static void unguarded_partition(nps_item *v, double pivot, ptrdiff_t *ll, ptrdiff_t *hh) {
  for (;;) {
    do (*ll)++;
    while (less(v[*ll].v, pivot));
    do (*hh)--;
    while (less(pivot, v[*hh].v));
    if (*hh < *ll) break;
    swap(v, *ll, *hh);
  }
}

/* Selection sort of the kth + 1 smallest: NumPy's choice when kth is near
** the range's start. */
static void dumb_select(nps_item *v, ptrdiff_t num, ptrdiff_t kth) {
  ptrdiff_t i, k;
  for (i = 0; i <= kth; i++) {
    ptrdiff_t minidx = i;
    double minval = v[i].v;
    for (k = i + 1; k < num; k++) {
      if (less(v[k].v, minval)) {
        minidx = k;
        minval = v[k].v;
      }
    }
    swap(v, i, minidx);
  }
}

static void introselect(nps_item *v, ptrdiff_t num, ptrdiff_t kth, ptrdiff_t *pivots, ptrdiff_t *npiv, int half);

/* The median of the medians of groups of 5, gathered at the front. */
static ptrdiff_t median_of_median5(nps_item *v, ptrdiff_t num, int half) {
  ptrdiff_t i, subleft, nmed = num / 5;
  for (i = 0, subleft = 0; i < nmed; i++, subleft += 5) swap(v, subleft + median5(v + subleft), i);
  if (nmed > 2) introselect(v, nmed, nmed / 2, NULL, NULL, half);
  return nmed / 2;
}

static int msb(ptrdiff_t n) {
  int depth = 0;
  size_t u = (size_t)n;
  while (u >>= 1) depth++;
  return depth;
}

static void introselect(nps_item *v, ptrdiff_t num, ptrdiff_t kth, ptrdiff_t *pivots, ptrdiff_t *npiv, int half) {
  ptrdiff_t low = 0, high = num - 1;
  int depth_limit;
  if (!npiv) pivots = NULL;
  while (pivots && *npiv > 0) {
    ptrdiff_t p = pivots[*npiv - 1];
    if (p > kth) {
      high = p - 1; /* an earlier partition point bounds kth's range */
      break;
    }
    if (p == kth) return; /* found already */
    low = p + 1;
    (*npiv)--;
  }
  if (kth - low < 3) {
    dumb_select(v + low, high - low + 1, kth - low);
    store_pivot(kth, kth, pivots, npiv);
    return;
  }
  if (kth == num - 1 && !half) { /* the largest, NaN last: the last of equal ones wins */
    ptrdiff_t k, maxidx = low;
    double maxval = v[low].v;
    for (k = low + 1; k < num; k++) {
      if (!less(v[k].v, maxval)) {
        maxidx = k;
        maxval = v[k].v;
      }
    }
    swap(v, kth, maxidx);
    return;
  }
  depth_limit = msb(num) * 2;
  while (low + 1 < high) {
    ptrdiff_t ll = low + 1, hh = high;
    if (depth_limit > 0 || hh - ll < 5) {
      median3_swap(v, low, low + (high - low) / 2, high);
    } else {
      swap(v, ll + median_of_median5(v + ll, hh - ll, half), low);
      ll--;
      hh++;
    }
    depth_limit--;
    unguarded_partition(v, v[low].v, &ll, &hh);
    swap(v, low, hh); /* the pivot to its place */
    if (hh != kth) store_pivot(hh, kth, pivots, npiv);
    if (hh >= kth) high = hh - 1;
    if (hh <= kth) low = ll;
  }
  if (high == low + 1 && less(v[high].v, v[low].v)) swap(v, high, low);
  store_pivot(kth, kth, pivots, npiv);
}

void nps_partition(nps_item *v, size_t n, const size_t *kth, size_t nkth, int half) {
  ptrdiff_t pivots[NPS_MAX_PIVOTS], npiv = 0;
  size_t i;
  for (i = 0; i < nkth; i++) introselect(v, (ptrdiff_t)n, (ptrdiff_t)kth[i], pivots, &npiv, half);
}
