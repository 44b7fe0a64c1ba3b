/* SPDX-License-Identifier: Apache-2.0 */
/*
** fuzz_math.c — libFuzzer harness for the array-math layer (arraymath.c on
** top of kernels.c): two arrays built from the input, in any dtype pair,
** byte order and memory order, empty or not, go through every elementwise
** operation, cast, reshape, reduction and accumulator, and each result is
** checked element by element against a scalar reference written here from
** the documented semantics (dt_load / dt_store and plain C arithmetic).
**
** Input: a 24-byte header, then payload bytes (cycled when too few):
**   [0] a's dtype (% 14)        [1] b's dtype (% 14)
**   [2] flags: 1 a big-endian, 2 b big-endian, 4 a in Fortran order,
**       8 b in Fortran order, 16 a is a () scalar, 32 b is a () scalar,
**       64 b's shape is a's reversed (shapes differ unless symmetric)
**   [3] ndim % 5; bit 7: a long array (1000-1255 x 1-3, past one block)
**   [4..7] dimensions (% 5)     [8] cast target: dtype (% 14), bit 7 big-endian
**   [9..15] unused              [16..23] the npy_scale factor (a double)
**
** Seeds in tests/fuzz/corpus/math are made by tests/fuzz/gen_seeds.py.
*/
#include <math.h>

#include "math/arraymath.h"
#include "fuzz.h"

#define HEAD 24

/* Exact integer sums for the reference (GCC and Clang have it). */
__extension__ typedef __int128 i128;

typedef struct arr {
  buf_t buf; /* the .npy */
  npy_array a;
} arr;

/* Build a .npy of dtype d, shape, order from the payload bytes. */
FUZZ_REFERENCE
static void make(arr *x, dt_dtype d, int ndim, const int64_t *shape, int fortran, const uint8_t *src, size_t nsrc,
                 size_t *cursor) {
  codec_err err;
  uint64_t numel = 1, nbytes, i;
  unsigned char *p;
  int k;
  for (k = 0; k < ndim; k++) numel *= (uint64_t)shape[k];
  nbytes = numel * dt_size(d.type);
  buf_init(&x->buf, UINT64_MAX);
  npy_write_header(&x->buf, d, ndim, shape, fortran);
  p = buf_extend(&x->buf, nbytes);
  FUZZ_CHECK(x->buf.rc == CODEC_OK && p);
  for (i = 0; i < nbytes; i++) p[i] = nsrc ? src[(*cursor)++ % nsrc] : 0;
  FUZZ_CHECK(npy_parse(x->buf.p, x->buf.n, &x->a, &err) == CODEC_OK);
}

/* --- comparing elements ----------------------------------------------------- */

FUZZ_REFERENCE
static int half_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

/* One native element of type t is NaN (complex: either part). */
FUZZ_REFERENCE
static int elem_nan(dt_type t, const unsigned char *p) {
  uint16_t h;
  float f;
  double d;
  switch (t) {
    case DT_FLOAT16: memcpy(&h, p, 2); return half_nan(h);
    case DT_FLOAT32: memcpy(&f, p, 4); return isnan(f);
    case DT_FLOAT64: memcpy(&d, p, 8); return isnan(d);
    case DT_COMPLEX64: return elem_nan(DT_FLOAT32, p) || elem_nan(DT_FLOAT32, p + 4);
    case DT_COMPLEX128: return elem_nan(DT_FLOAT64, p) || elem_nan(DT_FLOAT64, p + 8);
    default: return 0;
  }
}

