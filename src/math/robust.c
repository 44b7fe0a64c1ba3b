/* SPDX-License-Identifier: Apache-2.0 */
/*
** robust.c — Krum/MultiKrum scores, FedAvg in Flower's own arithmetic,
** Bulyan's per-coordinate rule, and a portable Gaussian generator (see
** robust.h). Built like kernels.c: -O3 -ffp-contract=off, so no FMA
** contraction changes a result bit from one CPU to another.
*/
#include "math/robust.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "math/kernels.h"

/* The hot loops get an AVX2 clone where kernels.c has them (KN_HOT: same
** operations, same order, the same bits). */

/* --- Krum ------------------------------------------------------------------ */

/* sum (a - b)^2 in 8 interleaved lanes (no reassociation needed to vectorize). */
KN_HOT static double sqdiff(const double *a, const double *b, size_t m) {
  double acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s = 0;
  size_t k, l;
  for (k = 0; k + 8 <= m; k += 8) {
    for (l = 0; l < 8; l++) {
      double d = a[k + l] - b[k + l];
      acc[l] += d * d;
    }
  }
  for (; k < m; k++) {
    double d = a[k] - b[k];
    s += d * d;
  }
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7])) + s;
}

void rb_pair_sqdist(const double *cols, size_t n, size_t stride, size_t m, double *dist) {
  size_t i, j;
  for (i = 0; i < n; i++)
    for (j = i + 1; j < n; j++) dist[i * n + j] += sqdiff(cols + i * stride, cols + j * stride, m);
}

/* Ascending, NaN last (np.sort's order). */
static int cmp_nan_last(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  if (isnan(a)) return isnan(b) ? 0 : 1;
  if (isnan(b)) return -1;
  return a < b ? -1 : a > b;
}

void rb_krum_scores(const double *dist, size_t n, size_t f, double *scores, double *tmp) {
  /* Flower: num_closest = max(1, n - f - 2), argsort(distances)[1:num_closest + 1]
  ** (position 0 being the row itself, at distance 0). */
  size_t closest = n > f + 3 ? n - f - 2 : 1, i, j, c;
  if (closest > n - 1) closest = n - 1;
  for (i = 0; i < n; i++) {
    double s = 0;
    for (j = 0, c = 0; j < n; j++)
      if (j != i) tmp[c++] = i < j ? dist[i * n + j] : dist[j * n + i];
    qsort(tmp, c, sizeof(double), cmp_nan_last);
    for (j = 0; j < closest; j++) s += tmp[j];
    scores[i] = s;
  }
}

void rb_argsort(const double *v, size_t n, size_t *order) {
  size_t i, j;
  /* Insertion sort: stable, and rounds have tens to thousands of rows. */
  for (i = 0; i < n; i++) {
    size_t x = i;
    for (j = i; j > 0 && cmp_nan_last(&v[order[j - 1]], &v[x]) > 0; j--) order[j] = order[j - 1];
    order[j] = x;
  }
}

/* --- FedAvg in Flower's arithmetic ------------------------------------------ */

dt_type rb_fedavg_type(dt_type t) {
  char k = dt_kind(t);
  return k == DT_KIND_FLOAT || k == DT_KIND_COMPLEX ? t : DT_FLOAT64;
}

KN_HOT static void axpy_f32(const void *x, float w, void *acc, size_t m, int first) {
  const unsigned char *px = x;
  unsigned char *pa = acc;
  size_t i;
  for (i = 0; i < m; i++) {
    float v, a;
    memcpy(&v, px + 4 * i, 4);
    v = v * w;
    if (!first) {
      memcpy(&a, pa + 4 * i, 4);
      v = a + v;
    }
    memcpy(pa + 4 * i, &v, 4);
  }
}

KN_HOT static void axpy_f64(const void *x, double w, void *acc, size_t m, int first) {
  const unsigned char *px = x;
  unsigned char *pa = acc;
  size_t i;
  for (i = 0; i < m; i++) {
    double v, a;
    memcpy(&v, px + 8 * i, 8);
    v = v * w;
    if (!first) {
      memcpy(&a, pa + 8 * i, 8);
      v = a + v;
    }
    memcpy(pa + 8 * i, &v, 8);
  }
}

/* Pairs of (re, im): acc = first ? p : acc + p, in float or double. */
static void add_pairs(const double *p, void *acc, size_t m, int first, int single) {
  unsigned char *pa = acc;
  size_t i;
  if (single) {
    const float *q = (const float *)(const void *)p;
    for (i = 0; i < 2 * m; i++) {
      float a, v = q[i];
      if (!first) {
        memcpy(&a, pa + 4 * i, 4);
        v = a + v;
      }
      memcpy(pa + 4 * i, &v, 4);
    }
    return;
  }
  for (i = 0; i < 2 * m; i++) {
    double a, v = p[i];
    if (!first) {
      memcpy(&a, pa + 8 * i, 8);
      v = a + v;
    }
    memcpy(pa + 8 * i, &v, 8);
  }
}

