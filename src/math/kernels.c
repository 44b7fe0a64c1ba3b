/* SPDX-License-Identifier: Apache-2.0 */
/*
** kernels.c — typed numeric loops (see kernels.h).
**
** Every loop reads and writes elements with memcpy (no alignment needed) and
** is simple enough for the vectorizer; the ones compilers will not vectorize
** on their own (NaN-propagating min/max, the lanes of pairwise sums) use
** GCC/Clang vector extensions, which lower to whatever vectors the target
** has. The hottest loops are built for AVX2 as well as the baseline (KN_HOT).
*/
#include "math/kernels.h"

#include <float.h>
#include <math.h>
#include <string.h>

typedef unsigned char uchar;

/* KN_HOT (kernels.h): the hottest loops get an AVX2 clone. */

/* --- element access ------------------------------------------------------ */

#define DEF_LD(NAME, T)                            \
  static inline T NAME(const uchar *p, size_t i) { \
    T v;                                           \
    memcpy(&v, p + i * sizeof(T), sizeof(T));      \
    return v;                                      \
  }
#define DEF_ST(NAME, T) \
  static inline void NAME(uchar *p, size_t i, T v) { memcpy(p + i * sizeof(T), &v, sizeof(T)); }

DEF_LD(ld_u8, uint8_t)
DEF_LD(ld_i8, int8_t)
DEF_LD(ld_u16, uint16_t)
DEF_LD(ld_i16, int16_t)
DEF_LD(ld_u32, uint32_t)
DEF_LD(ld_i32, int32_t)
DEF_LD(ld_u64, uint64_t)
DEF_LD(ld_i64, int64_t)
DEF_LD(ld_f32, float)
DEF_LD(ld_f64, double)
DEF_ST(st_u8, uint8_t)
DEF_ST(st_i8, int8_t)
DEF_ST(st_u16, uint16_t)
DEF_ST(st_i16, int16_t)
DEF_ST(st_u32, uint32_t)
DEF_ST(st_i32, int32_t)
DEF_ST(st_u64, uint64_t)
DEF_ST(st_i64, int64_t)
DEF_ST(st_f32, float)
DEF_ST(st_f64, double)

/* IEEE half to float without branches, so loops over it vectorize: shift
** exponent and mantissa into place and rescale by 2^112, which is exact for
** normal and subnormal halves; infinities and NaNs (payload kept) are
** patched in. */
static inline float half_to_float(uint16_t h) {
  uint32_t em = h & 0x7fffu, bits = em << 13, r;
  float f;
  memcpy(&f, &bits, 4);
  f *= 0x1p112f;
  memcpy(&r, &f, 4);
  if (em >= 0x7c00u) r = bits | 0x7f800000u;
  r |= (uint32_t)(h & 0x8000u) << 16;
  memcpy(&f, &r, 4);
  return f;
}

/* float to IEEE half, rounding to nearest even like dt_double_to_half, with
** selects instead of branches so loops over it vectorize: normal values
** round their mantissa with an integer bias; values below 2^-14 are added
** to 0.5f, whose ulp (2^-24) is the half subnormal step, so the FPU does the
** rounding; overflow goes to infinity. NaNs keep their payload's top bits
** (0x7c01 when those are zero), as NumPy's npy_floatbits_to_halfbits. */
static inline uint16_t float_to_half(float f) {
  uint32_t x, a, norm, sub, nan, h;
  float t;
  memcpy(&x, &f, 4);
  a = x & 0x7fffffffu;
  norm = (a - 0x38000000u + 0x0fffu + ((a >> 13) & 1u)) >> 13;
  memcpy(&t, &a, 4);
  t += 0.5f;
  memcpy(&sub, &t, 4);
  sub -= 0x3f000000u;
  nan = 0x7c00u | ((a >> 13) & 0x3ffu);
  nan |= (nan & 0x3ffu) ? 0u : 1u;
  h = a < 0x38800000u ? sub : norm;
  h = a >= 0x47800000u ? 0x7c00u : h;
  h = a > 0x7f800000u ? nan : h;
  return (uint16_t)(((x >> 16) & 0x8000u) | h);
}

/* IEEE half to double: through half_to_float, except that a NaN's bits are
** moved over directly — converting a signalling NaN from float to double
** would set its quiet bit, and NumPy's half-to-double keeps the payload as
** it is. */
static inline double half_to_double(uint16_t h) {
  double d = (double)half_to_float(h);
  uint64_t b;
  memcpy(&b, &d, 8);
  if ((h & 0x7fffu) > 0x7c00u)
    b = ((uint64_t)(h & 0x8000u) << 48) | (UINT64_C(0x7ff) << 52) | ((uint64_t)(h & 0x3ffu) << 42);
  memcpy(&d, &b, 8);
  return d;
}

static inline float ld_f16(const uchar *p, size_t i) { return half_to_float(ld_u16(p, i)); }
static inline double ld_f16_f64(const uchar *p, size_t i) { return half_to_double(ld_u16(p, i)); }
static inline void st_f16(uchar *p, size_t i, double v) { st_u16(p, i, dt_double_to_half(v)); }

/* --- pairwise summation across blocks ---------------------------------- */

void kn_cascade_init(kn_cascade *c) { c->count = 0; }

void kn_cascade_add(kn_cascade *c, double v) {
  uint64_t cnt = c->count;
  int k = 0;
  while (cnt & 1) {
    v = c->level[k++] + v;
    cnt >>= 1;
  }
  c->level[k] = v;
  c->count++;
}

double kn_cascade_sum(const kn_cascade *c) {
  double s = 0;
  int k, first = 1;
  for (k = 0; k < 64; k++) {
    if ((c->count >> k) & 1) {
      s = first ? c->level[k] : c->level[k] + s;
      first = 0;
    }
  }
  return s;
}

/* --- conversions ---------------------------------------------------------- */

/* Element i of the destination = (DT)LD(s, i), stored with ST (no
** alignment needed), for every integer and float source type (halves read
** with LD16); the complex and bool cases differ per target and are written
** out. */
#define CONVERT_REAL_CASES(DT, ST, LD16)                      \
  case DT_INT8:                                               \
    for (i = 0; i < n; i++) ST(d, i, (DT)ld_i8(s, i));        \
    break;                                                    \
  case DT_INT16:                                              \
    for (i = 0; i < n; i++) ST(d, i, (DT)ld_i16(s, i));       \
    break;                                                    \
  case DT_INT32:                                              \
    for (i = 0; i < n; i++) ST(d, i, (DT)ld_i32(s, i));       \
    break;                                                    \
  case DT_INT64:                                              \
    for (i = 0; i < n; i++) ST(d, i, (DT)ld_i64(s, i));       \
    break;                                                    \
  case DT_UINT8:                                              \
    for (i = 0; i < n; i++) ST(d, i, (DT)ld_u8(s, i));        \
    break;                                                    \
  case DT_UINT16:                                             \
    for (i = 0; i < n; i++) ST(d, i, (DT)ld_u16(s, i));       \
    break;                                                    \
  case DT_UINT32:                                             \
    for (i = 0; i < n; i++) ST(d, i, (DT)ld_u32(s, i));       \
    break;                                                    \
  case DT_UINT64:                                             \
    for (i = 0; i < n; i++) ST(d, i, (DT)ld_u64(s, i));       \
    break;                                                    \
  case DT_FLOAT16:                                            \
    for (i = 0; i < n; i++) ST(d, i, (DT)LD16(s, i));         \
    break;                                                    \
  case DT_FLOAT32:                                            \
    for (i = 0; i < n; i++) ST(d, i, (DT)ld_f32(s, i));       \
    break;                                                    \
  case DT_FLOAT64:                                            \
    for (i = 0; i < n; i++) ST(d, i, (DT)ld_f64(s, i));       \
    break;                                                    \
  case DT_BOOL:                                               \
    for (i = 0; i < n; i++) ST(d, i, (DT)(ld_u8(s, i) != 0)); \
    break

