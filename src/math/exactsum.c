/* SPDX-License-Identifier: Apache-2.0 */
/*
** exactsum.c — exact running sums (expansions of XS_N doubles) for the
** window aggregates; see exactsum.h. Built with -ffp-contract=off.
*/
#include "math/exactsum.h"

#include <math.h>

#include "math/arraymath.h"
#include "math/kernels.h"

/* s + e = a + b exactly (Knuth's TwoSum: any order of magnitudes). */
static void two_sum(double a, double b, double *s, double *e) {
  double t = a + b, bb = t - a;
  *e = (a - (t - bb)) + (b - bb);
  *s = t;
}

/* Dekker's split: a = hi + lo, each with at most 26 significant bits. */
static void split(double a, double *hi, double *lo) {
  double c = 134217729.0 * a; /* 2^27 + 1 */
  *hi = c - (c - a);
  *lo = a - *hi;
}

/* p + e = a * b exactly (Dekker's TwoProduct, no FMA). e is 0 when the
** product is exact and is not finite only where the split overflows
** (|a| or |b| above ~2^996), where the caller drops it. */
static void two_prod(double a, double b, double *p, double *e) {
  double ah, al, bh, bl;
  *p = a * b;
  split(a, &ah, &al);
  split(b, &bh, &bl);
  *e = ((ah * bh - *p) + ah * bl + al * bh) + al * bl;
}

/* s + e = a + b exactly, given |a| >= |b| or a == 0 (Dekker's FastTwoSum). */
static void fast_two_sum(double a, double b, double *s, double *e) {
  double t = a + b;
  *e = b - (t - a);
  *s = t;
}

/* Shewchuk's Compress: h (n components, increasing magnitude,
** nonoverlapping) rewritten in place as few components as the sum needs
** (largest last); returns how many. */
static int compress(double *h, int n) {
  double q, t, g[XS_N + 1];
  int i, bottom = n - 1, top = 0;
  q = h[n - 1];
  for (i = n - 2; i >= 0; i--) {
    double e;
    fast_two_sum(q, h[i], &t, &e);
    if (e != 0) {
      g[bottom--] = t;
      q = e;
    } else {
      q = t;
    }
  }
  for (i = bottom + 1; i < n; i++) {
    double e;
    fast_two_sum(g[i], q, &t, &e);
    if (e != 0) h[top++] = e;
    q = t;
  }
  h[top] = q;
  return q == 0 && top == 0 ? 0 : top + 1;
}

void xs_add(double *v, double p) {
  double h[XS_N + 1], q = p, e;
  int i, m;
  if (v[1] == 0) { /* one component (zeros only ever trail): the usual case */
    two_sum(v[0], p, &v[0], &v[1]);
    if (!isfinite(v[0])) v[1] = 0; /* inf/NaN: the sum is what IEEE says */
    return;
  }
  /* Grow-Expansion: smallest component first; h[] comes out in increasing
  ** magnitude, nonoverlapping, with q the largest */
  for (i = XS_N - 1; i >= 0; i--) {
    two_sum(q, v[i], &q, &e);
    h[XS_N - 1 - i] = e;
  }
  h[XS_N] = q;
  if (!isfinite(q)) {
    v[0] = q;
    for (i = 1; i < XS_N; i++) v[i] = 0;
    return;
  }
  m = compress(h, XS_N + 1);
  if (m > XS_N) { /* a fifth piece: round the smallest two together */
    h[1] += h[0];
    for (i = 0; i < XS_N; i++) h[i] = h[i + 1];
    m = XS_N;
  }
  for (i = 0; i < XS_N; i++) v[i] = i < m ? h[m - 1 - i] : 0;
}

void xs_add_product(double *v, double w, double x) {
  double p, e;
  if (w == 1 || w == -1) {
    xs_add(v, w * x);
    return;
  }
  two_prod(w, x, &p, &e);
  xs_add(v, p);
  if (e != 0 && isfinite(e) && isfinite(p)) xs_add(v, e);
}

/* v as a double-double hi + lo (relative error ~2^-106). */
static void to_dd(const double *v, double *hi, double *lo) {
  double h, l, t = 0;
  int i;
  for (i = XS_N - 1; i >= 2; i--) t += v[i];
  two_sum(v[0], v[1], &h, &l);
  l += t;
  *hi = h + l; /* FastTwoSum: |h| >= |l| */
  *lo = l - (*hi - h);
}