/* Same element: the same bytes, or NaN in the same places (payloads may
** differ). got and want are in dtype d's byte order. */
FUZZ_REFERENCE
static int same_elem(dt_dtype d, const unsigned char *got, const unsigned char *want) {
  size_t size = dt_size(d.type);
  unsigned char g[16], w[16];
  if (memcmp(got, want, size) == 0) return 1;
  memcpy(g, got, size);
  memcpy(w, want, size);
  if (dt_swapped(d)) {
    dt_byteswap(g, 1, d);
    dt_byteswap(w, 1, d);
  }
  if (d.type == DT_COMPLEX64 || d.type == DT_COMPLEX128) {
    dt_type part = d.type == DT_COMPLEX64 ? DT_FLOAT32 : DT_FLOAT64;
    size_t h = size / 2;
    return (memcmp(g, w, h) == 0 || (elem_nan(part, g) && elem_nan(part, w))) &&
           (memcmp(g + h, w + h, h) == 0 || (elem_nan(part, g + h) && elem_nan(part, w + h)));
  }
  return elem_nan(d.type, g) && elem_nan(d.type, w);
}

FUZZ_REFERENCE
static void put_half(unsigned char *o, double v) {
  uint16_t h = dt_double_to_half(v);
  memcpy(o, &h, 2);
}

/* Store a computed value of type t (native) from a float or double. */
FUZZ_REFERENCE
static void put_real(dt_type t, unsigned char *o, double v) {
  float f = (float)v;
  if (t == DT_FLOAT16)
    put_half(o, v);
  else if (t == DT_FLOAT32)
    memcpy(o, &f, 4);
  else
    memcpy(o, &v, 8);
}

FUZZ_REFERENCE
static int64_t as_i64(const dt_value *v) { return v->kind == DT_KIND_UINT ? (int64_t)v->u : v->i; }

/* C's conversion of the element to float / double (int64 rounds once). */
FUZZ_REFERENCE
static float to_f32(const dt_value *v) {
  return v->kind == DT_KIND_INT || v->kind == DT_KIND_BOOL ? (float)v->i
         : v->kind == DT_KIND_UINT                         ? (float)v->u
                                                           : (float)v->re;
}

/* Where element i (C order) of an array (an input, or a result parsed from
** the bytes an operation made) is. */
FUZZ_REFERENCE
static const unsigned char *res_elem(const npy_array *r, uint64_t i) {
  return r->fortran_order ? r->data + npy_element_offset(r, i) : r->data + i * dt_size(r->dtype.type);
}

/* The elements of the two input arrays, loaded once (in C order): the
** checks read each many times. */
static struct {
  const npy_array *x;
  dt_value *v;
} loaded[2];

FUZZ_REFERENCE
static void load_all(int k, const npy_array *x) {
  uint64_t i;
  loaded[k].x = x;
  loaded[k].v = malloc((size_t)(x->numel ? x->numel : 1) * sizeof(dt_value));
  FUZZ_CHECK(loaded[k].v != NULL);
  for (i = 0; i < x->numel; i++) dt_load(res_elem(x, i), x->dtype, &loaded[k].v[i]);
}

/* Element i (C order) of x. */
FUZZ_REFERENCE
static void load(const npy_array *x, uint64_t i, dt_value *v) {
  int k;
  for (k = 0; k < 2; k++)
    if (loaded[k].x == x) {
      *v = loaded[k].v[i];
      return;
    }
  dt_load(x->data + npy_element_offset(x, i), x->dtype, v);
}

/* --- references ---------------------------------------------------------------- */