KN_HOT static void to_f64_hot(dt_type t, const void *restrict src, void *restrict dst, size_t n) {
  const uchar *s = src;
  uchar *d = dst;
  size_t i;
  switch (t) {
    CONVERT_REAL_CASES(double, st_f64, ld_f16_f64);
    case DT_COMPLEX64:
      for (i = 0; i < n; i++) st_f64(d, i, ld_f32(s, 2 * i));
      break;
    default:
      for (i = 0; i < n; i++) st_f64(d, i, ld_f64(s, 2 * i));
      break;
  }
}
void kn_to_f64(dt_type t, const void *restrict src, void *restrict dst, size_t n) { to_f64_hot(t, src, dst, n); }

KN_HOT static void to_f32_hot(dt_type t, const void *restrict src, void *restrict dst, size_t n) {
  const uchar *s = src;
  uchar *d = dst;
  size_t i;
  switch (t) {
    CONVERT_REAL_CASES(float, st_f32, ld_f16);
    case DT_COMPLEX64:
      for (i = 0; i < n; i++) st_f32(d, i, ld_f32(s, 2 * i));
      break;
    default:
      for (i = 0; i < n; i++) st_f32(d, i, (float)ld_f64(s, 2 * i));
      break;
  }
}
void kn_to_f32(dt_type t, const void *restrict src, void *restrict dst, size_t n) { to_f32_hot(t, src, dst, n); }

void kn_to_c128(dt_type t, const void *restrict src, double *restrict dst, size_t n) {
  const uchar *s = src;
  size_t i;
  if (t == DT_COMPLEX128) {
    memcpy(dst, src, n * 16);
  } else if (t == DT_COMPLEX64) {
    for (i = 0; i < 2 * n; i++) dst[i] = ld_f32(s, i);
  } else {
    /* Real values into the first half, then spread them out backwards. */
    kn_to_f64(t, src, dst, n);
    for (i = n; i-- > 0;) {
      dst[2 * i] = dst[i];
      dst[2 * i + 1] = 0;
    }
  }
}

void kn_to_c64(dt_type t, const void *restrict src, float *restrict dst, size_t n) {
  const uchar *s = src;
  size_t i;
  if (t == DT_COMPLEX64) {
    memcpy(dst, src, n * 8);
  } else if (t == DT_COMPLEX128) {
    for (i = 0; i < 2 * n; i++) dst[i] = (float)ld_f64(s, i);
  } else {
    kn_to_f32(t, src, dst, n);
    for (i = n; i-- > 0;) {
      dst[2 * i] = dst[i];
      dst[2 * i + 1] = 0;
    }
  }
}

KN_HOT static void to_i64_hot(dt_type t, const void *restrict src, int64_t *restrict dst, size_t n) {
  const uchar *s = src;
  size_t i;
  switch (t) {
    case DT_BOOL:
      for (i = 0; i < n; i++) dst[i] = ld_u8(s, i) != 0;
      break;
    case DT_INT8:
      for (i = 0; i < n; i++) dst[i] = ld_i8(s, i);
      break;
    case DT_INT16:
      for (i = 0; i < n; i++) dst[i] = ld_i16(s, i);
      break;
    case DT_INT32:
      for (i = 0; i < n; i++) dst[i] = ld_i32(s, i);
      break;
    case DT_UINT8:
      for (i = 0; i < n; i++) dst[i] = ld_u8(s, i);
      break;
    case DT_UINT16:
      for (i = 0; i < n; i++) dst[i] = ld_u16(s, i);
      break;
    case DT_UINT32:
      for (i = 0; i < n; i++) dst[i] = ld_u32(s, i);
      break;
    case DT_INT64:
    case DT_UINT64: memcpy(dst, src, n * 8); break;
    default: memset(dst, 0, n * 8); break; /* not an integer type: callers never ask */
  }
}
void kn_to_i64(dt_type t, const void *restrict src, int64_t *restrict dst, size_t n) { to_i64_hot(t, src, dst, n); }

KN_HOT static void from_f64_hot(dt_type t, const double *restrict src, void *restrict dst, size_t n) {
  uchar *d = dst;
  size_t i;
  switch (t) {
    case DT_FLOAT16:
      for (i = 0; i < n; i++) st_f16(d, i, src[i]);
      break;
    case DT_FLOAT32:
      for (i = 0; i < n; i++) st_f32(d, i, (float)src[i]);
      break;
    case DT_COMPLEX64:
      for (i = 0; i < n; i++) {
        st_f32(d, 2 * i, (float)src[i]);
        st_f32(d, 2 * i + 1, 0.0f);
      }
      break;
    case DT_COMPLEX128:
      for (i = 0; i < n; i++) {
        st_f64(d, 2 * i, src[i]);
        st_f64(d, 2 * i + 1, 0.0);
      }
      break;
    default: memcpy(dst, src, n * 8); break;
  }
}
void kn_from_f64(dt_type t, const double *restrict src, void *restrict dst, size_t n) { from_f64_hot(t, src, dst, n); }

KN_HOT static void from_f32_hot(dt_type t, const float *restrict src, void *restrict dst, size_t n) {
  uchar *d = dst;
  size_t i;
  if (t == DT_FLOAT16) {
    for (i = 0; i < n; i++) st_u16(d, i, float_to_half(src[i]));
  } else {
    memcpy(dst, src, n * 4);
  }
}
void kn_from_f32(dt_type t, const float *restrict src, void *restrict dst, size_t n) { from_f32_hot(t, src, dst, n); }

void kn_from_c128(dt_type t, const double *restrict src, void *restrict dst, size_t n) {
  uchar *d = dst;
  size_t i;
  if (t == DT_COMPLEX64) {
    for (i = 0; i < 2 * n; i++) st_f32(d, i, (float)src[i]);
  } else {
    memcpy(dst, src, n * 16);
  }
}

KN_HOT static void from_i64_hot(dt_type t, const int64_t *restrict src, void *restrict dst, size_t n) {
  uchar *d = dst;
  size_t i;
  switch (dt_size(t)) {
    case 1:
      if (t == DT_BOOL) {
        for (i = 0; i < n; i++) st_u8(d, i, src[i] != 0);
      } else {
        for (i = 0; i < n; i++) st_u8(d, i, (uint8_t)(uint64_t)src[i]);
      }
      break;
    case 2:
      for (i = 0; i < n; i++) st_u16(d, i, (uint16_t)(uint64_t)src[i]);
      break;
    case 4:
      for (i = 0; i < n; i++) st_u32(d, i, (uint32_t)(uint64_t)src[i]);
      break;
    default: memcpy(dst, src, n * 8); break;
  }
}
void kn_from_i64(dt_type t, const int64_t *restrict src, void *restrict dst, size_t n) { from_i64_hot(t, src, dst, n); }

