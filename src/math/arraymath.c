/* SPDX-License-Identifier: Apache-2.0 */
/*
** arraymath.c — whole-array arithmetic on npy_array views (see arraymath.h).
**
** Layout of the scratch memory every operation is given (AM_SCRATCH bytes):
** six slots of KN_BLOCK * 16 bytes, one block of the widest type each.
*/
#include "math/arraymath.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "math/pool.h"

#define SLOT ((size_t)KN_BLOCK * 16)
#define SCRATCH(s, i) ((s) + (size_t)(i)*SLOT)

static size_t block_len(uint64_t numel, uint64_t pos) {
  return numel - pos < KN_BLOCK ? (size_t)(numel - pos) : KN_BLOCK;
}

/* Elements per step of a loop: all that are left when every operand is
** read in place and the step needs no scratch (one kernel call for the
** whole array, no per-block overhead), else a block. */
static size_t step_len(uint64_t numel, uint64_t pos, int whole) {
  return whole ? (size_t)(numel - pos) : block_len(numel, pos);
}

/* --- iteration ------------------------------------------------------------- */

static int nonunit_dims(int ndim, const int64_t *shape) {
  int k, n = 0;
  for (k = 0; k < ndim; k++) n += shape[k] > 1;
  return n;
}

int am_is_fortran(const npy_array *a) {
  return a->fortran_order && a->numel > 1 && nonunit_dims(a->ndim, a->shape) >= 2;
}

void am_iter_init(am_iter *it, const npy_array *a, int fortran, int native) {
  uint64_t stride[NPY_MAX_DIMS], s = 1;
  int j, k;
  it->data = a->data;
  it->dtype = a->dtype;
  it->itemsize = dt_size(a->dtype.type);
  it->numel = a->numel;
  it->pos = 0;
  it->swap = native && dt_swapped(a->dtype);
  it->direct = nonunit_dims(a->ndim, a->shape) < 2 || a->numel == 0 || am_is_fortran(a) == (fortran != 0);
  it->ndim = 0;
  it->off = 0;
  if (it->direct) return;
  /* Strides of the storage, in elements; the walk visits the dimensions
  ** last-fastest, so a Fortran walk takes them in reverse. */
  if (a->fortran_order) {
    for (k = 0; k < a->ndim; k++) {
      stride[k] = s;
      s *= (uint64_t)a->shape[k];
    }
  } else {
    for (k = a->ndim - 1; k >= 0; k--) {
      stride[k] = s;
      s *= (uint64_t)a->shape[k];
    }
  }
  for (j = 0; j < a->ndim; j++) {
    k = fortran ? a->ndim - 1 - j : j;
    if (a->shape[k] == 1) continue;
    it->shape[it->ndim] = (uint64_t)a->shape[k];
    it->stride[it->ndim] = stride[k];
    it->idx[it->ndim] = 0;
    it->ndim++;
  }
}

static void copy_strided(unsigned char *dst, const unsigned char *src, size_t run, uint64_t stride, size_t itemsize) {
  size_t i, step = (size_t)stride * itemsize;
  switch (itemsize) {
    case 1:
      for (i = 0; i < run; i++) dst[i] = src[i * step];
      break;
    case 2:
      for (i = 0; i < run; i++) memcpy(dst + 2 * i, src + i * step, 2);
      break;
    case 4:
      for (i = 0; i < run; i++) memcpy(dst + 4 * i, src + i * step, 4);
      break;
    case 8:
      for (i = 0; i < run; i++) memcpy(dst + 8 * i, src + i * step, 8);
      break;
    default:
      for (i = 0; i < run; i++) memcpy(dst + 16 * i, src + i * step, 16);
      break;
  }
}

/* Copy the next n elements of a gather walk, row by row of its last
** dimension, carrying into the outer indices like an odometer. */
static void gather(am_iter *it, size_t n, unsigned char *dst) {
  int last = it->ndim - 1, k;
  while (n) {
    uint64_t left = it->shape[last] - it->idx[last];
    size_t run = left < n ? (size_t)left : n;
    copy_strided(dst, it->data + it->off * it->itemsize, run, it->stride[last], it->itemsize);
    dst += run * it->itemsize;
    n -= run;
    it->idx[last] += run;
    it->off += run * it->stride[last];
    if (it->idx[last] < it->shape[last]) continue;
    it->off -= it->shape[last] * it->stride[last];
    it->idx[last] = 0;
    for (k = last - 1; k >= 0; k--) {
      it->idx[k]++;
      it->off += it->stride[k];
      if (it->idx[k] < it->shape[k]) break;
      it->off -= it->shape[k] * it->stride[k];
      it->idx[k] = 0;
    }
  }
}

int am_iter_in_place(const am_iter *it) { return it->direct && !it->swap; }

const unsigned char *am_iter_next(am_iter *it, size_t n, unsigned char *scratch) {
  const unsigned char *p;
  if (it->direct) {
    p = it->data + it->pos * it->itemsize;
    if (it->swap) {
      memcpy(scratch, p, n * it->itemsize);
      p = scratch;
    }
  } else {
    gather(it, n, scratch);
    p = scratch;
  }
  if (it->swap) dt_byteswap(scratch, n, it->dtype);
  it->pos += n;
  return p;
}

/* --- dtypes and results ----------------------------------------------------- */

static dt_type signed_of_size(size_t size) {
  return size == 1 ? DT_INT8 : size == 2 ? DT_INT16 : size == 4 ? DT_INT32 : DT_INT64;
}

/* The smallest float that holds an integer type's values, as NumPy promotes. */
static dt_type float_for_int(dt_type t) {
  size_t size = dt_size(t);
  return size == 1 ? DT_FLOAT16 : size == 2 ? DT_FLOAT32 : DT_FLOAT64;
}

static int is_integer(char kind) { return kind == DT_KIND_INT || kind == DT_KIND_UINT; }

dt_type am_promote(dt_type a, dt_type b) {
  char ka = dt_kind(a), kb = dt_kind(b);
  if (a == b || kb == DT_KIND_BOOL) return a;
  if (ka == DT_KIND_BOOL) return b;
  if (is_integer(ka) && is_integer(kb)) {
    dt_type s = ka == DT_KIND_INT ? a : b, u = ka == DT_KIND_INT ? b : a;
    if (ka == kb) return dt_size(a) >= dt_size(b) ? a : b;
    if (dt_size(u) < dt_size(s)) return s;
    return dt_size(u) == 8 ? DT_FLOAT64 : signed_of_size(2 * dt_size(u));
  }
  if (is_integer(ka)) return am_promote(float_for_int(a), b);
  if (is_integer(kb)) return am_promote(a, float_for_int(b));
  if (ka == kb) return dt_size(a) >= dt_size(b) ? a : b;
  {
    dt_type f = ka == DT_KIND_FLOAT ? a : b, c = ka == DT_KIND_FLOAT ? b : a;
    return dt_size(f) > dt_size(c) / 2 ? DT_COMPLEX128 : c;
  }
}