/* a OP b in result type t (native), as arraymath.h documents it. */
FUZZ_REFERENCE
static void ref_binary(int op, dt_type t, const dt_value *x, const dt_value *y, unsigned char *o) {
  char kind = dt_kind(t);
  if (kind == DT_KIND_BOOL || kind == DT_KIND_INT || kind == DT_KIND_UINT) {
    uint64_t a = (uint64_t)as_i64(x), b = (uint64_t)as_i64(y), r = op == KN_ADD ? a + b : op == KN_SUB ? a - b : a * b;
    dt_value v;
    dt_value_int(&v, (int64_t)r);
    FUZZ_CHECK(dt_store(o, dt_native(t), &v) == 0);
  } else if (t == DT_FLOAT16 || t == DT_FLOAT32) {
    float a = (float)x->re, b = (float)y->re, r = op == KN_ADD ? a + b : op == KN_SUB ? a - b : a * b;
    put_real(t, o, r);
  } else if (t == DT_FLOAT64) {
    double a = x->re, b = y->re;
    put_real(t, o, op == KN_ADD ? a + b : op == KN_SUB ? a - b : a * b);
  } else if (t == DT_COMPLEX64) {
    float ar = (float)x->re, ai = (float)x->im, br = (float)y->re, bi = (float)y->im, r[2];
    r[0] = op == KN_ADD ? ar + br : op == KN_SUB ? ar - br : ar * br - ai * bi;
    r[1] = op == KN_ADD ? ai + bi : op == KN_SUB ? ai - bi : ar * bi + ai * br;
    memcpy(o, r, 8);
  } else {
    double ar = x->re, ai = x->im, br = y->re, bi = y->im, r[2];
    r[0] = op == KN_ADD ? ar + br : op == KN_SUB ? ar - br : ar * br - ai * bi;
    r[1] = op == KN_ADD ? ai + bi : op == KN_SUB ? ai - bi : ar * bi + ai * br;
    memcpy(o, r, 16);
  }
}

/* x * s (result type t: floating or complex). */
FUZZ_REFERENCE
static void ref_scale(dt_type t, const dt_value *x, double s, unsigned char *o) {
  float sf = t == DT_FLOAT16 ? (float)dt_half_to_double(dt_double_to_half(s)) : (float)s, z = 0;
  if (t == DT_FLOAT16 || t == DT_FLOAT32) {
    put_real(t, o, (float)x->re * sf);
  } else if (t == DT_FLOAT64) {
    put_real(t, o, x->re * s);
  } else if (t == DT_COMPLEX64) {
    float xr = (float)x->re, xi = (float)x->im, r[2];
    r[0] = xr * sf - xi * z;
    r[1] = xr * z + xi * sf;
    memcpy(o, r, 8);
  } else {
    double xr = x->re, xi = x->im, zd = 0, r[2];
    r[0] = xr * s - xi * zd;
    r[1] = xr * zd + xi * s;
    memcpy(o, r, 16);
  }
}

/* x.astype(to) into o (to's byte order); 0, or 1 when NumPy leaves the
** value undefined (a NaN, infinity or out-of-range float to an integer). */
FUZZ_REFERENCE
static int ref_cast(dt_type from, dt_dtype to, const dt_value *x, unsigned char *o) {
  dt_type t = (dt_type)to.type;
  char kind = dt_kind(t);
  dt_dtype native = dt_native(t);
  if (t == DT_FLOAT16) {
    if (from == DT_FLOAT64 || from == DT_COMPLEX128)
      put_half(o, x->re);
    else
      put_half(o, (double)to_f32(x));
  } else if (t == DT_FLOAT32) {
    float f = to_f32(x);
    memcpy(o, &f, 4);
  } else if (t == DT_COMPLEX64) {
    float r[2];
    r[0] = to_f32(x);
    r[1] = (float)x->im;
    memcpy(o, r, 8);
  } else if (kind == DT_KIND_FLOAT || kind == DT_KIND_COMPLEX || kind == DT_KIND_BOOL || x->kind == DT_KIND_FLOAT ||
             x->kind == DT_KIND_COMPLEX) {
    /* float64 / complex128 (exact from double; integers as C converts),
    ** bool (non-zero), float to integer (truncating, range-checked) */
    dt_value v = *x;
    if (x->kind == DT_KIND_COMPLEX && kind != DT_KIND_COMPLEX && kind != DT_KIND_BOOL) v.kind = DT_KIND_FLOAT;
    if (dt_store(o, native, &v)) return 1;
  } else {
    dt_value v;
    dt_value_int(&v, as_i64(x)); /* integers wrap */
    FUZZ_CHECK(dt_store(o, native, &v) == 0);
  }
  if (dt_swapped(to)) dt_byteswap(o, 1, to);
  return 0;
}