size_t kn_f64_to_int(dt_type t, const double *restrict src, void *restrict dst, size_t n) {
  uchar *d = dst;
  int bits = (int)dt_size(t) * 8;
  int is_unsigned = dt_kind(t) == DT_KIND_UINT;
  double lo = is_unsigned ? 0.0 : -ldexp(1.0, bits - 1);
  double hi = ldexp(1.0, is_unsigned ? bits : bits - 1);
  size_t i;
  for (i = 0; i < n; i++) {
    double x = trunc(src[i]); /* NaN and infinities fail the range test */
    uint64_t u;
    if (!(x >= lo && x < hi)) return i;
    if (is_unsigned) {
      u = (uint64_t)x;
    } else {
      int64_t s = (int64_t)x;
      memcpy(&u, &s, 8);
    }
    switch (bits) {
      case 8: st_u8(d, i, (uint8_t)u); break;
      case 16: st_u16(d, i, (uint16_t)u); break;
      case 32: st_u32(d, i, (uint32_t)u); break;
      default: memcpy(d + 8 * i, &u, 8); break;
    }
  }
  return n;
}

/* --- elementwise arithmetic ----------------------------------------------- */

#define BINARY_LOOPS(LD, ST, T)                                     \
  switch (op) {                                                     \
    case KN_ADD:                                                    \
      for (i = 0; i < n; i++) ST(o, i, (T)(LD(pa, i) + LD(pb, i))); \
      break;                                                        \
    case KN_SUB:                                                    \
      for (i = 0; i < n; i++) ST(o, i, (T)(LD(pa, i) - LD(pb, i))); \
      break;                                                        \
    default:                                                        \
      for (i = 0; i < n; i++) ST(o, i, (T)(LD(pa, i) * LD(pb, i))); \
      break;                                                        \
  }

/* One hot loop per storage type, each with its exported entry point. */
#define DEF_BINARY(NAME, LD, ST, T)                                                                   \
  KN_HOT static void NAME##_hot(int op, const void *a, const void *b, void *restrict out, size_t n) { \
    const uchar *pa = a, *pb = b;                                                                     \
    uchar *o = out;                                                                                   \
    size_t i;                                                                                         \
    BINARY_LOOPS(LD, ST, T)                                                                           \
  }                                                                                                   \
  void kn_##NAME(int op, const void *a, const void *b, void *restrict out, size_t n) { NAME##_hot(op, a, b, out, n); }

DEF_BINARY(binary_f64, ld_f64, st_f64, double)
DEF_BINARY(binary_f32, ld_f32, st_f32, float)
/* Integers: unsigned arithmetic wraps without undefined behaviour; the bits
** are the two's complement result NumPy gives. */
DEF_BINARY(binary_i64, ld_u64, st_u64, uint64_t)

#define COMPLEX_LOOPS(LD, ST)                                         \
  for (i = 0; i < n; i++) {                                           \
    ar = LD(pa, 2 * i), ai = LD(pa, 2 * i + 1);                       \
    br = LD(pb, 2 * i), bi = LD(pb, 2 * i + 1);                       \
    switch (op) {                                                     \
      case KN_ADD: rr = ar + br, ri = ai + bi; break;                 \
      case KN_SUB: rr = ar - br, ri = ai - bi; break;                 \
      default: rr = ar * br - ai * bi, ri = ar * bi + ai * br; break; \
    }                                                                 \
    ST(o, 2 * i, rr);                                                 \
    ST(o, 2 * i + 1, ri);                                             \
  }

void kn_binary_c128(int op, const void *a, const void *b, void *restrict out, size_t n) {
  const uchar *pa = a, *pb = b;
  uchar *o = out;
  double ar, ai, br, bi, rr, ri;
  size_t i;
  COMPLEX_LOOPS(ld_f64, st_f64)
}

void kn_binary_c64(int op, const void *a, const void *b, void *restrict out, size_t n) {
  const uchar *pa = a, *pb = b;
  uchar *o = out;
  float ar, ai, br, bi, rr, ri;
  size_t i;
  COMPLEX_LOOPS(ld_f32, st_f32)
}

KN_HOT static void scale_f64_hot(const void *x, double s, void *restrict out, size_t n) {
  const uchar *p = x;
  uchar *o = out;
  size_t i;
  for (i = 0; i < n; i++) st_f64(o, i, ld_f64(p, i) * s);
}
void kn_scale_f64(const void *x, double s, void *restrict out, size_t n) { scale_f64_hot(x, s, out, n); }

KN_HOT static void scale_f32_hot(const void *x, float s, void *restrict out, size_t n) {
  const uchar *p = x;
  uchar *o = out;
  size_t i;
  for (i = 0; i < n; i++) st_f32(o, i, ld_f32(p, i) * s);
}
void kn_scale_f32(const void *x, float s, void *restrict out, size_t n) { scale_f32_hot(x, s, out, n); }

/* x * (s + 0i) with the full product, so inf/NaN parts behave as in NumPy
** (inf * 0 is NaN). */
#define SCALE_COMPLEX(LD, ST, T)                       \
  for (i = 0; i < n; i++) {                            \
    T xr = LD(p, 2 * i), xi = LD(p, 2 * i + 1), z = 0; \
    ST(o, 2 * i, xr * s - xi * z);                     \
    ST(o, 2 * i + 1, xr * z + xi * s);                 \
  }

void kn_scale_c128(const void *x, double s, void *restrict out, size_t n) {
  const uchar *p = x;
  uchar *o = out;
  size_t i;
  SCALE_COMPLEX(ld_f64, st_f64, double)
}

void kn_scale_c64(const void *x, float s, void *restrict out, size_t n) {
  const uchar *p = x;
  uchar *o = out;
  size_t i;
  SCALE_COMPLEX(ld_f32, st_f32, float)
}

/* --- pairwise sums -------------------------------------------------------- */

typedef struct sum_args {
  const uchar *x, *y;
  double m0, m1;
} sum_args;

/* Four lanes of doubles as one value: GCC and Clang lower the operations to
** whatever vectors the target has (one AVX register, two SSE2 ones, or
** scalars), each lane computed exactly as the scalar code would. */
typedef double kv4d __attribute__((vector_size(32)));
typedef int64_t kv4l __attribute__((vector_size(32)));

/* Loading them from anywhere (arrays in a record start at any byte), as
** macros: a function returning a 32-byte vector would have a different ABI
** in the AVX2 and baseline copies. Four floats become four doubles through
** the lanes of one load, which compilers turn into a single conversion. */
typedef double kv4du __attribute__((vector_size(32), aligned(1), may_alias));
typedef float kv4fu __attribute__((vector_size(16), aligned(1), may_alias));
static const kv4l kv_absmask = {INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX}; /* fabs clears the sign bit */

#define v4_f64(p, i) (*(const kv4du *)(const void *)((p) + 8 * (i)))
#define v4_f32_(p, i) (*(const kv4fu *)(const void *)((p) + 4 * (i)))
#define v4_f32(p, i) ((kv4d){v4_f32_(p, i)[0], v4_f32_(p, i)[1], v4_f32_(p, i)[2], v4_f32_(p, i)[3]})
#define v4_abs(v) ((kv4d)((kv4l)(v)&kv_absmask))

