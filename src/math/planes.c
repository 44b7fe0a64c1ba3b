/* SPDX-License-Identifier: Apache-2.0 */
/*
** planes.c — byte planes and the transforms against a base (planes.h).
**
** One loop per item width, specialised by the compiler for each mode and
** byte order (the always-inline bodies take them as constants), so the
** per-item work is a load, a subtraction or XOR, and `width` byte stores
** that vectorize. The hot entry points are cloned for AVX2 (KN_HOT).
*/
#include "math/planes.h"

#include <math.h>
#include <string.h>

#include "codec/dtype.h"
#include "math/kernels.h"

#if defined(__GNUC__)
#define BP_INLINE static inline __attribute__((always_inline))
#else
#define BP_INLINE static inline
#endif

/* --- items as unsigned integers ----------------------------------------------- */

BP_INLINE uint16_t bswap16(uint16_t v) { return (uint16_t)(v << 8 | v >> 8); }
BP_INLINE uint32_t bswap32(uint32_t v) {
#if defined(__GNUC__)
  return __builtin_bswap32(v);
#else
  return v << 24 | (v & 0xff00u) << 8 | (v >> 8 & 0xff00u) | v >> 24;
#endif
}
BP_INLINE uint64_t bswap64(uint64_t v) {
#if defined(__GNUC__)
  return __builtin_bswap64(v);
#else
  return (uint64_t)bswap32((uint32_t)v) << 32 | bswap32((uint32_t)(v >> 32));
#endif
}

/* Load / store one item of each width, swapping bytes when the stored order
** is not this machine's. */
#define BP_IO(W, T, SWAP)                                    \
  BP_INLINE T load##W(const unsigned char *p, int swap) {    \
    T v;                                                     \
    memcpy(&v, p, sizeof(v));                                \
    return swap ? SWAP(v) : v;                               \
  }                                                          \
  BP_INLINE void store##W(unsigned char *p, T v, int swap) { \
    if (swap) v = SWAP(v);                                   \
    memcpy(p, &v, sizeof(v));                                \
  }
BP_INLINE uint8_t nop8(uint8_t v) { return v; }
BP_IO(8, uint8_t, nop8)
BP_IO(16, uint16_t, bswap16)
BP_IO(32, uint32_t, bswap32)
BP_IO(64, uint64_t, bswap64)

/* zigzag of a W-bit difference and back. */
#define BP_ZIGZAG(W, T, S)                                                   \
  BP_INLINE T zz##W(T d) { return (T)((T)(d << 1) ^ (T)((S)d >> (W - 1))); } \
  BP_INLINE T unzz##W(T z) { return (T)((T)(z >> 1) ^ (T)(0 - (T)(z & 1))); }
BP_ZIGZAG(8, uint8_t, int8_t)
BP_ZIGZAG(16, uint16_t, int16_t)
BP_ZIGZAG(32, uint32_t, int32_t)
BP_ZIGZAG(64, uint64_t, int64_t)

/* --- split and merge, one body per width -------------------------------------- */

/* The planes of one width as restrict pointers (so the compiler needs no
** overlap checks between them, src, base and dst, and vectorizes), and
** byte k of a residual counted from the top. Planes past the width are
** never touched. */
#define BP_PLANES(Q, W)                                                                              \
  Q *restrict p0 = pl[0], *restrict p1 = W > 8 ? pl[1] : NULL, *restrict p2 = W > 16 ? pl[2] : NULL, \
              *restrict p3 = W > 16 ? pl[3] : NULL, *restrict p4 = W > 32 ? pl[4] : NULL,            \
              *restrict p5 = W > 32 ? pl[5] : NULL, *restrict p6 = W > 32 ? pl[6] : NULL,            \
              *restrict p7 = W > 32 ? pl[7] : NULL
#define BP_BYTE(r, W, k) ((unsigned char)((uint64_t)(r) >> ((W - 8 - 8 * (k)) & 63)))
#define BP_PUT(W, r, i)                   \
  do {                                    \
    p0[i] = BP_BYTE(r, W, 0);             \
    if (W > 8) p1[i] = BP_BYTE(r, W, 1);  \
    if (W > 16) p2[i] = BP_BYTE(r, W, 2); \
    if (W > 16) p3[i] = BP_BYTE(r, W, 3); \
    if (W > 32) p4[i] = BP_BYTE(r, W, 4); \
    if (W > 32) p5[i] = BP_BYTE(r, W, 5); \
    if (W > 32) p6[i] = BP_BYTE(r, W, 6); \
    if (W > 32) p7[i] = BP_BYTE(r, W, 7); \
  } while (0)