/* --- the checks ------------------------------------------------------------------ */

static unsigned char *scratch;

/* Plan and run op; parse the result .npy into r (held in out). */
FUZZ_REFERENCE
static int run_op(const am_op *op, const npy_array *a, const npy_array *b, buf_t *out, npy_array *r, codec_err *err) {
  npy_array res;
  unsigned char *dst;
  int rc = am_plan(op, a, b, &res, err);
  buf_init(out, UINT64_MAX);
  if (rc) return rc;
  FUZZ_CHECK((dst = npy_begin(out, &res)) != NULL);
  rc = am_run(op, a, b, &res, dst, scratch, err);
  if (rc) return rc;
  FUZZ_CHECK(npy_parse(out->p, out->n, r, err) == CODEC_OK);
  FUZZ_CHECK(r->dtype.type == res.dtype.type && r->dtype.big == res.dtype.big && r->numel == res.numel &&
             r->ndim == res.ndim && r->fortran_order == res.fortran_order && r->trailing == 0);
  /* Fortran order only where np.save would write it. */
  FUZZ_CHECK(!r->fortran_order || am_is_fortran(r));
  return CODEC_OK;
}

FUZZ_REFERENCE
static void check_binary(const npy_array *a, const npy_array *b) {
  int op;
  for (op = KN_ADD; op <= KN_MUL; op++) {
    am_op o = {AM_OP_BINARY, 0, 0, {0, 0}, 0, NULL};
    buf_t out;
    npy_array r;
    codec_err err;
    int rc;
    uint64_t i;
    o.binop = op;
    err.msg[0] = 0;
    rc = run_op(&o, a, b, &out, &r, &err);
    if (rc) {
      fuzz_check_error(rc, &err);
      FUZZ_CHECK(rc == CODEC_RANGE);
      FUZZ_CHECK((a->ndim && b->ndim &&
                  (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))) ||
                 (op == KN_SUB && am_promote((dt_type)a->dtype.type, (dt_type)b->dtype.type) == DT_BOOL));
    } else {
      FUZZ_CHECK(r.dtype.type == am_promote((dt_type)a->dtype.type, (dt_type)b->dtype.type) && !dt_swapped(r.dtype));
      FUZZ_CHECK(r.numel == (a->ndim ? a->numel : b->numel));
      for (i = 0; i < r.numel; i++) {
        dt_value x, y;
        unsigned char want[16];
        load(a, a->ndim ? i : 0, &x);
        load(b, b->ndim ? i : 0, &y);
        ref_binary(op, (dt_type)r.dtype.type, &x, &y, want);
        FUZZ_CHECK(same_elem(r.dtype, res_elem(&r, i), want));
      }
    }
    buf_free(&out);
  }
}

FUZZ_REFERENCE
static void check_scale(const npy_array *a, double s) {
  am_op o = {AM_OP_SCALE, 0, 0, {0, 0}, 0, NULL};
  buf_t out;
  npy_array r;
  codec_err err;
  uint64_t i;
  o.s = s;
  FUZZ_CHECK(run_op(&o, a, NULL, &out, &r, &err) == CODEC_OK);
  for (i = 0; i < r.numel; i++) {
    dt_value x;
    unsigned char want[16];
    load(a, i, &x);
    ref_scale((dt_type)r.dtype.type, &x, s, want);
    FUZZ_CHECK(same_elem(r.dtype, res_elem(&r, i), want));
  }
  buf_free(&out);
}