/* NAME(args, lo, n) sums TERM(i) for i in [lo, lo+n) as NumPy's pairwise_sum
** does: below 8 terms in sequence, up to 128 in 8 interleaved lanes, above
** that split in two halves (the first a multiple of 8). VTERM(i) is the four
** terms i..i+3 as a kv4d, so a leaf's 8 lanes are two vectors: each lane
** adds its own terms in the same order as the scalar code. (Running two
** leaves side by side, for more independent additions, measured slower:
** two load streams 512 bytes apart.) */
#define LANES8(v0, v1) (((v0[0] + v0[1]) + (v0[2] + v0[3])) + ((v1[0] + v1[1]) + (v1[2] + v1[3])))
#define DEF_PAIRWISE(NAME, TERM, VTERM)                               \
  KN_HOT static double NAME(const sum_args *a, size_t lo, size_t n) { \
    const uchar *x = a->x, *y = a->y;                                 \
    double m0 = a->m0, m1 = a->m1, res;                               \
    kv4d M0 = {m0, m0, m0, m0}, r0, r1;                               \
    size_t i, half;                                                   \
    (void)y, (void)m0, (void)m1, (void)M0;                            \
    if (n < 8) {                                                      \
      res = 0;                                                        \
      for (i = 0; i < n; i++) res += TERM(lo + i);                    \
      return res;                                                     \
    }                                                                 \
    if (n <= 128) {                                                   \
      r0 = VTERM(lo);                                                 \
      r1 = VTERM(lo + 4);                                             \
      for (i = 8; i + 8 <= n; i += 8) {                               \
        r0 += VTERM(lo + i);                                          \
        r1 += VTERM(lo + i + 4);                                      \
      }                                                               \
      res = LANES8(r0, r1);                                           \
      for (; i < n; i++) res += TERM(lo + i);                         \
      return res;                                                     \
    }                                                                 \
    half = n / 2 - n / 2 % 8;                                         \
    return NAME(a, lo, half) + NAME(a, lo + half, n - half);          \
  }

#define T_X(i) ld_f64(x, i)
#define T_SQ(i) (ld_f64(x, i) * ld_f64(x, i))
#define T_ABS(i) fabs(ld_f64(x, i))
#define T_SQDEV(i) ((ld_f64(x, i) - m0) * (ld_f64(x, i) - m0))
#define T_PROD(i) (ld_f64(x, i) * ld_f64(y, i))
#define T_SQ_C(i) (ld_f64(x, 2 * (i)) * ld_f64(x, 2 * (i)) + ld_f64(x, 2 * (i) + 1) * ld_f64(x, 2 * (i) + 1))
#define T_ABS_C(i) hypot(ld_f64(x, 2 * (i)), ld_f64(x, 2 * (i) + 1))
#define T_SQDEV_C(i)                                       \
  ((ld_f64(x, 2 * (i)) - m0) * (ld_f64(x, 2 * (i)) - m0) + \
   (ld_f64(x, 2 * (i) + 1) - m1) * (ld_f64(x, 2 * (i) + 1) - m1))

#define T_X32(i) ((double)ld_f32(x, i))
#define T_SQ32(i) ((double)ld_f32(x, i) * (double)ld_f32(x, i))
#define T_ABS32(i) fabs((double)ld_f32(x, i))
#define T_SQDEV32(i) (((double)ld_f32(x, i) - m0) * ((double)ld_f32(x, i) - m0))
#define T_PROD32(i) ((double)ld_f32(x, i) * (double)ld_f32(y, i))

/* The same terms four at a time. */
#define V_X(i) v4_f64(x, i)
#define V_SQ(i) (v4_f64(x, i) * v4_f64(x, i))
#define V_ABS(i) v4_abs(v4_f64(x, i))
#define V_SQDEV(i) ((v4_f64(x, i) - M0) * (v4_f64(x, i) - M0))
#define V_PROD(i) (v4_f64(x, i) * v4_f64(y, i))
#define V_X32(i) v4_f32(x, i)
#define V_SQ32(i) (v4_f32(x, i) * v4_f32(x, i))
#define V_ABS32(i) v4_abs(v4_f32(x, i))
#define V_SQDEV32(i) ((v4_f32(x, i) - M0) * (v4_f32(x, i) - M0))
#define V_PROD32(i) (v4_f32(x, i) * v4_f32(y, i))
/* complex terms: four scalar terms gathered */
#define V_GATHER(T, i) ((kv4d){T(i), T((i) + 1), T((i) + 2), T((i) + 3)})
#define V_SQ_C(i) V_GATHER(T_SQ_C, i)
#define V_ABS_C(i) V_GATHER(T_ABS_C, i)
#define V_SQDEV_C(i) V_GATHER(T_SQDEV_C, i)

DEF_PAIRWISE(pw_sum_f32, T_X32, V_X32)
DEF_PAIRWISE(pw_sum_sq_f32, T_SQ32, V_SQ32)
DEF_PAIRWISE(pw_sum_abs_f32, T_ABS32, V_ABS32)
DEF_PAIRWISE(pw_sum_sqdev_f32, T_SQDEV32, V_SQDEV32)
DEF_PAIRWISE(pw_sum_prod_f32, T_PROD32, V_PROD32)
DEF_PAIRWISE(pw_sum, T_X, V_X)
DEF_PAIRWISE(pw_sum_sq, T_SQ, V_SQ)
DEF_PAIRWISE(pw_sum_abs, T_ABS, V_ABS)
DEF_PAIRWISE(pw_sum_sqdev, T_SQDEV, V_SQDEV)
DEF_PAIRWISE(pw_sum_prod, T_PROD, V_PROD)
DEF_PAIRWISE(pw_sum_sq_c, T_SQ_C, V_SQ_C)
DEF_PAIRWISE(pw_sum_abs_c, T_ABS_C, V_ABS_C)
DEF_PAIRWISE(pw_sum_sqdev_c, T_SQDEV_C, V_SQDEV_C)

static sum_args args_of(const void *x, const void *y, double m0, double m1) {
  sum_args a;
  a.x = x;
  a.y = y;
  a.m0 = m0;
  a.m1 = m1;
  return a;
}

/* The public entry points: a pairwise sum over x alone, over x around a
** mean (or a complex mean), and over x and y. */
#define DEF_SUM_X(NAME, PW)              \
  double NAME(const void *x, size_t n) { \
    sum_args a = args_of(x, NULL, 0, 0); \
    return PW(&a, 0, n);                 \
  }
#define DEF_SUM_MEAN(NAME, PW)                        \
  double NAME(const void *x, double mean, size_t n) { \
    sum_args a = args_of(x, NULL, mean, 0);           \
    return PW(&a, 0, n);                              \
  }
#define DEF_SUM_XY(NAME, PW)                            \
  double NAME(const void *x, const void *y, size_t n) { \
    sum_args a = args_of(x, y, 0, 0);                   \
    return PW(&a, 0, n);                                \
  }

DEF_SUM_X(kn_sum, pw_sum)
DEF_SUM_X(kn_sum_sq, pw_sum_sq)
DEF_SUM_X(kn_sum_abs, pw_sum_abs)
DEF_SUM_MEAN(kn_sum_sqdev, pw_sum_sqdev)
DEF_SUM_XY(kn_sum_prod, pw_sum_prod)
DEF_SUM_X(kn_sum_f32, pw_sum_f32)
DEF_SUM_X(kn_sum_sq_f32, pw_sum_sq_f32)
DEF_SUM_X(kn_sum_abs_f32, pw_sum_abs_f32)
DEF_SUM_MEAN(kn_sum_sqdev_f32, pw_sum_sqdev_f32)
DEF_SUM_XY(kn_sum_prod_f32, pw_sum_prod_f32)
DEF_SUM_X(kn_sum_sq_c, pw_sum_sq_c)
DEF_SUM_X(kn_sum_abs_c, pw_sum_abs_c)