#define BP_GET(W, T, r, i)                                                                                         \
  do {                                                                                                             \
    r = (T)((uint64_t)p0[i] << ((W - 8) & 63));                                                                    \
    if (W > 8) r = (T)(r | (T)((uint64_t)p1[i] << ((W - 16) & 63)));                                               \
    if (W > 16) r = (T)(r | (T)((uint64_t)p2[i] << ((W - 24) & 63)));                                              \
    if (W > 16) r = (T)(r | (T)((uint64_t)p3[i] << ((W - 32) & 63)));                                              \
    if (W > 32)                                                                                                    \
      r = (T)(r | (T)((uint64_t)p4[i] << 24) | (T)((uint64_t)p5[i] << 16) | (T)((uint64_t)p6[i] << 8) | (T)p7[i]); \
  } while (0)

/* CALL (an expression of S and M) with the byte order and the mode as
** constants, one copy of the loop each. */
#define BP_SPECIALISE(CALL, swap, mode) \
  do {                                  \
    if (swap) {                         \
      enum { S = 1 };                   \
      BP_MODES(CALL, mode);             \
    } else {                            \
      enum { S = 0 };                   \
      BP_MODES(CALL, mode);             \
    }                                   \
  } while (0)
#define BP_MODES(CALL, mode)     \
  do {                           \
    if (mode == BP_PLAIN) {      \
      enum { M = BP_PLAIN };     \
      CALL;                      \
    } else if (mode == BP_XOR) { \
      enum { M = BP_XOR };       \
      CALL;                      \
    } else {                     \
      enum { M = BP_DIFF };      \
      CALL;                      \
    }                            \
  } while (0)

#define BP_BODIES(W, T)                                                                                            \
  BP_INLINE void split_body##W(const unsigned char *restrict src, const unsigned char *restrict base, uint64_t n,  \
                               int swap, int mode, unsigned char *const *pl) {                                     \
    BP_PLANES(unsigned char, W);                                                                                   \
    uint64_t i;                                                                                                    \
    for (i = 0; i < n; i++) {                                                                                      \
      T r = load##W(src + i * (W / 8), swap);                                                                      \
      if (mode != BP_PLAIN) {                                                                                      \
        T b = load##W(base + i * (W / 8), swap);                                                                   \
        r = mode == BP_XOR ? (T)(r ^ b) : zz##W((T)(r - b));                                                       \
      }                                                                                                            \
      BP_PUT(W, r, i);                                                                                             \
    }                                                                                                              \
  }                                                                                                                \
  BP_INLINE void merge_body##W(const unsigned char *const *pl, const unsigned char *restrict base, uint64_t n,     \
                               int swap, int mode, unsigned char *restrict dst) {                                  \
    BP_PLANES(const unsigned char, W);                                                                             \
    uint64_t i;                                                                                                    \
    for (i = 0; i < n; i++) {                                                                                      \
      T r;                                                                                                         \
      BP_GET(W, T, r, i);                                                                                          \
      if (mode != BP_PLAIN) {                                                                                      \
        T b = load##W(base + i * (W / 8), swap);                                                                   \
        r = mode == BP_XOR ? (T)(r ^ b) : (T)(unzz##W(r) + b);                                                     \
      }                                                                                                            \
      store##W(dst + i * (W / 8), r, swap);                                                                        \
    }                                                                                                              \
  }                                                                                                                \
  KN_HOT static void split##W(const unsigned char *src, const unsigned char *base, uint64_t n, int swap, int mode, \
                              unsigned char *const *pl) {                                                          \
    BP_SPECIALISE(split_body##W(src, base, n, S, M, pl), swap, mode);                                              \
  }                                                                                                                \
  KN_HOT static void merge##W(const unsigned char *const *pl, const unsigned char *base, uint64_t n, int swap,     \
                              int mode, unsigned char *dst) {                                                      \
    BP_SPECIALISE(merge_body##W(pl, base, n, S, M, dst), swap, mode);                                              \
  }
BP_BODIES(8, uint8_t)
BP_BODIES(16, uint16_t)
BP_BODIES(32, uint32_t)
BP_BODIES(64, uint64_t)

void bp_split(const unsigned char *src, const unsigned char *base, uint64_t n, int width, int big, int mode,
              unsigned char *const *planes) {
  int swap = big != dt_host_big();
  switch (width) {
    case 1: split8(src, base, n, 0, mode, planes); break;
    case 2: split16(src, base, n, swap, mode, planes); break;
    case 4: split32(src, base, n, swap, mode, planes); break;
    default: split64(src, base, n, swap, mode, planes); break;
  }
}

void bp_merge(const unsigned char *const *planes, const unsigned char *base, uint64_t n, int width, int big, int mode,
              unsigned char *dst) {
  int swap = big != dt_host_big();
  switch (width) {
    case 1: merge8(planes, base, n, 0, mode, dst); break;
    case 2: merge16(planes, base, n, swap, mode, dst); break;
    case 4: merge32(planes, base, n, swap, mode, dst); break;
    default: merge64(planes, base, n, swap, mode, dst); break;
  }
}

/* --- choosing a mode ------------------------------------------------------------ */

double bp_entropy(const unsigned char *p, uint64_t n) {
  uint64_t hist[256] = {0}, i;
  double bits = 0;
  int c;
  for (i = 0; i < n; i++) hist[p[i]]++;
  for (c = 0; c < 256; c++)
    if (hist[c]) bits -= (double)hist[c] * log2((double)hist[c] / (double)n);
  return bits / 8;
}

/* Items per sample window, and windows at most: 2^18 items seen. */
#define BP_WINDOW 4096
#define BP_WINDOWS 64

uint64_t bp_estimate(const unsigned char *src, const unsigned char *base, uint64_t n, int width, int big, int mode) {
  uint64_t hist[8][256], seen = 0, w, windows, step;
  unsigned char buf[8][BP_WINDOW];
  unsigned char *pl[8];
  double bytes = 0;
  int k, c;
  if (n == 0) return 0;
  memset(hist, 0, sizeof(hist));
  for (k = 0; k < width; k++) pl[k] = buf[k];
  windows = (n + BP_WINDOW - 1) / BP_WINDOW;
  step = windows > BP_WINDOWS ? windows / BP_WINDOWS : 1;
  for (w = 0; w < windows; w += step) {
    uint64_t at = w * BP_WINDOW, m = n - at < BP_WINDOW ? n - at : BP_WINDOW, i;
    bp_split(src + at * (uint64_t)width, base ? base + at * (uint64_t)width : NULL, m, width, big, mode, pl);
    for (k = 0; k < width; k++)
      for (i = 0; i < m; i++) hist[k][buf[k][i]]++;
    seen += m;
  }
  for (k = 0; k < width; k++) {
    double bits = 0;
    for (c = 0; c < 256; c++)
      if (hist[k][c]) bits -= (double)hist[k][c] * log2((double)hist[k][c] / (double)seen);
    bytes += bits / 8;
  }
  return (uint64_t)(bytes * ((double)n / (double)seen)) + 1;
}

/* --- lossy updates --------------------------------------------------------------- */

/* A 16-bit float of format fmt as a double (exact). */
BP_INLINE double u16_value(uint16_t h, int fmt) {
  if (fmt == BP_BFLOAT16) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof(f));
    return f;
  }
  return dt_half_to_double(h);
}