FUZZ_REFERENCE
static void check_cast(const npy_array *a, dt_dtype to) {
  am_op o = {AM_OP_CAST, 0, 0, {0, 0}, 0, NULL};
  buf_t out;
  npy_array r;
  codec_err err;
  uint64_t i;
  int rc, undefined = 0;
  o.to = to;
  err.msg[0] = 0;
  rc = run_op(&o, a, NULL, &out, &r, &err);
  if (rc == CODEC_OK)
    FUZZ_CHECK(r.dtype.type == to.type && r.dtype.big == to.big);
  else
    fuzz_check_error(rc, &err);
  for (i = 0; i < a->numel; i++) {
    dt_value x;
    unsigned char want[16];
    load(a, i, &x);
    if (ref_cast((dt_type)a->dtype.type, to, &x, want)) {
      undefined = 1;
      continue;
    }
    if (rc == CODEC_OK) FUZZ_CHECK(same_elem(to, res_elem(&r, i), want));
  }
  /* An error exactly when some value has no defined result. */
  FUZZ_CHECK(rc == (undefined ? CODEC_RANGE : CODEC_OK));
  buf_free(&out);
}

/* Reshape to one dimension, then to the reversed shape: the C-order
** elements stay the same bytes. */
FUZZ_REFERENCE
static void check_reshape(const npy_array *a) {
  am_op o = {AM_OP_RESHAPE, 0, 0, {0, 0}, 0, NULL};
  int64_t flat = -1, rev[NPY_MAX_DIMS];
  buf_t out, out2;
  npy_array r, r2;
  codec_err err;
  uint64_t i;
  int k;
  size_t size = dt_size(a->dtype.type);
  o.ndim = 1;
  o.shape = &flat;
  FUZZ_CHECK(run_op(&o, a, NULL, &out, &r, &err) == CODEC_OK);
  FUZZ_CHECK(r.ndim == 1 && (uint64_t)r.shape[0] == a->numel && r.dtype.big == a->dtype.big && !r.fortran_order);
  for (i = 0; i < a->numel; i++) FUZZ_CHECK(memcmp(res_elem(&r, i), a->data + npy_element_offset(a, i), size) == 0);
  for (k = 0; k < a->ndim; k++) rev[k] = a->shape[a->ndim - 1 - k];
  o.ndim = a->ndim;
  o.shape = rev;
  FUZZ_CHECK(run_op(&o, &r, NULL, &out2, &r2, &err) == CODEC_OK);
  for (i = 0; i < a->numel; i++) FUZZ_CHECK(memcmp(res_elem(&r2, i), a->data + npy_element_offset(a, i), size) == 0);
  buf_free(&out);
  buf_free(&out2);
  /* A shape of another size is refused. */
  flat = (int64_t)a->numel + 1;
  o.ndim = 1;
  o.shape = &flat;
  err.msg[0] = 0;
  k = run_op(&o, a, NULL, &out, &r, &err);
  FUZZ_CHECK(k == CODEC_RANGE);
  fuzz_check_error(k, &err);
  buf_free(&out);
}

/* Sums of floats: pairwise in double; against a long double sum, within a
** bound that grows with log2(n) ulps of the sum of magnitudes. */
FUZZ_REFERENCE
static void check_close_sum(double got, long double want, long double mag, uint64_t n) {
  long double bound = mag * 1e-15L * (4 + (long double)(n > 1 ? log2((double)n) : 0)) + (long double)n * 1e-300L;
  if (!isfinite((double)want) || !isfinite((double)mag) || mag > 1e300L) return;
  FUZZ_CHECK(fabsl((long double)got - want) <= bound);
}