void rb_fedavg_step(dt_type t, const void *x, double w, void *acc, size_t m, int first, double *tmp) {
  size_t i;
  switch (t) {
    case DT_FLOAT32: axpy_f32(x, (float)w, acc, m, first); return;
    case DT_FLOAT64: axpy_f64(x, w, acc, m, first); return;
    case DT_FLOAT16: {
      /* NumPy's half arithmetic: each operation in float, rounded to half. */
      float *f = (float *)(void *)tmp, wh = (float)dt_half_to_double(dt_double_to_half(w));
      unsigned char *pa = acc;
      kn_to_f32(DT_FLOAT16, x, f, m);
      for (i = 0; i < m; i++) {
        uint16_t h = dt_double_to_half((double)(f[i] * wh));
        if (!first) {
          uint16_t a;
          memcpy(&a, pa + 2 * i, 2);
          h = dt_double_to_half((double)((float)dt_half_to_double(a) + (float)dt_half_to_double(h)));
        }
        memcpy(pa + 2 * i, &h, 2);
      }
      return;
    }
    case DT_COMPLEX64: /* x * complex(w, 0) by the full formula, as NumPy */
      kn_scale_c64(x, (float)w, tmp, m);
      add_pairs(tmp, acc, m, first, 1);
      return;
    case DT_COMPLEX128:
      kn_scale_c128(x, w, tmp, m);
      add_pairs(tmp, acc, m, first, 0);
      return;
    default: /* bool and integers: float64 products */
      kn_to_f64(t, x, tmp, m);
      axpy_f64(tmp, w, acc, m, first);
      return;
  }
}

/* --- Bulyan -------------------------------------------------------------- */

static double round_to(dt_type t, double v) {
  if (t == DT_FLOAT32) return (double)(float)v;
  if (t == DT_FLOAT16) return dt_half_to_double(dt_double_to_half(v));
  return v;
}

double rb_bulyan_coord(double *v, size_t theta, size_t beta, dt_type t) {
  size_t i, j, lo, hi, h = theta / 2;
  double med, sum = 0;
  for (i = 0; i < theta; i++)
    if (isnan(v[i])) return v[i];
  for (i = 1; i < theta; i++) { /* theta is small: insertion sort */
    double x = v[i];
    for (j = i; j > 0 && v[j - 1] > x; j--) v[j] = v[j - 1];
    v[j] = x;
  }
  med = round_to(t, theta % 2 ? v[h] : (v[h - 1] + v[h]) / 2);
  /* The beta values closest to the median are a run of the sorted values:
  ** grow it from the median outwards, the nearer side first (the lower on
  ** a tie; Flower's np.argpartition leaves ties unspecified). */
  for (lo = 0; lo < theta && v[lo] < med; lo++) {}
  hi = lo;
  for (i = 0; i < beta; i++) {
    if (lo > 0 && (hi == theta || med - v[lo - 1] <= v[hi] - med))
      lo--;
    else
      hi++;
  }
  for (i = lo; i < hi; i++) sum += v[i];
  return sum / (double)beta;
}

/* --- Gaussian noise ------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void rb_rng_seed(rb_rng *r, uint64_t seed) {
  int i;
  for (i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
  r->has_spare = 0;
  r->spare = 0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rb_rng_next(rb_rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

/* fdlibm's __ieee754_log (Sun Microsystems, 1993): argument reduction to
** [sqrt(2)/2, sqrt(2)) and a minimax polynomial in s = f / (2 + f). */
double rb_log(double x) {
  static const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10,
                      Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01, Lg3 = 2.857142874366239149e-01,
                      Lg4 = 2.222219843214978396e-01, Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                      Lg7 = 1.479819860511658591e-01;
  int e;
  double m = frexp(x, &e), f, s, z, w, r, hfsq, dk;
  if (m < 0.70710678118654752440) {
    m *= 2;
    e--;
  }
  f = m - 1;
  dk = (double)e;
  s = f / (2.0 + f);
  z = s * s;
  w = z * z;
  r = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7))) + w * (Lg2 + w * (Lg4 + w * Lg6));
  hfsq = 0.5 * f * f;
  return dk * ln2_hi - ((hfsq - (s * (hfsq + r) + dk * ln2_lo)) - f);
}

static double uniform(rb_rng *r) { return (double)(rb_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

double rb_rng_normal(rb_rng *r) {
  double u, v, s, f;
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  do {
    u = 2.0 * uniform(r) - 1.0;
    v = 2.0 * uniform(r) - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  f = sqrt(-2.0 * rb_log(s) / s); /* sqrt is correctly rounded by IEEE 754 */
  r->spare = v * f;
  r->has_spare = 1;
  return u * f;
}

void rb_add_noise(dt_type t, void *x, size_t m, double stddev, rb_rng *r) {
  unsigned char *p = x;
  size_t i;
  if (dt_kind(t) != DT_KIND_FLOAT && dt_kind(t) != DT_KIND_COMPLEX) return; /* no draws for integers */
  for (i = 0; i < m; i++) {
    double z = stddev * rb_rng_normal(r);
    switch (t) {
      case DT_FLOAT32:
      case DT_COMPLEX64: {
        float v, nz = (float)z;
        size_t at = (t == DT_COMPLEX64 ? 8 : 4) * i;
        memcpy(&v, p + at, 4);
        v = v + nz;
        memcpy(p + at, &v, 4);
        break;
      }
      case DT_FLOAT64:
      case DT_COMPLEX128: {
        double v;
        size_t at = (t == DT_COMPLEX128 ? 16 : 8) * i;
        memcpy(&v, p + at, 8);
        v = v + z;
        memcpy(p + at, &v, 8);
        break;
      }
      case DT_FLOAT16: {
        uint16_t h;
        float nz = (float)dt_half_to_double(dt_double_to_half(z));
        memcpy(&h, p + 2 * i, 2);
        h = dt_double_to_half((double)((float)dt_half_to_double(h) + nz));
        memcpy(p + 2 * i, &h, 2);
        break;
      }
      default: return;
    }
  }
}