double kn_sum_sqdev_c(const void *z, double mean_re, double mean_im, size_t n) {
  sum_args a = args_of(z, NULL, mean_re, mean_im);
  return pw_sum_sqdev_c(&a, 0, n);
}

/* am_compare in one pass: DEF_PAIRWISE's tree with five accumulators (each
** its own 8 lanes, in the scalar code's order) over terms from the same
** loads, and beside them the order-free parts: the largest |a - b| (a
** compare-and-select max: compilers keep a plain max of doubles scalar,
** since reordering it could change which NaN comes out; NaNs never enter
** it) and the count of a != b. The 8 lanes are NV vectors of W = 8 / NV
** doubles (VT, with VL its mask type): two of 4 in the baseline and AVX2
** copies, one of 8 in the AVX-512 one, lane l summing the terms l mod 8 in
** every copy, so the bits are the same. LDV(p, i): elements i..i+W-1 as a
** VT; LD1: element i as a double. */
static inline void cmp_rest1(kn_cmp_block *r, double a, double b, double d) {
  double v = fabs(d);
  r->maxabs = v > r->maxabs ? v : r->maxabs;
  r->changed += a != b;
}
/* One element's terms, added in sequence (the scalar part of a leaf). */
static inline void cmp_term(double *r, kn_cmp_block *rest, double a, double b, int base, double c) {
  double d = a - b;
  r[0] += a * a, r[1] += b * b, r[2] += a * b, r[3] += d * d, r[4] += d;
  cmp_rest1(rest, a, b, d);
  if (base) {
    double e = a - c, f = b - c;
    r[5] += e * e, r[6] += f * f, r[7] += e * f;
  }
}
/* 8 lanes summed in DEF_PAIRWISE's fixed tree (LANES8's). */
static inline double cmp_lanes8(const double *l) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}
#define CMP_SUM8(vs) (memcpy(lanes, vs, sizeof lanes), cmp_lanes8(lanes))
/* One step of 8 elements from at: acc = t on the FIRST (a constant) step,
** acc + t after, as DEF_PAIRWISE's lanes start from their first term. */
#define CMP_ACC(F, acc, t) ((acc) = (F) ? (t) : (acc) + (t))
#define CMP_STEP(VT, VL, NV, LDV, BASE, FIRST)                                               \
  for (v = 0; v < NV; v++) {                                                                 \
    size_t at = lo + i + (size_t)v * (8 / NV);                                               \
    VT a = LDV(x, at), b = LDV(y, at), d = a - b, ad = (VT)((VL)d & ((VL){0} + INT64_MAX));  \
    VL gt = ad > hi[v];                                                                      \
    CMP_ACC(FIRST, sa[v], a *a), CMP_ACC(FIRST, sb[v], b *b), CMP_ACC(FIRST, pr[v], a *b);   \
    CMP_ACC(FIRST, sd[v], d *d), CMP_ACC(FIRST, sm[v], d);                                   \
    hi[v] = (VT)(((VL)ad & gt) | ((VL)hi[v] & ~gt));                                         \
    ne[v] -= a != b;                                                                         \
    if (BASE) {                                                                              \
      VT c = LDV(z, at), e = a - c, f = b - c;                                               \
      CMP_ACC(FIRST, ea[v], e *e), CMP_ACC(FIRST, fb[v], f *f), CMP_ACC(FIRST, ef[v], e *f); \
    }                                                                                        \
  }
#define DEF_PAIRWISE_CMP(ATTR, NAME, VT, VL, NV, LDV, LD1, BASE)                                          \
  ATTR static void NAME(const uchar *x, const uchar *y, const uchar *z, size_t lo, size_t n, double *out, \
                        kn_cmp_block *rest) {                                                             \
    double r[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                               \
    size_t i = 0, half;                                                                                   \
    int v, l;                                                                                             \
    (void)z;                                                                                              \
    if (n > 128) {                                                                                        \
      double lo_[8], hi_[8];                                                                              \
      half = n / 2 - n / 2 % 8;                                                                           \
      NAME(x, y, z, lo, half, lo_, rest);                                                                 \
      NAME(x, y, z, lo + half, n - half, hi_, rest);                                                      \
      for (l = 0; l < (BASE ? 8 : 5); l++) out[l] = lo_[l] + hi_[l];                                      \
      return;                                                                                             \
    }                                                                                                     \
    if (n >= 8) { /* 8 lanes, each summing its own terms from a first one */                              \
      VT sa[NV], sb[NV], pr[NV], sd[NV], sm[NV], ea[NV], fb[NV], ef[NV], hi[NV];                          \
      VL ne[NV];                                                                                          \
      double lanes[8];                                                                                    \
      memset(ea, 0, sizeof ea), memset(fb, 0, sizeof fb), memset(ef, 0, sizeof ef);                       \
      memset(hi, 0, sizeof hi), memset(ne, 0, sizeof ne);                                                 \
      CMP_STEP(VT, VL, NV, LDV, BASE, 1)                                                                  \
      for (i = 8; i + 8 <= n; i += 8) CMP_STEP(VT, VL, NV, LDV, BASE, 0)                                  \
      r[0] = CMP_SUM8(sa), r[1] = CMP_SUM8(sb), r[2] = CMP_SUM8(pr), r[3] = CMP_SUM8(sd);                 \
      r[4] = CMP_SUM8(sm), r[5] = CMP_SUM8(ea), r[6] = CMP_SUM8(fb), r[7] = CMP_SUM8(ef);                 \
      for (v = 0; v < NV; v++)                                                                            \
        for (l = 0; l < 8 / NV; l++) {                                                                    \
          rest->maxabs = hi[v][l] > rest->maxabs ? hi[v][l] : rest->maxabs;                               \
          rest->changed += (uint64_t)ne[v][l];                                                            \
        }                                                                                                 \
    }                                                                                                     \
    for (; i < n; i++) /* the rest (or all, below 8) in sequence */                                       \
      cmp_term(r, rest, LD1(x, lo + i), LD1(y, lo + i), BASE, BASE ? LD1(z, lo + i) : 0);                 \
    memcpy(out, r, sizeof(double) * (BASE ? 8 : 5));                                                      \
  }

#define LD1_F32(p, i) ((double)ld_f32(p, i))
#define LD1_F64(p, i) ld_f64(p, i)
DEF_PAIRWISE_CMP(KN_HOT, pw_cmp_f32, kv4d, kv4l, 2, v4_f32, LD1_F32, 0)
DEF_PAIRWISE_CMP(KN_HOT, pw_cmp_f64, kv4d, kv4l, 2, v4_f64, LD1_F64, 0)
DEF_PAIRWISE_CMP(KN_HOT, pw_cmp3_f32, kv4d, kv4l, 2, v4_f32, LD1_F32, 1)
DEF_PAIRWISE_CMP(KN_HOT, pw_cmp3_f64, kv4d, kv4l, 2, v4_f64, LD1_F64, 1)
#if KN_CLONES
typedef double kv8d __attribute__((vector_size(64)));
typedef int64_t kv8l __attribute__((vector_size(64)));
typedef double kv8du __attribute__((vector_size(64), aligned(1), may_alias));
typedef float kv8fu __attribute__((vector_size(32), aligned(1), may_alias));
#define v8_f64(p, i) (*(const kv8du *)(const void *)((p) + 8 * (i)))
#define v8_f32_(p, i) (*(const kv8fu *)(const void *)((p) + 4 * (i)))
#define v8_f32(p, i) __builtin_convertvector(v8_f32_(p, i), kv8d)
#define KN_AVX512 __attribute__((target("avx512f")))
DEF_PAIRWISE_CMP(KN_AVX512, pw_cmp_f32_512, kv8d, kv8l, 1, v8_f32, LD1_F32, 0)
DEF_PAIRWISE_CMP(KN_AVX512, pw_cmp_f64_512, kv8d, kv8l, 1, v8_f64, LD1_F64, 0)
DEF_PAIRWISE_CMP(KN_AVX512, pw_cmp3_f32_512, kv8d, kv8l, 1, v8_f32, LD1_F32, 1)
DEF_PAIRWISE_CMP(KN_AVX512, pw_cmp3_f64_512, kv8d, kv8l, 1, v8_f64, LD1_F64, 1)
#endif

static int isa_forced = -1;

int kn_best_isa(void) {
#if KN_CLONES
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return KN_ISA_AVX512;
  if (__builtin_cpu_supports("avx2")) return KN_ISA_AVX2;
#endif
  return KN_ISA_BASE;
}

int kn_set_isa(int isa) {
  int best = kn_best_isa();
  isa_forced = isa < 0 || isa > best ? -1 : isa;
  return isa_forced < 0 ? best : isa_forced;
}

int kn_isa(void) { return isa_forced >= 0 ? isa_forced : kn_best_isa(); }

/* The counts the sums settle: a block whose sum of squares is finite holds
** no NaN or infinity (squares of float32 values never overflow a double; a
** float64 square that does is counted here like a nonfinite element's),
** and only then are its elements looked at. */
static uint64_t cmp_nonfinite(int f64, const uchar *x, size_t m, double sumsq) {
  uint64_t c = 0;
  size_t i;
  if (isfinite(sumsq)) return 0;
  for (i = 0; i < m; i++) c += !(fabs(f64 ? ld_f64(x, i) : (double)ld_f32(x, i)) <= DBL_MAX);
  return c;
}
static int cmp_nan(int f64, const uchar *x, const uchar *y, size_t m, double sumsq_diff) {
  size_t i;
  if (isfinite(sumsq_diff)) return 0;
  for (i = 0; i < m; i++) {
    double d = f64 ? ld_f64(x, i) - ld_f64(y, i) : (double)ld_f32(x, i) - (double)ld_f32(y, i);
    if (d != d) return 1;
  }
  return 0;
}

void kn_compare_block(int f64, const void *a, const void *b, const void *base, size_t m, kn_cmp_block *r) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  memset(r, 0, sizeof(*r));
#if KN_CLONES
  if (m && kn_isa() == KN_ISA_AVX512) {
    if (base)
      (f64 ? pw_cmp3_f64_512 : pw_cmp3_f32_512)(a, b, base, 0, m, s, r);
    else
      (f64 ? pw_cmp_f64_512 : pw_cmp_f32_512)(a, b, NULL, 0, m, s, r);
  } else
#endif
      if (m && base)
    (f64 ? pw_cmp3_f64 : pw_cmp3_f32)(a, b, base, 0, m, s, r);
  else if (m)
    (f64 ? pw_cmp_f64 : pw_cmp_f32)(a, b, NULL, 0, m, s, r);
  r->sa = s[0], r->sb = s[1], r->dot = s[2], r->sd = s[3], r->sdiff = s[4];
  r->sd_a = s[5], r->sd_b = s[6], r->dot_base = s[7];
  r->nf_a = cmp_nonfinite(f64, a, m, r->sa);
  r->nf_b = cmp_nonfinite(f64, b, m, r->sb);
  r->nan = cmp_nan(f64, a, b, m, r->sd);
}