/* u rounded to nearest even in format fmt (u finite). */
static uint16_t u16_round(double u, int fmt) {
  if (fmt == BP_BFLOAT16) {
    float f = (float)u;
    uint32_t bits;
    memcpy(&bits, &f, sizeof(bits));
    return (uint16_t)((bits + 0x7fffu + (bits >> 16 & 1)) >> 16);
  }
  return dt_double_to_half(u);
}

/* Item i of a float32 / float64 array as a double, and y stored back. */
BP_INLINE double load_real(const unsigned char *p, uint64_t i, int width, int swap) {
  if (width == 4) {
    uint32_t v = load32(p + i * 4, swap);
    float f;
    memcpy(&f, &v, sizeof(f));
    return f;
  } else {
    uint64_t v = load64(p + i * 8, swap);
    double d;
    memcpy(&d, &v, sizeof(d));
    return d;
  }
}
BP_INLINE void store_real(unsigned char *p, uint64_t i, int width, int swap, double y) {
  if (width == 4) {
    float f = (float)y;
    uint32_t v;
    memcpy(&v, &f, sizeof(v));
    store32(p + i * 4, v, swap);
  } else {
    uint64_t v;
    memcpy(&v, &y, sizeof(v));
    store64(p + i * 8, v, swap);
  }
}

/* What merging gives for base item b and update h, in x's type. */
BP_INLINE double lossy_value(double b, uint16_t h, int width, int fmt) {
  double y = b + u16_value(h, fmt);
  return width == 4 ? (double)(float)y : y;
}

int bp_lossy_split(const unsigned char *src, const unsigned char *base, uint64_t n, int width, int big, int fmt,
                   unsigned char *const *planes, double *max_err) {
  int swap = big != dt_host_big();
  double worst = *max_err;
  uint64_t i;
  for (i = 0; i < n; i++) {
    double x = load_real(src, i, width, swap), b = load_real(base, i, width, swap), y, err;
    uint16_t h;
    if (!isfinite(x) || !isfinite(b) || !isfinite(x - b)) return 1;
    h = u16_round(x - b, fmt);
    y = lossy_value(b, h, width, fmt);
    if (!isfinite(y)) return 1; /* the update rounded to infinity */
    err = fabs(y - x);
    if (err > worst) worst = err;
    planes[0][i] = (unsigned char)(h >> 8);
    planes[1][i] = (unsigned char)h;
  }
  *max_err = worst;
  return 0;
}

void bp_lossy_merge(const unsigned char *const *planes, const unsigned char *base, uint64_t n, int width, int big,
                    int fmt, unsigned char *dst) {
  int swap = big != dt_host_big();
  uint64_t i;
  for (i = 0; i < n; i++) {
    uint16_t h = (uint16_t)(planes[0][i] << 8 | planes[1][i]);
    store_real(dst, i, width, swap, lossy_value(load_real(base, i, width, swap), h, width, fmt));
  }
}