FUZZ_REFERENCE
static void check_reduce(const npy_array *a) {
  dt_type t = (dt_type)a->dtype.type;
  char kind = dt_kind(t);
  int cplx = kind == DT_KIND_COMPLEX, integral = kind != DT_KIND_FLOAT && !cplx, anynan = 0;
  i128 isum = 0;
  long double fsum = 0, fsum_im = 0, mag = 0, sq = 0;
  uint64_t i, nonfinite = 0;
  int64_t imin = 0, imax = 0;
  uint64_t umin = 0, umax = 0;
  double fmin = 0, fmax = 0, maxabs = 0;
  am_stats st, st2;
  for (i = 0; i < a->numel; i++) {
    dt_value v;
    load(a, i, &v);
    if (integral) {
      isum += kind == DT_KIND_UINT ? (i128)v.u : (i128)v.i;
      if (kind == DT_KIND_UINT) {
        if (!i || v.u < umin) umin = v.u;
        if (!i || v.u > umax) umax = v.u;
      } else {
        if (!i || v.i < imin) imin = v.i;
        if (!i || v.i > imax) imax = v.i;
      }
    } else {
      fsum += v.re;
      fsum_im += v.im;
      mag += fabsl((long double)v.re) + fabsl((long double)v.im);
      sq += (long double)v.re * v.re + (long double)v.im * v.im;
      if (isnan(v.re) || isnan(v.im)) anynan = 1;
      if (!isfinite(v.re) || !isfinite(v.im)) nonfinite++;
      if (!cplx) {
        if (!i || v.re < fmin) fmin = v.re;
        if (!i || v.re > fmax) fmax = v.re;
        if (fabs(v.re) > maxabs) maxabs = fabs(v.re);
      }
    }
  }
  am_reduce(a, AM_SUM | AM_MINMAX | AM_STD | AM_SUMSQ | AM_SUMABS | AM_MAXABS | AM_NONFINITE, &st, scratch);
  FUZZ_CHECK(st.count == a->numel && st.is_complex == cplx);
  if (integral) {
    FUZZ_CHECK(st.sum_re == (double)isum && st.sum_im == 0 && st.nonfinite == 0);
    if (a->numel) {
      FUZZ_CHECK(st.min_kind == (kind == DT_KIND_UINT ? DT_KIND_UINT : DT_KIND_INT));
      if (kind == DT_KIND_UINT)
        FUZZ_CHECK(st.umin == umin && st.umax == umax);
      else
        FUZZ_CHECK(st.imin == imin && st.imax == imax);
    }
  } else {
    FUZZ_CHECK(st.nonfinite == nonfinite);
    if (!anynan && !nonfinite) {
      check_close_sum(st.sum_re, fsum, mag, a->numel);
      check_close_sum(st.sum_im, fsum_im, mag, a->numel);
      if (!cplx) check_close_sum(st.sumabs, mag, mag, a->numel);
      if (sq < 1e300L) check_close_sum(st.sumsq, sq, sq, a->numel);
    }
    if (!cplx && a->numel) {
      FUZZ_CHECK(st.min_kind == DT_KIND_FLOAT);
      if (anynan)
        FUZZ_CHECK(isnan(st.fmin) && isnan(st.fmax) && isnan(st.maxabs));
      else
        FUZZ_CHECK(st.fmin == fmin && st.fmax == fmax && st.maxabs == maxabs);
    }
    if (cplx) FUZZ_CHECK(st.min_kind == 0);
  }
  FUZZ_CHECK(!(st.m2 < 0));
  /* Asking for less gives the same numbers. */
  am_reduce(a, AM_SUM, &st2, scratch);
  FUZZ_CHECK((st2.sum_re == st.sum_re || (isnan(st2.sum_re) && isnan(st.sum_re))));
  if (!cplx) {
    am_reduce(a, AM_MIN, &st2, scratch);
    FUZZ_CHECK(!a->numel || st2.min_kind == st.min_kind);
    if (a->numel && kind == DT_KIND_FLOAT) FUZZ_CHECK(st2.fmin == st.fmin || (isnan(st2.fmin) && isnan(st.fmin)));
  }
}