KN_HOT static void sum_int_hot(const int64_t *x, size_t n, int is_unsigned, uint64_t acc[2]) {
  uint64_t lo = acc[0], hi = acc[1];
  size_t i;
  for (i = 0; i < n; i++) {
    uint64_t v = (uint64_t)x[i];
    lo += v;
    hi += (lo < v) + (!is_unsigned && x[i] < 0 ? UINT64_MAX : 0); /* carry, sign extension */
  }
  acc[0] = lo;
  acc[1] = hi;
}
void kn_sum_int(const int64_t *x, size_t n, int is_unsigned, uint64_t acc[2]) { sum_int_hot(x, n, is_unsigned, acc); }

double kn_int128_to_double(const uint64_t acc[2]) {
  uint64_t lo = acc[0], hi = acc[1];
  int negative = hi >> 63;
  double mag;
  if (negative) { /* two's complement negation of (hi, lo) */
    lo = ~lo + 1;
    hi = ~hi + (lo == 0);
  }
  if (!hi) {
    mag = (double)lo;
  } else {
    /* Converting hi and lo apart and adding would round twice. Keep the top
    ** 64 bits and fold the rest into a sticky lowest bit (below the 53 that
    ** survive), so the one conversion rounds as the exact value would. */
    int bits = 64 - __builtin_clzll(hi);
    uint64_t top = bits == 64 ? hi | (lo != 0) : hi << (64 - bits) | lo >> bits | (lo << (64 - bits) != 0);
    mag = ldexp((double)top, bits);
  }
  return negative ? -mag : mag;
}

/* --- min / max ------------------------------------------------------------ */

/* Compilers keep NaN-propagating min/max scalar (reordering it would change
** which NaN or signed zero comes out), so the lanes are written with vector
** extensions: compare, then select by mask (one blend instruction on x86);
** NaNs are tracked on the side. */
typedef float kv8f __attribute__((vector_size(32)));
typedef int32_t kv8i __attribute__((vector_size(32)));

/* m ? a : b lane by lane, with MT the mask (integer) vector type of VT */
#define VSEL(VT, MT, m, a, b) ((VT)(((MT)(a) & (m)) | ((MT)(b) & ~(m))))

/* NAME(x, n, mn, mx) for elements of type T, W of them per vector VT (mask
** type MT), lowering *mn when WANT has bit 1 and raising *mx when it has bit
** 2 (the other pointer is unused). The accumulators are named vectors, not
** an array, so they stay in registers: two sets, enough to overlap the
** compare-and-select chains, few enough not to run out of registers. */
#define MINMAX_STEP(k, T, VT, MT, WANT)                       \
  memcpy(&a, p + sizeof(T) * i + sizeof(VT) * k, sizeof(VT)); \
  if (WANT & 1) l##k = VSEL(VT, MT, a < l##k, a, l##k);       \
  if (WANT & 2) h##k = VSEL(VT, MT, a > h##k, a, h##k);       \
  nn |= a != a;