double xs_value(const double *v) {
  double hi, lo;
  if (v[1] == 0) return v[0];
  to_dd(v, &hi, &lo);
  return hi;
}

double xs_div(const double *v, const double *d) {
  double sh, sl, dh, dl, q, p, e, r;
  if (v[1] == 0 && d[1] == 0) return v[0] / d[0]; /* one rounding */
  to_dd(v, &sh, &sl);
  to_dd(d, &dh, &dl);
  q = sh / dh;
  if (!isfinite(q) || fabs(q) > 0x1p990 || fabs(dh) > 0x1p990) return q;
  two_prod(q, dh, &p, &e);
  r = (((sh - p) - e) + sl) - q * dl; /* the remainder s - q * d, nearly exact */
  return q + r / dh;
}

/* The fast path of a block: when every sum in it is a single double, every
** product w * x exact and every addition exact (float32 models with small
** integer weights, typically), the block is one vectorised pass; returns 0
** (having changed nothing) when any of that fails. prod_exact: every
** product is known to be exact (checked once per array by the caller). */
KN_HOT static int block_plain_hot(const double *restrict x, size_t n, double w, double *restrict c0,
                                  const double *restrict c1, int prod_exact) {
  size_t i;
  int ok = 1;
  if (prod_exact) {
    for (i = 0; i < n; i++) {
      double p = w * x[i], a = c0[i], t = a + p, bb = t - a, e = (a - (t - bb)) + (p - bb);
      ok &= (c1[i] == 0) & (e == 0) & (t - t == 0);
    }
  } else {
    for (i = 0; i < n; i++) {
      double p = w * x[i], a = c0[i], t = a + p, bb = t - a, e = (a - (t - bb)) + (p - bb);
      double pe, xh, xl, wh, wl, q = 134217729.0 * w, r = 134217729.0 * x[i];
      wh = q - (q - w); /* two_prod, spelled out so the loop vectorises */
      wl = w - wh;
      xh = r - (r - x[i]);
      xl = x[i] - xh;
      pe = ((wh * xh - p) + wh * xl + wl * xh) + wl * xl;
      ok &= (c1[i] == 0) & (e == 0) & (pe == 0) & (t - t == 0);
    }
  }
  if (!ok) return 0;
  for (i = 0; i < n; i++) c0[i] += w * x[i];
  return 1;
}

/* Is w * x exact for every x of type t? (|w| an integer below 2^29 and at
** most 24 significant bits in x: float32, float16, 8/16-bit ints,
** bool; or w = +-1.) */
static int products_exact(dt_type t, double w) {
  if (w == 1 || w == -1) return 1;
  if (!(fabs(w) <= 0x1p29) || w != floor(w)) return 0;
  switch (t) {
    case DT_BOOL:
    case DT_INT8:
    case DT_UINT8:
    case DT_INT16:
    case DT_UINT16:
    case DT_FLOAT16:
    case DT_FLOAT32:
    case DT_COMPLEX64: return 1;
    default: return 0;
  }
}

void xs_axpy(const npy_array *a, int fortran, double w, int exact, double *const *comp, unsigned char *scratch) {
  dt_type t = a->dtype.type;
  int cplx = dt_kind(t) == DT_KIND_COMPLEX;
  double *x = (double *)(void *)(scratch + (size_t)KN_BLOCK * 16); /* 2 * KN_BLOCK doubles */
  double v[XS_N];
  am_iter it;
  uint64_t pos;
  size_t m, i, n;
  int j, prod_exact = products_exact(t, w);
  am_iter_init(&it, a, fortran, 1);
  for (pos = 0; pos < a->numel; pos += m) {
    const unsigned char *p;
    uint64_t at = cplx ? 2 * pos : pos;
    m = a->numel - pos < KN_BLOCK ? (size_t)(a->numel - pos) : KN_BLOCK;
    p = am_iter_next(&it, m, scratch);
    if (cplx)
      kn_to_c128(t, p, x, m);
    else
      kn_to_f64(t, p, x, m);
    n = cplx ? 2 * m : m;
    if (block_plain_hot(x, n, w, comp[0] + at, comp[1] + at, prod_exact)) continue;
    for (i = 0; i < n; i++) {
      for (j = 0; j < XS_N; j++) v[j] = comp[j][at + i];
      if (exact)
        xs_add_product(v, w, x[i]);
      else
        xs_add(v, w * x[i]);
      for (j = 0; j < XS_N; j++) comp[j][at + i] = v[j];
    }
  }
}