/* Dot products of small integers are exact; allclose against the formula. */
FUZZ_REFERENCE
static void check_pairwise(const npy_array *a, const npy_array *b) {
  am_dot_result d;
  codec_err err;
  int rc, close, cplx = dt_kind(a->dtype.type) == DT_KIND_COMPLEX || dt_kind(b->dtype.type) == DT_KIND_COMPLEX;
  int same = a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0, exact = 1;
  int64_t dot = 0;
  uint64_t i;
  err.msg[0] = 0;
  rc = am_dot(a, b, 1, &d, scratch, &err);
  if (!same) {
    FUZZ_CHECK(rc == CODEC_RANGE);
    fuzz_check_error(rc, &err);
  } else {
    FUZZ_CHECK(rc == CODEC_OK);
    for (i = 0; i < a->numel && !cplx; i++) {
      dt_value x, y;
      load(a, i, &x);
      load(b, i, &y);
      if (dt_kind(a->dtype.type) == DT_KIND_FLOAT || dt_kind(b->dtype.type) == DT_KIND_FLOAT || fabs(x.re) >= 1048576 ||
          fabs(y.re) >= 1048576) {
        exact = 0;
        break;
      }
      dot += (int64_t)x.re * (int64_t)y.re;
    }
    if (!cplx && exact) FUZZ_CHECK(d.re == (double)dot && d.im == 0);
  }
  rc = am_allclose(a, b, 1e-5, 1e-8, &close, scratch, &err);
  if (rc) {
    FUZZ_CHECK(rc == CODEC_RANGE && a->ndim && b->ndim && !same);
    return;
  }
  if (!cplx) {
    int want = 1;
    uint64_t n = a->ndim ? a->numel : b->numel;
    for (i = 0; i < n && want; i++) {
      dt_value x, y;
      load(a, a->ndim ? i : 0, &x);
      load(b, b->ndim ? i : 0, &y);
      want = isfinite(x.re) && isfinite(y.re) ? fabs(x.re - y.re) <= 1e-8 + 1e-5 * fabs(y.re) : x.re == y.re;
    }
    FUZZ_CHECK(close == want);
  }
  /* Anything is close to itself unless it holds a NaN. */
  FUZZ_CHECK(am_allclose(a, a, 0, 0, &close, scratch, &err) == CODEC_OK);
  {
    int nan = 0;
    for (i = 0; i < a->numel && !nan; i++) {
      dt_value v;
      load(a, i, &v);
      nan = isnan(v.re) || isnan(v.im);
    }
    FUZZ_CHECK(close == !nan);
  }
}