#define DEF_MINMAX(NAME, T, VT, MT, W, LD, WANT)                  \
  KN_HOT static int NAME(const void *x, size_t n, T *mn, T *mx) { \
    const uchar *p = x;                                           \
    T lo = (WANT & 1) ? *mn : 0, hi = (WANT & 2) ? *mx : 0;       \
    size_t i = 0;                                                 \
    int nan = 0, j, k;                                            \
    if (n >= 2 * W) {                                             \
      VT l0, l1, h0, h1, a, lanes[4];                             \
      MT nn = {0};                                                \
      memcpy(&l0, p, sizeof(VT));                                 \
      l1 = h0 = h1 = l0;                                          \
      for (i = 0; i + 2 * W <= n; i += 2 * W) {                   \
        MINMAX_STEP(0, T, VT, MT, WANT)                           \
        MINMAX_STEP(1, T, VT, MT, WANT)                           \
      }                                                           \
      lanes[0] = l0, lanes[1] = l1, lanes[2] = h0, lanes[3] = h1; \
      for (k = 0; k < 2; k++) {                                   \
        for (j = 0; j < W; j++) {                                 \
          if (lanes[k][j] < lo) lo = lanes[k][j];                 \
          if (lanes[2 + k][j] > hi) hi = lanes[2 + k][j];         \
        }                                                         \
      }                                                           \
      for (j = 0; j < W; j++) nan |= nn[j] != 0;                  \
    }                                                             \
    for (; i < n; i++) {                                          \
      T v = LD(p, i);                                             \
      if (v < lo) lo = v;                                         \
      if (v > hi) hi = v;                                         \
      nan |= v != v;                                              \
    }                                                             \
    if (WANT & 1) *mn = lo;                                       \
    if (WANT & 2) *mx = hi;                                       \
    return nan;                                                   \
  }

DEF_MINMAX(min_f64, double, kv4d, kv4l, 4, ld_f64, 1)
DEF_MINMAX(max_f64, double, kv4d, kv4l, 4, ld_f64, 2)
DEF_MINMAX(minmax_f64, double, kv4d, kv4l, 4, ld_f64, 3)
DEF_MINMAX(min_f32, float, kv8f, kv8i, 8, ld_f32, 1)
DEF_MINMAX(max_f32, float, kv8f, kv8i, 8, ld_f32, 2)
DEF_MINMAX(minmax_f32, float, kv8f, kv8i, 8, ld_f32, 3)

/* One of min or max alone is half the work of both. */
int kn_minmax(const void *x, size_t n, double *mn, double *mx) {
  return !mx ? min_f64(x, n, mn, mx) : !mn ? max_f64(x, n, mn, mx) : minmax_f64(x, n, mn, mx);
}

int kn_minmax_f32(const void *x, size_t n, float *mn, float *mx) {
  return !mx ? min_f32(x, n, mn, mx) : !mn ? max_f32(x, n, mn, mx) : minmax_f32(x, n, mn, mx);
}

KN_HOT static int max_abs_f32_hot(const void *x, size_t n, float *mx) {
  const uchar *p = x;
  const kv8i absmask = {INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
  float hi = *mx;
  size_t i = 0;
  int nan = 0, j, k;
  if (n >= 32) {
    kv8f h[4], a;
    kv8i nn = {0};
    for (k = 0; k < 4; k++) h[k] = (kv8f){hi, hi, hi, hi, hi, hi, hi, hi};
    for (i = 0; i + 32 <= n; i += 32) {
      for (k = 0; k < 4; k++) {
        memcpy(&a, p + 4 * i + 32 * k, 32);
        a = (kv8f)((kv8i)a & absmask);
        h[k] = VSEL(kv8f, kv8i, a > h[k], a, h[k]);
        nn |= a != a;
      }
    }
    for (k = 0; k < 4; k++) {
      for (j = 0; j < 8; j++) {
        if (h[k][j] > hi) hi = h[k][j];
      }
    }
    for (j = 0; j < 8; j++) nan |= nn[j] != 0;
  }
  for (; i < n; i++) {
    float v = fabsf(ld_f32(p, i));
    hi = v > hi ? v : hi;
    nan |= v != v;
  }
  *mx = hi;
  return nan;
}
int kn_max_abs_f32(const void *x, size_t n, float *mx) { return max_abs_f32_hot(x, n, mx); }

KN_HOT static uint64_t count_nonfinite_f32_hot(const void *x, size_t n) {
  const uchar *p = x;
  uint64_t c = 0;
  size_t i;
  for (i = 0; i < n; i++) c += (ld_u32(p, i) & 0x7f800000u) == 0x7f800000u;
  return c;
}
uint64_t kn_count_nonfinite_f32(const void *x, size_t n) { return count_nonfinite_f32_hot(x, n); }

KN_HOT static int max_abs_hot(const void *x, size_t n, int complex_pairs, double *mx) {
  const uchar *p = x;
  double hi = *mx;
  int nan = 0;
  size_t i;
  for (i = 0; i < n; i++) {
    double v = complex_pairs ? hypot(ld_f64(p, 2 * i), ld_f64(p, 2 * i + 1)) : fabs(ld_f64(p, i));
    hi = v > hi ? v : hi;
    nan |= v != v;
  }
  *mx = hi;
  return nan;
}
int kn_max_abs(const void *x, size_t n, int complex_pairs, double *mx) { return max_abs_hot(x, n, complex_pairs, mx); }

/* Integer min/max, signed and unsigned: one loop each, with its entry point. */
#define DEF_MINMAX_INT(NAME, T)                                       \
  KN_HOT static void NAME##_hot(const T *x, size_t n, T *mn, T *mx) { \
    T lo = *mn, hi = *mx;                                             \
    size_t i;                                                         \
    for (i = 0; i < n; i++) {                                         \
      lo = x[i] < lo ? x[i] : lo;                                     \
      hi = x[i] > hi ? x[i] : hi;                                     \
    }                                                                 \
    *mn = lo;                                                         \
    *mx = hi;                                                         \
  }                                                                   \
  void kn_##NAME(const T *x, size_t n, T *mn, T *mx) { NAME##_hot(x, n, mn, mx); }

DEF_MINMAX_INT(minmax_i64, int64_t)
DEF_MINMAX_INT(minmax_u64, uint64_t)

static inline int finite_d(double v) { return fabs(v) <= DBL_MAX; }

KN_HOT static uint64_t count_nonfinite_hot(const void *x, size_t n, int complex_pairs) {
  const uchar *p = x;
  uint64_t c = 0;
  size_t i;
  if (complex_pairs) {
    for (i = 0; i < n; i++) c += !(finite_d(ld_f64(p, 2 * i)) && finite_d(ld_f64(p, 2 * i + 1)));
  } else {
    for (i = 0; i < n; i++) c += !finite_d(ld_f64(p, i));
  }
  return c;
}
uint64_t kn_count_nonfinite(const void *x, size_t n, int complex_pairs) {
  return count_nonfinite_hot(x, n, complex_pairs);
}

KN_HOT static uint64_t count_ne_hot(const void *x, const void *y, size_t n) {
  const uchar *p = x, *q = y;
  uint64_t c = 0;
  size_t i;
  for (i = 0; i < n; i++) c += ld_f64(p, i) != ld_f64(q, i);
  return c;
}
uint64_t kn_count_ne(const void *x, const void *y, size_t n, int complex_pairs) {
  const uchar *p = x, *q = y;
  uint64_t c = 0;
  size_t i;
  if (!complex_pairs) return count_ne_hot(x, y, n);
  for (i = 0; i < n; i++) c += ld_f64(p, 2 * i) != ld_f64(q, 2 * i) || ld_f64(p, 2 * i + 1) != ld_f64(q, 2 * i + 1);
  return c;
}