const char *am_shape_str(char *out, size_t cap, int ndim, const int64_t *shape) {
  size_t len = 1;
  int k;
  out[0] = '[';
  for (k = 0; k < ndim; k++) {
    char num[32];
    int w = snprintf(num, sizeof(num), "%s%lld", k ? "," : "", (long long)shape[k]);
    if (len + (size_t)w + 6 > cap) {
      memcpy(out + len, ",...", 4);
      len += 4;
      break;
    }
    memcpy(out + len, num, (size_t)w);
    len += (size_t)w;
  }
  out[len++] = ']';
  out[len] = 0;
  return out;
}

#define SHAPE_STR_MAX 80

static int same_shape(const npy_array *a, const npy_array *b) {
  return a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

static int shape_error(codec_err *err, const npy_array *a, const npy_array *b, const char *allowed) {
  char sa[SHAPE_STR_MAX], sb[SHAPE_STR_MAX];
  return codec_fail(err, CODEC_RANGE, "shapes %s and %s differ%s", am_shape_str(sa, sizeof(sa), a->ndim, a->shape),
                    am_shape_str(sb, sizeof(sb), b->ndim, b->shape), allowed);
}

/* A result description: dtype t (native), shape and order. */
static int describe(npy_array *res, dt_dtype d, const npy_array *shape_of, int fortran) {
  memset(res, 0, sizeof(*res));
  res->dtype = d;
  res->ndim = shape_of->ndim;
  memcpy(res->shape, shape_of->shape, sizeof(int64_t) * (size_t)shape_of->ndim);
  res->numel = shape_of->numel;
  res->fortran_order = fortran;
  return size_mul(res->numel, dt_size(d.type), &res->nbytes);
}

/* --- compute kinds --------------------------------------------------------- */

/* How results of a type are computed: integers and bool in wrapping int64,
** float16 and float32 in float (NumPy computes float16 in float32 and rounds
** once), float64 in double, complex in pairs of its own precision. */
enum { CK_I64, CK_F32, CK_F64, CK_C64, CK_C128 };

static int compute_kind(dt_type out) {
  switch (dt_kind(out)) {
    case DT_KIND_FLOAT: return out == DT_FLOAT64 ? CK_F64 : CK_F32;
    case DT_KIND_COMPLEX: return out == DT_COMPLEX64 ? CK_C64 : CK_C128;
    default: return CK_I64;
  }
}

static size_t ck_size(int ck) { return ck == CK_F32 ? 4 : ck == CK_C128 ? 16 : 8; }

/* Is type t already stored as compute kind ck? Then blocks are used as they are. */
static int ck_native(int ck, dt_type t) {
  switch (ck) {
    case CK_I64: return t == DT_INT64 || t == DT_UINT64;
    case CK_F32: return t == DT_FLOAT32;
    case CK_F64: return t == DT_FLOAT64;
    case CK_C64: return t == DT_COMPLEX64;
    default: return t == DT_COMPLEX128;
  }
}

static const void *ck_load(int ck, dt_type t, const unsigned char *p, size_t n, unsigned char *tmp) {
  if (ck_native(ck, t)) return p;
  switch (ck) {
    case CK_I64: kn_to_i64(t, p, (int64_t *)(void *)tmp, n); break;
    case CK_F32: kn_to_f32(t, p, (float *)(void *)tmp, n); break;
    case CK_F64: kn_to_f64(t, p, (double *)(void *)tmp, n); break;
    case CK_C64: kn_to_c64(t, p, (float *)(void *)tmp, n); break;
    default: kn_to_c128(t, p, (double *)(void *)tmp, n); break;
  }
  return tmp;
}

/* Store n computed values of kind ck as type out (when out is not ck itself). */
static void ck_store(int ck, dt_type out, const unsigned char *src, unsigned char *dst, size_t n) {
  if (ck == CK_I64)
    kn_from_i64(out, (const int64_t *)(const void *)src, dst, n);
  else
    kn_from_f32(out, (const float *)(const void *)src, dst, n);
}

/* The array's single element as compute kind ck, repeated KN_BLOCK times. */
static const void *ck_broadcast(int ck, const npy_array *a, unsigned char *raw, unsigned char *dst) {
  am_iter it;
  const void *v;
  size_t size = ck_size(ck), i;
  am_iter_init(&it, a, 0, 1);
  v = ck_load(ck, a->dtype.type, am_iter_next(&it, 1, raw), 1, dst);
  if (v != dst) memcpy(dst, v, size);
  for (i = 1; i < KN_BLOCK; i++) memcpy(dst + i * size, dst, size);
  return dst;
}

/* --- elementwise ---------------------------------------------------------- */

int am_binary_plan(int op, const npy_array *a, const npy_array *b, npy_array *res, codec_err *err) {
  dt_type t = am_promote(a->dtype.type, b->dtype.type);
  int a_scalar = a->ndim == 0, b_scalar = b->ndim == 0;
  if (!a_scalar && !b_scalar && !same_shape(a, b)) {
    return shape_error(err, a, b, " (arrays combine when their shapes are equal or one is a () scalar)");
  }
  if (t == DT_BOOL && op == KN_SUB) {
    return codec_fail(err, CODEC_RANGE,
                      "boolean subtract is not supported, as in NumPy (cast to an integer type first)");
  }
  if (describe(res, dt_native(t), a_scalar ? b : a, 0)) return codec_fail(err, CODEC_TOOBIG, "result too large");
  /* NumPy's K order: Fortran when every non-scalar operand is. */
  res->fortran_order = (a_scalar || am_is_fortran(a)) && (b_scalar || am_is_fortran(b)) && !(a_scalar && b_scalar);
  return CODEC_OK;
}

static void compute(int ck, int op, const void *a, const void *b, void *out, size_t n) {
  switch (ck) {
    case CK_I64: kn_binary_i64(op, a, b, out, n); break;
    case CK_F32: kn_binary_f32(op, a, b, out, n); break;
    case CK_F64: kn_binary_f64(op, a, b, out, n); break;
    case CK_C64: kn_binary_c64(op, a, b, out, n); break;
    default: kn_binary_c128(op, a, b, out, n); break;
  }
}

void am_binary_run(int op, const npy_array *a, const npy_array *b, const npy_array *res, unsigned char *dst,
                   unsigned char *scratch) {
  dt_type out = res->dtype.type;
  int ck = compute_kind(out), direct = ck_native(ck, out);
  int a_bcast = a->ndim == 0 && res->ndim != 0, b_bcast = b->ndim == 0 && res->ndim != 0;
  size_t osize = dt_size(out), m;
  const void *pa = NULL, *pb = NULL;
  am_iter ia, ib;
  uint64_t pos;
  int whole;
  am_iter_init(&ia, a, res->fortran_order, 1);
  am_iter_init(&ib, b, res->fortran_order, 1);
  if (a_bcast) pa = ck_broadcast(ck, a, SCRATCH(scratch, 0), SCRATCH(scratch, 2));
  if (b_bcast) pb = ck_broadcast(ck, b, SCRATCH(scratch, 1), SCRATCH(scratch, 3));
  whole = direct && !a_bcast && !b_bcast && am_iter_in_place(&ia) && am_iter_in_place(&ib) &&
          ck_native(ck, a->dtype.type) && ck_native(ck, b->dtype.type);
  for (pos = 0; pos < res->numel; pos += m) {
    unsigned char *o = dst + pos * osize;
    m = step_len(res->numel, pos, whole);
    if (!a_bcast) pa = ck_load(ck, a->dtype.type, am_iter_next(&ia, m, SCRATCH(scratch, 0)), m, SCRATCH(scratch, 2));
    if (!b_bcast) pb = ck_load(ck, b->dtype.type, am_iter_next(&ib, m, SCRATCH(scratch, 1)), m, SCRATCH(scratch, 3));
    if (direct) {
      compute(ck, op, pa, pb, o, m);
    } else {
      compute(ck, op, pa, pb, SCRATCH(scratch, 4), m);
      ck_store(ck, out, SCRATCH(scratch, 4), o, m);
    }
  }
}

void am_scale_plan(const npy_array *a, npy_array *res) {
  char kind = dt_kind(a->dtype.type);
  dt_type t = kind == DT_KIND_FLOAT || kind == DT_KIND_COMPLEX ? (dt_type)a->dtype.type : DT_FLOAT64;
  describe(res, dt_native(t), a, am_is_fortran(a)); /* nbytes <= a's when t is a's type; else 8 * numel */
}

void am_scale_run(const npy_array *a, double s, const npy_array *res, unsigned char *dst, unsigned char *scratch) {
  dt_type out = res->dtype.type;
  int ck = compute_kind(out);
  size_t osize = dt_size(out), m;
  /* NumPy casts the scalar to the array's type before multiplying. */
  float sf = out == DT_FLOAT16 ? (float)dt_half_to_double(dt_double_to_half(s)) : (float)s;
  am_iter it;
  uint64_t pos;
  int whole;
  am_iter_init(&it, a, res->fortran_order, 1);
  whole = am_iter_in_place(&it) && ck_native(ck, a->dtype.type) && (ck != CK_F32 || out == DT_FLOAT32);
  for (pos = 0; pos < res->numel; pos += m) {
    const void *x;
    unsigned char *o = dst + pos * osize;
    m = step_len(res->numel, pos, whole);
    x = ck_load(ck, a->dtype.type, am_iter_next(&it, m, SCRATCH(scratch, 0)), m, SCRATCH(scratch, 1));
    switch (ck) {
      case CK_F64: kn_scale_f64(x, s, o, m); break;
      case CK_C64: kn_scale_c64(x, sf, o, m); break;
      case CK_C128: kn_scale_c128(x, s, o, m); break;
      default:
        if (out == DT_FLOAT32) {
          kn_scale_f32(x, sf, o, m);
        } else {
          kn_scale_f32(x, sf, SCRATCH(scratch, 2), m);
          kn_from_f32(out, (const float *)(const void *)SCRATCH(scratch, 2), o, m);
        }
        break;
    }
  }
}

void am_cast_plan(const npy_array *a, dt_dtype to, npy_array *res) { describe(res, to, a, am_is_fortran(a)); }

/* The C-order flat index of the element at position pos of a Fortran walk. */
static uint64_t c_index_of(const npy_array *a, uint64_t pos) {
  uint64_t idx[NPY_MAX_DIMS], c = 0;
  int k;
  if (!am_is_fortran(a)) return pos;
  for (k = 0; k < a->ndim; k++) {
    idx[k] = pos % (uint64_t)a->shape[k];
    pos /= (uint64_t)a->shape[k];
  }
  for (k = 0; k < a->ndim; k++) c = c * (uint64_t)a->shape[k] + idx[k];
  return c;
}

int am_cast_run(const npy_array *a, const npy_array *res, unsigned char *dst, unsigned char *scratch, codec_err *err) {
  dt_type t = a->dtype.type, out = res->dtype.type;
  char from = dt_kind(t), to = dt_kind(out);
  size_t osize = dt_size(out), m, i;
  unsigned char *tmp = SCRATCH(scratch, 1);
  double *d = (double *)(void *)tmp;
  int64_t *q = (int64_t *)(void *)tmp;
  am_iter it;
  uint64_t pos;
  int whole;
  am_iter_init(&it, a, res->fortran_order, 1);
  whole = am_iter_in_place(&it) && (out == DT_FLOAT32 || out == DT_FLOAT64); /* converted straight into dst */
  for (pos = 0; pos < res->numel; pos += m) {
    const unsigned char *p;
    unsigned char *o = dst + pos * osize;
    m = step_len(res->numel, pos, whole);
    p = am_iter_next(&it, m, SCRATCH(scratch, 0));
    if (to == DT_KIND_FLOAT || to == DT_KIND_COMPLEX) {
      switch (out) {
        case DT_FLOAT16:
          /* Through float when that is exact for the values a half can hold
          ** (every source but float64 and complex128), so one rounding. */
          if (t == DT_FLOAT64 || t == DT_COMPLEX128) {
            kn_to_f64(t, p, d, m);
            kn_from_f64(out, d, o, m);
          } else {
            kn_to_f32(t, p, (float *)(void *)tmp, m);
            kn_from_f32(out, (const float *)(const void *)tmp, o, m);
          }
          break;
        case DT_FLOAT32: kn_to_f32(t, p, o, m); break; /* straight into the result */
        case DT_FLOAT64: kn_to_f64(t, p, o, m); break;
        case DT_COMPLEX64:
          kn_to_c64(t, p, (float *)(void *)tmp, m);
          memcpy(o, tmp, m * 8);
          break;
        default:
          kn_to_c128(t, p, d, m);
          memcpy(o, tmp, m * 16);
          break;
      }
    } else if (from != DT_KIND_FLOAT && from != DT_KIND_COMPLEX) {
      kn_to_i64(t, p, q, m); /* integers wrap, anything non-zero is True */
      kn_from_i64(out, q, o, m);
    } else if (to == DT_KIND_BOOL) {
      if (from == DT_KIND_COMPLEX) {
        kn_to_c128(t, p, d, m);
        for (i = 0; i < m; i++) o[i] = d[2 * i] != 0 || d[2 * i + 1] != 0;
      } else {
        kn_to_f64(t, p, d, m);
        for (i = 0; i < m; i++) o[i] = d[i] != 0;
      }
    } else {
      size_t bad;
      kn_to_f64(t, p, d, m); /* complex: the real part, as NumPy */
      bad = kn_f64_to_int(out, d, o, m);
      if (bad < m) {
        char name[DT_NAME_MAX];
        dt_name(res->dtype, name);
        return codec_fail(err, CODEC_RANGE, "cannot cast %.17g to %s (element %llu)", d[bad], name,
                          (unsigned long long)c_index_of(a, pos + bad));
      }
    }
    if (dt_swapped(res->dtype)) dt_byteswap(o, m, res->dtype);
  }
  return CODEC_OK;
}

int am_reshape_plan(const npy_array *a, int ndim, const int64_t *shape, npy_array *res, codec_err *err) {
  uint64_t known = 1;
  int k, unknown = -1, i, j;
  char s[SHAPE_STR_MAX];
  for (k = 0; k < ndim; k++) {
    if (shape[k] < 0) {
      if (unknown >= 0) return codec_fail(err, CODEC_RANGE, "only one dimension can be -1");
      unknown = k;
    } else if (size_mul(known, (uint64_t)shape[k], &known)) {
      return codec_fail(err, CODEC_RANGE, "shape %s is too large", am_shape_str(s, sizeof(s), ndim, shape));
    }
  }
  if ((unknown >= 0 && (known == 0 || a->numel % known)) || (unknown < 0 && known != a->numel)) {
    return codec_fail(err, CODEC_RANGE, "cannot reshape an array of %llu elements into shape %s",
                      (unsigned long long)a->numel, am_shape_str(s, sizeof(s), ndim, shape));
  }
  memset(res, 0, sizeof(*res));
  res->dtype = a->dtype;
  res->ndim = ndim;
  memcpy(res->shape, shape, sizeof(int64_t) * (size_t)ndim);
  if (unknown >= 0) res->shape[unknown] = (int64_t)(a->numel / known);
  res->numel = a->numel;
  res->nbytes = a->nbytes;
  /* NumPy returns a view, still in Fortran order, when only unit dimensions
  ** come or go; any other reshape of a Fortran array copies into C order. */
  if (am_is_fortran(a)) {
    for (i = 0, j = 0;; i++, j++) {
      while (i < a->ndim && a->shape[i] == 1) i++;
      while (j < res->ndim && res->shape[j] == 1) j++;
      if (i == a->ndim || j == res->ndim) {
        res->fortran_order = i == a->ndim && j == res->ndim;
        break;
      }
      if (a->shape[i] != res->shape[j]) break;
    }
  }
  return CODEC_OK;
}

/* dst (rows x cols, C order) = the matrix whose element (i, j) is at
** src + (i + j * stride) * SIZE: a transpose. It goes in bands of rows that
** share source cache lines, so each line is read once, not once per row. */
#define TRANSPOSE_BANDS(SIZE)                                                    \
  for (i0 = 0; i0 < rows; i0 += band) {                                          \
    uint64_t i1 = rows - i0 < band ? rows : i0 + band;                           \
    for (j = 0; j < cols; j++) {                                                 \
      const unsigned char *s = src + (j * stride + i0) * SIZE;                   \
      unsigned char *d = dst + (i0 * cols + j) * SIZE;                           \
      for (i = i0; i < i1; i++, s += SIZE, d += cols * SIZE) memcpy(d, s, SIZE); \
    }                                                                            \
  }

static void transpose_2d(unsigned char *dst, const unsigned char *src, uint64_t rows, uint64_t cols, uint64_t stride,
                         size_t size) {
  uint64_t i0, i, j, band = 256 / size;
  switch (size) {
    case 1: TRANSPOSE_BANDS(1) break;
    case 2: TRANSPOSE_BANDS(2) break;
    case 4: TRANSPOSE_BANDS(4) break;
    case 8: TRANSPOSE_BANDS(8) break;
    default: TRANSPOSE_BANDS(16) break;
  }
}

/* All of a's elements in the walk's order into dst (it just initialised):
** one memcpy when storage is the walk order, a band-wise transpose for a
** 2-d array walked across its storage (Fortran to C order or back), block
** by block through scratch otherwise; byte-swapped when the walk asks. */
static void copy_walk(am_iter *it, const npy_array *a, unsigned char *dst, unsigned char *scratch) {
  uint64_t pos;
  size_t m;
  if (it->direct || (it->ndim == 2 && it->stride[0] == 1)) {
    if (it->direct) {
      if (a->nbytes) memcpy(dst, a->data, (size_t)a->nbytes);
    } else {
      transpose_2d(dst, a->data, it->shape[0], it->shape[1], it->stride[1], it->itemsize);
    }
    if (it->swap) dt_byteswap(dst, (size_t)a->numel, a->dtype);
    return;
  }
  for (pos = 0; pos < a->numel; pos += m) {
    m = block_len(a->numel, pos);
    memcpy(dst + pos * it->itemsize, am_iter_next(it, m, scratch), m * it->itemsize);
  }
}

void am_reshape_run(const npy_array *a, const npy_array *res, unsigned char *dst, unsigned char *scratch) {
  am_iter it;
  am_iter_init(&it, a, res->fortran_order, 0); /* bytes as they are: the dtype is kept */
  copy_walk(&it, a, dst, scratch);
}

int am_plan(const am_op *op, const npy_array *a, const npy_array *b, npy_array *res, codec_err *err) {
  switch (op->kind) {
    case AM_OP_BINARY: return am_binary_plan(op->binop, a, b, res, err);
    case AM_OP_SCALE: am_scale_plan(a, res); return CODEC_OK;
    case AM_OP_CAST: am_cast_plan(a, op->to, res); return CODEC_OK;
    default: return am_reshape_plan(a, op->ndim, op->shape, res, err);
  }
}

int am_run(const am_op *op, const npy_array *a, const npy_array *b, const npy_array *res, unsigned char *dst,
           unsigned char *scratch, codec_err *err) {
  switch (op->kind) {
    case AM_OP_BINARY: am_binary_run(op->binop, a, b, res, dst, scratch); return CODEC_OK;
    case AM_OP_SCALE: am_scale_run(a, op->s, res, dst, scratch); return CODEC_OK;
    case AM_OP_CAST: return am_cast_run(a, res, dst, scratch, err);
    default: am_reshape_run(a, res, dst, scratch); return CODEC_OK;
  }
}

unsigned char *am_scratch(void) { return codec_malloc(AM_SCRATCH); }

/* --- reductions ----------------------------------------------------------- */

/* Block p (native) of type t as doubles: the block itself for float64. */
static const void *as_f64(dt_type t, const unsigned char *p, size_t m, unsigned char *tmp) {
  if (t == DT_FLOAT64) return p;
  kn_to_f64(t, p, (double *)(void *)tmp, m);
  return tmp;
}

static double first_f64(const void *x) {
  double v;
  memcpy(&v, x, 8);
  return v;
}

/* Sums of the real and imaginary parts of m (re, im) pairs. */
static void add_complex_sums(const double *z, size_t m, double *split, kn_cascade *re, kn_cascade *im) {
  size_t i;
  for (i = 0; i < m; i++) {
    split[i] = z[2 * i];
    split[m + i] = z[2 * i + 1];
  }
  kn_cascade_add(re, kn_sum(split, m));
  kn_cascade_add(im, kn_sum(split + m, m));
}

void am_reduce(const npy_array *a, unsigned what, am_stats *st, unsigned char *scratch) {
  dt_type t = a->dtype.type;
  char kind = dt_kind(t);
  int cplx = kind == DT_KIND_COMPLEX, nan = 0, absnan = 0, whole;
  int fortran = am_is_fortran(a);
  kn_cascade sre, sim, ssq, sabs, sdev;
  uint64_t isum[2] = {0, 0}; /* integer sums are exact */
  unsigned char *d1 = SCRATCH(scratch, 1), *d2 = SCRATCH(scratch, 2);
  am_iter it;
  uint64_t pos;
  size_t m;
  memset(st, 0, sizeof(*st));
  st->count = a->numel;
  st->is_complex = cplx;
  kn_cascade_init(&sre);
  kn_cascade_init(&sim);
  kn_cascade_init(&ssq);
  kn_cascade_init(&sabs);
  kn_cascade_init(&sdev);
  am_iter_init(&it, a, fortran, 1);
  /* Pairwise sums go block by block (the blocks are the leaves of the
  ** summation tree). Min, max and counts of float arrays that need no
  ** conversion take the whole array in one call, which keeps their vector
  ** lanes going instead of folding them every block. */
  whole = (t == DT_FLOAT32 || t == DT_FLOAT64) && am_iter_in_place(&it) && !(what & (AM_SUM | AM_SUMSQ | AM_SUMABS));
  for (pos = 0; pos < a->numel; pos += m) {
    const unsigned char *p;
    if (whole) {
      m = (size_t)a->numel;
      p = a->data;
    } else {
      m = block_len(a->numel, pos);
      p = am_iter_next(&it, m, SCRATCH(scratch, 0));
    }
    if (cplx) {
      double *z = (double *)(void *)d1;
      kn_to_c128(t, p, z, m);
      if (what & AM_SUM) add_complex_sums(z, m, (double *)(void *)d2, &sre, &sim);
      if (what & AM_SUMSQ) kn_cascade_add(&ssq, kn_sum_sq_c(z, m));
      if (what & AM_SUMABS) kn_cascade_add(&sabs, kn_sum_abs_c(z, m));
      if (what & AM_MAXABS) absnan |= kn_max_abs(z, m, 1, &st->maxabs);
      if (what & AM_NONFINITE) st->nonfinite += kn_count_nonfinite(z, m, 1);
      continue;
    }
    if (t == DT_FLOAT32) { /* the usual model dtype: no conversion pass */
      float lo = (float)st->fmin, hi = (float)st->fmax, amax = (float)st->maxabs;
      if (what & AM_SUM) kn_cascade_add(&sre, kn_sum_f32(p, m));
      if (what & AM_SUMSQ) kn_cascade_add(&ssq, kn_sum_sq_f32(p, m));
      if (what & AM_SUMABS) kn_cascade_add(&sabs, kn_sum_abs_f32(p, m));
      if (what & AM_NONFINITE) st->nonfinite += kn_count_nonfinite_f32(p, m);
      if (what & AM_MAXABS) {
        absnan |= kn_max_abs_f32(p, m, &amax);
        st->maxabs = amax;
      }
      if (what & AM_MINMAX) {
        if (pos == 0) memcpy(&lo, p, 4), hi = lo;
        nan |= kn_minmax_f32(p, m, (what & AM_MIN) ? &lo : NULL, (what & AM_MAX) ? &hi : NULL);
        st->fmin = lo;
        st->fmax = hi;
      }
      continue;
    }
    {
      const void *x = as_f64(t, p, m, d1);
      int64_t *q = (int64_t *)(void *)d2;
      if (kind != DT_KIND_FLOAT && (what & (AM_SUM | AM_MINMAX))) kn_to_i64(t, p, q, m);
      if ((what & AM_SUM) && kind == DT_KIND_FLOAT) kn_cascade_add(&sre, kn_sum(x, m));
      if ((what & AM_SUM) && kind != DT_KIND_FLOAT) kn_sum_int(q, m, kind == DT_KIND_UINT, isum);
      if (what & AM_SUMSQ) kn_cascade_add(&ssq, kn_sum_sq(x, m));
      if (what & AM_SUMABS) kn_cascade_add(&sabs, kn_sum_abs(x, m));
      if (what & AM_MAXABS) absnan |= kn_max_abs(x, m, 0, &st->maxabs);
      if ((what & AM_NONFINITE) && kind == DT_KIND_FLOAT) st->nonfinite += kn_count_nonfinite(x, m, 0);
      if (!(what & AM_MINMAX)) continue;
      if (kind == DT_KIND_FLOAT) {
        if (pos == 0) st->fmin = st->fmax = first_f64(x);
        nan |= kn_minmax(x, m, (what & AM_MIN) ? &st->fmin : NULL, (what & AM_MAX) ? &st->fmax : NULL);
      } else {
        if (kind == DT_KIND_UINT) {
          if (pos == 0) st->umin = st->umax = (uint64_t)q[0];
          kn_minmax_u64((const uint64_t *)q, m, &st->umin, &st->umax);
        } else {
          if (pos == 0) st->imin = st->imax = q[0];
          kn_minmax_i64(q, m, &st->imin, &st->imax);
        }
      }
    }
  }
  st->sum_re = kind == DT_KIND_FLOAT || cplx ? kn_cascade_sum(&sre) : kn_int128_to_double(isum);
  st->sum_im = kn_cascade_sum(&sim);
  st->sumsq = kn_cascade_sum(&ssq);
  st->sumabs = kn_cascade_sum(&sabs);
  if (absnan) st->maxabs = NAN;
  if ((what & AM_MINMAX) && a->numel && !cplx) {
    st->min_kind = kind == DT_KIND_FLOAT ? DT_KIND_FLOAT : kind == DT_KIND_UINT ? DT_KIND_UINT : DT_KIND_INT;
    if (nan) st->fmin = st->fmax = NAN;
  }
  if (!(what & AM_STD) || !a->numel) return;
  /* Second pass, as NumPy's std: sum of squared deviations from the mean. */
  {
    double mre = st->sum_re / (double)a->numel, mim = st->sum_im / (double)a->numel;
    am_iter_init(&it, a, fortran, 1);
    for (pos = 0; pos < a->numel; pos += m) {
      const unsigned char *p;
      m = block_len(a->numel, pos);
      p = am_iter_next(&it, m, SCRATCH(scratch, 0));
      if (cplx) {
        kn_to_c128(t, p, (double *)(void *)d1, m);
        kn_cascade_add(&sdev, kn_sum_sqdev_c(d1, mre, mim, m));
      } else if (t == DT_FLOAT32) {
        kn_cascade_add(&sdev, kn_sum_sqdev_f32(p, mre, m));
      } else {
        kn_cascade_add(&sdev, kn_sum_sqdev(as_f64(t, p, m, d1), mre, m));
      }
    }
    st->m2 = kn_cascade_sum(&sdev);
  }
}

int am_dot(const npy_array *a, const npy_array *b, int norms, am_dot_result *r, unsigned char *scratch,
           codec_err *err) {
  int cplx = dt_kind(a->dtype.type) == DT_KIND_COMPLEX || dt_kind(b->dtype.type) == DT_KIND_COMPLEX;
  int fortran = am_is_fortran(a);
  kn_cascade re, im, aa, bb;
  am_iter ia, ib;
  uint64_t pos;
  size_t m, i;
  if (!same_shape(a, b)) return shape_error(err, a, b, "");
  kn_cascade_init(&re);
  kn_cascade_init(&im);
  kn_cascade_init(&aa);
  kn_cascade_init(&bb);
  am_iter_init(&ia, a, fortran, 1);
  am_iter_init(&ib, b, fortran, 1);
  for (pos = 0; pos < a->numel; pos += m) {
    const unsigned char *pa, *pb;
    m = block_len(a->numel, pos);
    pa = am_iter_next(&ia, m, SCRATCH(scratch, 0));
    pb = am_iter_next(&ib, m, SCRATCH(scratch, 1));
    if (cplx) {
      double *za = (double *)(void *)SCRATCH(scratch, 2), *zb = (double *)(void *)SCRATCH(scratch, 3);
      double *pr = (double *)(void *)SCRATCH(scratch, 4), *pi = pr + m;
      kn_to_c128(a->dtype.type, pa, za, m);
      kn_to_c128(b->dtype.type, pb, zb, m);
      for (i = 0; i < m; i++) {
        pr[i] = za[2 * i] * zb[2 * i] - za[2 * i + 1] * zb[2 * i + 1];
        pi[i] = za[2 * i] * zb[2 * i + 1] + za[2 * i + 1] * zb[2 * i];
      }
      kn_cascade_add(&re, kn_sum(pr, m));
      kn_cascade_add(&im, kn_sum(pi, m));
      if (norms) {
        kn_cascade_add(&aa, kn_sum_sq_c(za, m));
        kn_cascade_add(&bb, kn_sum_sq_c(zb, m));
      }
    } else if (a->dtype.type == DT_FLOAT32 && b->dtype.type == DT_FLOAT32) {
      kn_cascade_add(&re, kn_sum_prod_f32(pa, pb, m));
      if (norms) {
        kn_cascade_add(&aa, kn_sum_sq_f32(pa, m));
        kn_cascade_add(&bb, kn_sum_sq_f32(pb, m));
      }
    } else {
      const void *xa = as_f64(a->dtype.type, pa, m, SCRATCH(scratch, 2));
      const void *xb = as_f64(b->dtype.type, pb, m, SCRATCH(scratch, 3));
      kn_cascade_add(&re, kn_sum_prod(xa, xb, m));
      if (norms) {
        kn_cascade_add(&aa, kn_sum_sq(xa, m));
        kn_cascade_add(&bb, kn_sum_sq(xb, m));
      }
    }
  }
  r->re = kn_cascade_sum(&re);
  r->im = kn_cascade_sum(&im);
  r->aa = kn_cascade_sum(&aa);
  r->bb = kn_cascade_sum(&bb);
  return CODEC_OK;
}

/* am_compare of two float32 (or two float64) arrays (and base) read in
** place: every block's numbers from one fused pass (kn_compare_block), the
** blocks shared among the pool's threads, then added in block order as the
** one-thread loop below adds them (the cascade of block sums), so the bits
** are its. */
typedef struct cmp_job {
  const unsigned char *pa, *pb, *pc; /* pc: the base, or NULL */
  size_t size;
  kn_cmp_block *blocks;
} cmp_job;

static void cmp_block(const cmp_job *j, uint64_t pos, size_t m, kn_cmp_block *out) {
  size_t at = (size_t)pos * j->size;
  kn_compare_block(j->size == 8, j->pa + at, j->pb + at, j->pc ? j->pc + at : NULL, m, out);
}

static void cmp_range(void *ctx, uint64_t begin, uint64_t end, unsigned char *scratch) {
  const cmp_job *j = ctx;
  uint64_t pos;
  size_t m;
  (void)scratch;
  for (pos = begin; pos < end; pos += m) {
    m = block_len(end, pos);
    cmp_block(j, pos, m, &j->blocks[pos / KN_BLOCK]);
  }
}

/* Blocks in order into the running sums (8: the base's last) and counts. */
static void cmp_add(const kn_cmp_block *k, kn_cascade *sums, am_compare_result *r) {
  kn_cascade_add(&sums[0], k->sa);
  kn_cascade_add(&sums[1], k->sb);
  kn_cascade_add(&sums[2], k->dot);
  kn_cascade_add(&sums[3], k->sd);
  kn_cascade_add(&sums[4], k->sdiff);
  kn_cascade_add(&sums[5], k->sd_a);
  kn_cascade_add(&sums[6], k->sd_b);
  kn_cascade_add(&sums[7], k->dot_base);
  r->maxabs_diff = k->maxabs > r->maxabs_diff ? k->maxabs : r->maxabs_diff;
  r->maxabs_nan |= k->nan;
  r->changed += k->changed;
  r->nonfinite_a += k->nf_a;
  r->nonfinite_b += k->nf_b;
}

static void cmp_sums(const kn_cascade *sums, int base, am_compare_result *r) {
  r->sumsq_a = kn_cascade_sum(&sums[0]);
  r->sumsq_b = kn_cascade_sum(&sums[1]);
  r->dot = kn_cascade_sum(&sums[2]);
  r->sumsq_diff = kn_cascade_sum(&sums[3]);
  r->sum_diff = kn_cascade_sum(&sums[4]);
  if (base) {
    r->sumsq_a_base = kn_cascade_sum(&sums[5]);
    r->sumsq_b_base = kn_cascade_sum(&sums[6]);
    r->dot_base = kn_cascade_sum(&sums[7]);
  }
}

/* The fused path: returns 0 when it does not apply (other dtypes, a walk
** that is not in place). */
static int compare_fused(const npy_array *a, const npy_array *b, const npy_array *base, int fortran,
                         am_compare_result *r) {
  dt_type t = a->dtype.type;
  am_iter ia, ib, ic;
  kn_cascade sums[8];
  cmp_job j;
  uint64_t pos, nblocks;
  size_t m, k;
  if ((t != DT_FLOAT32 && t != DT_FLOAT64) || b->dtype.type != t || (base && base->dtype.type != t)) return 0;
  am_iter_init(&ia, a, fortran, 1);
  am_iter_init(&ib, b, fortran, 1);
  if (!am_iter_in_place(&ia) || !am_iter_in_place(&ib)) return 0;
  if (base) {
    am_iter_init(&ic, base, fortran, 1);
    if (!am_iter_in_place(&ic)) return 0;
  }
  for (k = 0; k < 8; k++) kn_cascade_init(&sums[k]);
  j.pa = a->data;
  j.pb = b->data;
  j.pc = base ? base->data : NULL;
  j.size = dt_size(t);
  nblocks = (a->numel + KN_BLOCK - 1) / KN_BLOCK;
  j.blocks = a->numel >= 2 * (uint64_t)KN_BLOCK && pool_threads() > 1 && a->numel >= pool_min_elements()
                 ? codec_malloc(nblocks * sizeof(kn_cmp_block))
                 : NULL;
  if (j.blocks) {
    pool_run(a->numel, KN_BLOCK, cmp_range, &j, NULL);
    for (pos = 0; pos < nblocks; pos++) cmp_add(&j.blocks[pos], sums, r);
    codec_free(j.blocks);
  } else { /* one thread (or no memory for the block list): block after block */
    for (pos = 0; pos < a->numel; pos += m) {
      kn_cmp_block blk;
      m = block_len(a->numel, pos);
      cmp_block(&j, pos, m, &blk);
      cmp_add(&blk, sums, r);
    }
  }
  cmp_sums(sums, base != NULL, r);
  return 1;
}

/* The base's sums when the fused path does not apply: a pass of their own,
** in the same order (a's memory order, blocks cascaded), as doubles or
** (re, im) pairs when any of the three is complex (no dot_base then). */
static void compare_base(const npy_array *a, const npy_array *b, const npy_array *base, int fortran,
                         am_compare_result *r, unsigned char *scratch) {
  int cplx = dt_kind(a->dtype.type) == DT_KIND_COMPLEX || dt_kind(b->dtype.type) == DT_KIND_COMPLEX ||
             dt_kind(base->dtype.type) == DT_KIND_COMPLEX;
  kn_cascade sab, sbb, dab;
  am_iter ia, ib, ic;
  uint64_t pos;
  size_t m;
  kn_cascade_init(&sab);
  kn_cascade_init(&sbb);
  kn_cascade_init(&dab);
  am_iter_init(&ia, a, fortran, 1);
  am_iter_init(&ib, b, fortran, 1);
  am_iter_init(&ic, base, fortran, 1);
  for (pos = 0; pos < a->numel; pos += m) {
    /* slots: 0 the a and then the b elements, 1 the base's, 2 a or b
    ** converted, 3 the base converted, 4 a - base, 5 b - base */
    const void *xa, *xb, *xc;
    double *e = (double *)(void *)SCRATCH(scratch, 4), *f = (double *)(void *)SCRATCH(scratch, 5);
    const unsigned char *pc;
    m = block_len(a->numel, pos);
    pc = am_iter_next(&ic, m, SCRATCH(scratch, 1));
    if (cplx) {
      double *z = (double *)(void *)SCRATCH(scratch, 2), *zc = (double *)(void *)SCRATCH(scratch, 3);
      kn_to_c128(base->dtype.type, pc, zc, m);
      kn_to_c128(a->dtype.type, am_iter_next(&ia, m, SCRATCH(scratch, 0)), z, m);
      kn_binary_c128(KN_SUB, z, zc, e, m);
      kn_to_c128(b->dtype.type, am_iter_next(&ib, m, SCRATCH(scratch, 0)), z, m);
      kn_binary_c128(KN_SUB, z, zc, f, m);
      kn_cascade_add(&sab, kn_sum_sq_c(e, m));
      kn_cascade_add(&sbb, kn_sum_sq_c(f, m));
      continue;
    }
    xc = as_f64(base->dtype.type, pc, m, SCRATCH(scratch, 3));
    xa = as_f64(a->dtype.type, am_iter_next(&ia, m, SCRATCH(scratch, 0)), m, SCRATCH(scratch, 2));
    kn_binary_f64(KN_SUB, xa, xc, e, m);
    xb = as_f64(b->dtype.type, am_iter_next(&ib, m, SCRATCH(scratch, 0)), m, SCRATCH(scratch, 2));
    kn_binary_f64(KN_SUB, xb, xc, f, m);
    kn_cascade_add(&sab, kn_sum_sq(e, m));
    kn_cascade_add(&sbb, kn_sum_sq(f, m));
    kn_cascade_add(&dab, kn_sum_prod(e, f, m));
  }
  r->sumsq_a_base = kn_cascade_sum(&sab);
  r->sumsq_b_base = kn_cascade_sum(&sbb);
  r->dot_base = kn_cascade_sum(&dab);
  r->base_complex = cplx;
}

void am_compare(const npy_array *a, const npy_array *b, const npy_array *base, am_compare_result *r,
                unsigned char *scratch) {
  int cplx = dt_kind(a->dtype.type) == DT_KIND_COMPLEX || dt_kind(b->dtype.type) == DT_KIND_COMPLEX;
  int fin_a = dt_kind(a->dtype.type) == DT_KIND_FLOAT || dt_kind(a->dtype.type) == DT_KIND_COMPLEX;
  int fin_b = dt_kind(b->dtype.type) == DT_KIND_FLOAT || dt_kind(b->dtype.type) == DT_KIND_COMPLEX;
  int fortran = am_is_fortran(a);
  double *d = (double *)(void *)SCRATCH(scratch, 4);
  kn_cascade sa, sb, dot, sd, sdiff;
  am_iter ia, ib;
  uint64_t pos;
  size_t m;
  memset(r, 0, sizeof(*r));
  r->is_complex = cplx;
  if (compare_fused(a, b, base, fortran, r)) return;
  if (base) compare_base(a, b, base, fortran, r, scratch);
  kn_cascade_init(&sa);
  kn_cascade_init(&sb);
  kn_cascade_init(&dot);
  kn_cascade_init(&sd);
  kn_cascade_init(&sdiff);
  am_iter_init(&ia, a, fortran, 1);
  am_iter_init(&ib, b, fortran, 1);
  for (pos = 0; pos < a->numel; pos += m) {
    const unsigned char *pa, *pb;
    const void *xa, *xb;
    m = block_len(a->numel, pos);
    pa = am_iter_next(&ia, m, SCRATCH(scratch, 0));
    pb = am_iter_next(&ib, m, SCRATCH(scratch, 1));
    if (cplx) {
      double *za = (double *)(void *)SCRATCH(scratch, 2), *zb = (double *)(void *)SCRATCH(scratch, 3);
      kn_to_c128(a->dtype.type, pa, za, m);
      kn_to_c128(b->dtype.type, pb, zb, m);
      kn_binary_c128(KN_SUB, za, zb, d, m);
      kn_cascade_add(&sa, kn_sum_sq_c(za, m));
      kn_cascade_add(&sb, kn_sum_sq_c(zb, m));
      kn_cascade_add(&sd, kn_sum_sq_c(d, m));
      r->maxabs_nan |= kn_max_abs(d, m, 1, &r->maxabs_diff);
      r->changed += kn_count_ne(za, zb, m, 1);
      r->nonfinite_a += kn_count_nonfinite(za, m, 1);
      r->nonfinite_b += kn_count_nonfinite(zb, m, 1);
      continue;
    }
    xa = as_f64(a->dtype.type, pa, m, SCRATCH(scratch, 2));
    xb = as_f64(b->dtype.type, pb, m, SCRATCH(scratch, 3));
    kn_binary_f64(KN_SUB, xa, xb, d, m);
    kn_cascade_add(&sa, kn_sum_sq(xa, m));
    kn_cascade_add(&sb, kn_sum_sq(xb, m));
    kn_cascade_add(&dot, kn_sum_prod(xa, xb, m));
    kn_cascade_add(&sd, kn_sum_sq(d, m));
    kn_cascade_add(&sdiff, kn_sum(d, m));
    r->maxabs_nan |= kn_max_abs(d, m, 0, &r->maxabs_diff);
    r->changed += kn_count_ne(xa, xb, m, 0);
    if (fin_a) r->nonfinite_a += kn_count_nonfinite(xa, m, 0);
    if (fin_b) r->nonfinite_b += kn_count_nonfinite(xb, m, 0);
  }
  r->sumsq_a = kn_cascade_sum(&sa);
  r->sumsq_b = kn_cascade_sum(&sb);
  r->dot = kn_cascade_sum(&dot);
  r->sumsq_diff = kn_cascade_sum(&sd);
  r->sum_diff = kn_cascade_sum(&sdiff);
}

/* A block of an operand as doubles (or pairs): loaded, or the broadcast scalar. */
static const void *close_operand(int cplx, am_iter *it, const npy_array *x, size_t m, unsigned char *raw,
                                 unsigned char *tmp) {
  const unsigned char *p = am_iter_next(it, m, raw);
  if (cplx) {
    kn_to_c128(x->dtype.type, p, (double *)(void *)tmp, m);
    return tmp;
  }
  return as_f64(x->dtype.type, p, m, tmp);
}

int am_allclose_shapes(const npy_array *a, const npy_array *b, codec_err *err) {
  if (a->ndim == 0 || b->ndim == 0 || same_shape(a, b)) return CODEC_OK;
  return shape_error(err, a, b, " (arrays compare when their shapes are equal or one is a () scalar)");
}

int am_allclose(const npy_array *a, const npy_array *b, double rtol, double atol, int *close, unsigned char *scratch,
                codec_err *err) {
  int cplx = dt_kind(a->dtype.type) == DT_KIND_COMPLEX || dt_kind(b->dtype.type) == DT_KIND_COMPLEX;
  int a_scalar = a->ndim == 0, b_scalar = b->ndim == 0, ck = cplx ? CK_C128 : CK_F64;
  const npy_array *shape_of = a_scalar ? b : a;
  int fortran = (a_scalar || am_is_fortran(a)) && (b_scalar || am_is_fortran(b));
  const void *xa = NULL, *xb = NULL;
  am_iter ia, ib;
  uint64_t pos;
  size_t m;
  int rc = am_allclose_shapes(a, b, err);
  if (rc) return rc;
  *close = 1;
  am_iter_init(&ia, a, fortran, 1);
  am_iter_init(&ib, b, fortran, 1);
  if (a_scalar && shape_of->ndim) xa = ck_broadcast(ck, a, SCRATCH(scratch, 0), SCRATCH(scratch, 2));
  if (b_scalar && shape_of->ndim) xb = ck_broadcast(ck, b, SCRATCH(scratch, 1), SCRATCH(scratch, 3));
  for (pos = 0; pos < shape_of->numel && *close; pos += m) {
    m = block_len(shape_of->numel, pos);
    if (!(a_scalar && shape_of->ndim)) xa = close_operand(cplx, &ia, a, m, SCRATCH(scratch, 0), SCRATCH(scratch, 2));
    if (!(b_scalar && shape_of->ndim)) xb = close_operand(cplx, &ib, b, m, SCRATCH(scratch, 1), SCRATCH(scratch, 3));
    *close = kn_allclose(xa, xb, m, cplx, rtol, atol);
  }
  return CODEC_OK;
}

/* --- accumulation ----------------------------------------------------------- */

/* Start a walk at element pos (in walk order): for a gather walk, the
** odometer's indices and storage offset at that position. */
static void iter_seek(am_iter *it, uint64_t pos) {
  int k;
  it->pos = pos;
  if (it->direct) return;
  it->off = 0;
  for (k = it->ndim - 1; k >= 0; k--) {
    it->idx[k] = pos % it->shape[k];
    pos /= it->shape[k];
    it->off += it->idx[k] * it->stride[k];
  }
}

/* The accumulations are elementwise, so pool_run may split them among
** threads at any block boundary and the result keeps its bits. */
enum { ACC_AXPY, ACC_INT, ACC_MINMAX };

typedef struct acc_job {
  int kind, fortran, first, want_max; /* first: a KN_ACC_* mode for ACC_AXPY */
  const npy_array *a;
  double w, keep;
  void *acc;
} acc_job;

static void acc_range(void *ctx, uint64_t begin, uint64_t end, unsigned char *scratch) {
  const acc_job *j = ctx;
  const npy_array *a = j->a;
  dt_type t = a->dtype.type;
  int cplx = dt_kind(t) == DT_KIND_COMPLEX;
  size_t size = dt_size(t), m;
  am_iter it;
  uint64_t pos;
  am_iter_init(&it, a, j->fortran, 1);
  iter_seek(&it, begin);
  for (pos = begin; pos < end; pos += m) {
    m = block_len(end, pos);
    switch (j->kind) {
      case ACC_AXPY: {
        const unsigned char *p = am_iter_next(&it, m, scratch);
        double *acc = j->acc;
        if (cplx)
          kn_axpy_c(t, p, j->w, acc + 2 * pos, m, j->first, j->keep);
        else
          kn_axpy(t, p, j->w, acc + pos, m, j->first, j->keep);
        break;
      }
      case ACC_INT: {
        int64_t *q = (int64_t *)(void *)SCRATCH(scratch, 1);
        kn_to_i64(t, am_iter_next(&it, m, SCRATCH(scratch, 0)), q, m);
        kn_add_i64((int64_t *)j->acc + pos, q, m, j->first);
        break;
      }
      default: {
        const unsigned char *p = am_iter_next(&it, m, scratch);
        kn_elem_minmax(t, (unsigned char *)j->acc + pos * size, p, m, j->want_max);
        break;
      }
    }
  }
}

static void acc_run(acc_job *j, unsigned char *scratch) { pool_run(j->a->numel, KN_BLOCK, acc_range, j, scratch); }

void am_axpy(const npy_array *a, int fortran, double w, double *acc, int first, unsigned char *scratch) {
  am_axpy_keep(a, fortran, w, first ? KN_ACC_SET : KN_ACC_ADD, 1.0, acc, scratch);
}

void am_axpy_keep(const npy_array *a, int fortran, double w, int mode, double keep, double *acc,
                  unsigned char *scratch) {
  acc_job j = {ACC_AXPY, 0, 0, 0, NULL, 0, 0, NULL};
  j.fortran = fortran;
  j.first = mode;
  j.keep = keep;
  j.a = a;
  j.w = w;
  j.acc = acc;
  acc_run(&j, scratch);
}

typedef struct rows_mean_job {
  dt_type t, out;
  const unsigned char *const *rows;
  const double *w;
  size_t nrows;
  double div;
  unsigned char *dst;
} rows_mean_job;

static void rows_mean_range(void *ctx, uint64_t begin, uint64_t end, unsigned char *scratch) {
  const rows_mean_job *j = ctx;
  size_t in = dt_size(j->t), os = dt_size(j->out), r, m;
  double *acc = (double *)(void *)scratch; /* KN_BLOCK doubles */
  uint64_t pos;
  for (pos = begin; pos < end; pos += m) {
    m = block_len(end, pos);
    for (r = 0; r < j->nrows; r++)
      kn_axpy(j->t, j->rows[r] + pos * in, j->w[r], acc, m, r ? KN_ACC_ADD : KN_ACC_SET, 1.0);
    kn_div_store(j->out, acc, 0, j->div, j->dst + pos * os, m);
  }
}

void am_rows_mean(dt_type t, const unsigned char *const *rows, const double *w, size_t nrows, double div, dt_type out,
                  void *dst, uint64_t n, unsigned char *scratch) {
  rows_mean_job j = {t, out, rows, w, nrows, div, (unsigned char *)dst};
  pool_run(n, KN_BLOCK, rows_mean_range, &j, scratch);
}

void am_add_int(const npy_array *a, int fortran, int64_t *acc, int first, unsigned char *scratch) {
  acc_job j = {ACC_INT, 0, 0, 0, NULL, 0, 0, NULL};
  j.fortran = fortran;
  j.first = first;
  j.a = a;
  j.acc = acc;
  acc_run(&j, scratch);
}

void am_elem_minmax(const npy_array *a, int fortran, unsigned char *acc, int want_max, int first,
                    unsigned char *scratch) {
  acc_job j = {ACC_MINMAX, 0, 0, 0, NULL, 0, 0, NULL};
  if (first) { /* a copy: one thread (a 2-d transpose is done in tiles) */
    am_copy_native(a, fortran, acc, scratch);
    return;
  }
  j.fortran = fortran;
  j.want_max = want_max;
  j.a = a;
  j.acc = acc;
  acc_run(&j, scratch);
}

void am_copy_native(const npy_array *a, int fortran, unsigned char *dst, unsigned char *scratch) {
  am_iter it;
  am_iter_init(&it, a, fortran, 1);
  copy_walk(&it, a, dst, scratch);
}