/* The accumulators of the aggregates, in C order. */
FUZZ_REFERENCE
static void check_accumulate(const npy_array *a, const npy_array *b, double w) {
  dt_type t = (dt_type)a->dtype.type;
  char kind = dt_kind(t);
  size_t size = dt_size(t), pairs = kind == DT_KIND_COMPLEX ? 2 : 1;
  uint64_t n = a->numel, i;
  double *acc = malloc((size_t)(n ? n : 1) * 16);
  unsigned char *m = malloc((size_t)(n ? n : 1) * 16);
  FUZZ_CHECK(acc && m);
  am_axpy(a, 0, w, acc, 1, scratch);
  for (i = 0; i < n; i++) {
    dt_value v;
    load(a, i, &v);
    FUZZ_CHECK(acc[pairs * i] == w * v.re || (isnan(acc[pairs * i]) && isnan(w * v.re)));
    if (pairs == 2) FUZZ_CHECK(acc[2 * i + 1] == w * v.im || (isnan(acc[2 * i + 1]) && isnan(w * v.im)));
  }
  if (kind != DT_KIND_FLOAT && kind != DT_KIND_COMPLEX) {
    int64_t *q = (int64_t *)acc;
    am_add_int(a, 0, q, 1, scratch);
    am_add_int(a, 0, q, 0, scratch);
    for (i = 0; i < n; i++) {
      dt_value v;
      load(a, i, &v);
      FUZZ_CHECK((uint64_t)q[i] == 2 * (uint64_t)as_i64(&v));
    }
  }
  /* Native C-order copy, then elementwise min/max with b (same dtype only). */
  am_copy_native(a, 0, m, scratch);
  for (i = 0; i < n; i++) {
    unsigned char want[16];
    memcpy(want, a->data + npy_element_offset(a, i), size);
    if (dt_swapped(a->dtype)) dt_byteswap(want, 1, a->dtype);
    FUZZ_CHECK(memcmp(m + i * size, want, size) == 0);
  }
  if (kind != DT_KIND_COMPLEX && b->dtype.type == t && b->numel == n && b->ndim == a->ndim &&
      memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0) {
    int want_max;
    for (want_max = 0; want_max < 2; want_max++) {
      am_elem_minmax(a, 0, m, want_max, 1, scratch);
      am_elem_minmax(b, 0, m, want_max, 0, scratch);
      for (i = 0; i < n; i++) {
        dt_value x, y, r;
        const dt_value *pick;
        load(a, i, &x);
        load(b, i, &y);
        dt_load(m + i * size, dt_native(t), &r);
        if (kind == DT_KIND_FLOAT && (isnan(x.re) || isnan(y.re))) {
          FUZZ_CHECK(isnan(r.re));
          continue;
        }
        if (kind == DT_KIND_UINT)
          pick = (want_max ? y.u > x.u : y.u < x.u) ? &y : &x;
        else if (kind == DT_KIND_FLOAT)
          pick = (want_max ? y.re > x.re : y.re < x.re) ? &y : &x;
        else
          pick = (want_max ? y.i > x.i : y.i < x.i) ? &y : &x;
        FUZZ_CHECK(kind == DT_KIND_UINT ? r.u == pick->u : kind == DT_KIND_FLOAT ? r.re == pick->re : r.i == pick->i);
      }
    }
  }
  free(acc);
  free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char head[HEAD];
  dt_dtype da, db, to;
  int flags, ndim, k, fortran_a, fortran_b;
  int64_t shape[4], bshape[4];
  double s;
  size_t cursor = 0;
  arr a, b;
  const uint8_t *payload = size > HEAD ? data + HEAD : NULL;
  size_t npayload = size > HEAD ? size - HEAD : 0;
  memset(head, 0, sizeof(head));
  memcpy(head, data, size < HEAD ? size : HEAD);
  if (!scratch) FUZZ_CHECK((scratch = am_scratch()) != NULL);
  da.type = (unsigned char)(head[0] % DT_NTYPES);
  db.type = (unsigned char)(head[1] % DT_NTYPES);
  flags = head[2];
  da.big = (unsigned char)((flags & 1) && dt_size(da.type) > 1);
  db.big = (unsigned char)((flags & 2) && dt_size(db.type) > 1);
  to.type = (unsigned char)(head[8] % DT_NTYPES);
  to.big = (unsigned char)((head[8] & 0x80) && dt_size(to.type) > 1);
  if (head[3] & 0x80) {
    ndim = 1 + head[3] % 2;
    shape[0] = 1000 + head[4];
    shape[1] = 1 + head[5] % 3;
  } else {
    ndim = head[3] % 5;
    for (k = 0; k < ndim; k++) shape[k] = head[4 + k] % 5;
  }
  for (k = 0; k < ndim; k++) bshape[k] = (flags & 64) ? shape[ndim - 1 - k] : shape[k];
  memcpy(&s, head + 16, 8);
  fortran_a = (flags & 4) != 0;
  fortran_b = (flags & 8) != 0;
  make(&a, da, (flags & 16) ? 0 : ndim, shape, fortran_a, payload, npayload, &cursor);
  make(&b, db, (flags & 32) ? 0 : ndim, bshape, fortran_b, payload, npayload, &cursor);
  load_all(0, &a.a);
  load_all(1, &b.a);

  check_binary(&a.a, &b.a);
  check_scale(&a.a, s);
  check_cast(&a.a, to);
  check_cast(&b.a, to);
  check_reshape(&a.a);
  check_reduce(&a.a);
  check_reduce(&b.a);
  check_pairwise(&a.a, &b.a);
  check_accumulate(&a.a, &b.a, s);
  free(loaded[0].v);
  free(loaded[1].v);
  memset(loaded, 0, sizeof(loaded));
  buf_free(&a.buf);
  buf_free(&b.buf);
  return 0;
}