KN_HOT static int allclose_hot(const void *a, const void *b, size_t n, int complex_pairs, double rtol, double atol) {
  const uchar *pa = a, *pb = b;
  int ok = 1;
  size_t i;
  if (complex_pairs) {
    for (i = 0; i < n && ok; i++) {
      double ar = ld_f64(pa, 2 * i), ai = ld_f64(pa, 2 * i + 1);
      double br = ld_f64(pb, 2 * i), bi = ld_f64(pb, 2 * i + 1);
      if (finite_d(ar) && finite_d(ai) && finite_d(br) && finite_d(bi)) {
        ok = hypot(ar - br, ai - bi) <= atol + rtol * hypot(br, bi);
      } else {
        ok = ar == br && ai == bi;
      }
    }
  } else {
    for (i = 0; i < n; i++) {
      double x = ld_f64(pa, i), y = ld_f64(pb, i);
      int fin = finite_d(x) & finite_d(y);
      ok &= fin ? fabs(x - y) <= atol + rtol * fabs(y) : x == y;
    }
  }
  return ok;
}
int kn_allclose(const void *a, const void *b, size_t n, int complex_pairs, double rtol, double atol) {
  return allclose_hot(a, b, n, complex_pairs, rtol, atol);
}

/* --- accumulators ------------------------------------------------------- */

#define AXPY_CHUNK 256

/* acc[i] = mode SET: w * x[i]; ADD: acc[i] + w * x[i]; KEEP: keep * acc[i] + w * x[i]
** (each product and the sum rounded on its own: no FMA in src/math). */
#define AXPY_LOOP(N, ACC, X)                                          \
  do {                                                                \
    if (mode == KN_ACC_SET) {                                         \
      for (i = 0; i < (N); i++) (ACC)[i] = w * (X);                   \
    } else if (mode == KN_ACC_KEEP) {                                 \
      for (i = 0; i < (N); i++) (ACC)[i] = keep * (ACC)[i] + w * (X); \
    } else {                                                          \
      for (i = 0; i < (N); i++) (ACC)[i] += w * (X);                  \
    }                                                                 \
  } while (0)

KN_HOT static void axpy_hot(dt_type t, const void *restrict x, double w, double *restrict acc, size_t n, int mode,
                            double keep) {
  const uchar *p = x;
  size_t i, off;
  /* float32 and float64 (the usual model weights) are fused; other types go
  ** through a small double buffer. */
  if (t == DT_FLOAT32) {
    AXPY_LOOP(n, acc, (double)ld_f32(p, i));
    return;
  }
  if (t == DT_FLOAT64) {
    AXPY_LOOP(n, acc, ld_f64(p, i));
    return;
  }
  for (off = 0; off < n; off += AXPY_CHUNK) {
    double tmp[AXPY_CHUNK];
    size_t m = n - off < AXPY_CHUNK ? n - off : AXPY_CHUNK;
    kn_to_f64(t, p + off * dt_size(t), tmp, m);
    AXPY_LOOP(m, acc + off, tmp[i]);
  }
}
void kn_axpy(dt_type t, const void *restrict x, double w, double *restrict acc, size_t n, int mode, double keep) {
  axpy_hot(t, x, w, acc, n, mode, keep);
}

void kn_axpy_c(dt_type t, const void *restrict x, double w, double *restrict acc, size_t n, int mode, double keep) {
  const uchar *p = x;
  size_t i, off;
  for (off = 0; off < n; off += AXPY_CHUNK / 2) {
    double tmp[AXPY_CHUNK];
    size_t m = n - off < AXPY_CHUNK / 2 ? n - off : AXPY_CHUNK / 2;
    kn_to_c128(t, p + off * dt_size(t), tmp, m);
    AXPY_LOOP(2 * m, acc + 2 * off, tmp[i]);
  }
}
#undef AXPY_LOOP

KN_HOT static void add_i64_hot(int64_t *restrict acc, const int64_t *restrict x, size_t n, int first) {
  size_t i;
  if (first) {
    memcpy(acc, x, n * 8);
    return;
  }
  for (i = 0; i < n; i++) acc[i] = (int64_t)((uint64_t)acc[i] + (uint64_t)x[i]);
}
void kn_add_i64(int64_t *restrict acc, const int64_t *restrict x, size_t n, int first) {
  add_i64_hot(acc, x, n, first);
}

KN_HOT static void div_store_hot(dt_type t, const double *acc, int pairs, double div, void *dst, size_t n) {
  uchar *d = dst;
  size_t per = pairs ? 2 : 1, osize = dt_size(t), off, i;
  /* Divide a chunk into a private buffer first: dst may overlap acc (see
  ** kernels.h), and a chunk is read completely before any of it is written. */
  for (off = 0; off < n; off += AXPY_CHUNK / 2) {
    double tmp[AXPY_CHUNK];
    size_t m = n - off < AXPY_CHUNK / 2 ? n - off : AXPY_CHUNK / 2;
    const double *src = acc + off * per;
    for (i = 0; i < m * per; i++) tmp[i] = src[i] / div;
    if (pairs)
      kn_from_c128(t, tmp, d + off * osize, m);
    else
      kn_from_f64(t, tmp, d + off * osize, m);
  }
}
void kn_div_store(dt_type t, const double *acc, int pairs, double div, void *dst, size_t n) {
  div_store_hot(t, acc, pairs, div, dst, n);
}

#define MINMAX_INT(LD, ST, T)                      \
  for (i = 0; i < n; i++) {                        \
    T a = LD(pa, i), v = LD(px, i);                \
    ST(pa, i, (want_max ? v > a : v < a) ? v : a); \
  }
#define MINMAX_FLOAT(LD, ST, T)                                \
  for (i = 0; i < n; i++) {                                    \
    T a = LD(pa, i), v = LD(px, i);                            \
    ST(pa, i, ((want_max ? v > a : v < a) || v != v) ? v : a); \
  }

KN_HOT static void elem_minmax_hot(dt_type t, void *acc, const void *x, size_t n, int want_max) {
  uchar *pa = acc;
  const uchar *px = x;
  size_t i;
  switch (t) {
    case DT_BOOL:
      for (i = 0; i < n; i++) {
        int a = ld_u8(pa, i) != 0, v = ld_u8(px, i) != 0;
        st_u8(pa, i, (uint8_t)(want_max ? (a | v) : (a & v)));
      }
      break;
    case DT_INT8: MINMAX_INT(ld_i8, st_i8, int8_t) break;
    case DT_INT16: MINMAX_INT(ld_i16, st_i16, int16_t) break;
    case DT_INT32: MINMAX_INT(ld_i32, st_i32, int32_t) break;
    case DT_INT64: MINMAX_INT(ld_i64, st_i64, int64_t) break;
    case DT_UINT8: MINMAX_INT(ld_u8, st_u8, uint8_t) break;
    case DT_UINT16: MINMAX_INT(ld_u16, st_u16, uint16_t) break;
    case DT_UINT32: MINMAX_INT(ld_u32, st_u32, uint32_t) break;
    case DT_UINT64: MINMAX_INT(ld_u64, st_u64, uint64_t) break;
    case DT_FLOAT16:
      for (i = 0; i < n; i++) {
        float a = ld_f16(pa, i), v = ld_f16(px, i);
        if ((want_max ? v > a : v < a) || v != v) st_u16(pa, i, ld_u16(px, i));
      }
      break;
    case DT_FLOAT32: MINMAX_FLOAT(ld_f32, st_f32, float) break;
    case DT_FLOAT64: MINMAX_FLOAT(ld_f64, st_f64, double) break;
    default: break; /* complex has no order; callers refuse it */
  }
}
void kn_elem_minmax(dt_type t, void *acc, const void *x, size_t n, int want_max) {
  elem_minmax_hot(t, acc, x, n, want_max);
}
