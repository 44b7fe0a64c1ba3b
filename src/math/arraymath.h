/* SPDX-License-Identifier: Apache-2.0 */
/*
** arraymath.h — arithmetic on whole arrays (npy_array views): NumPy's type
** promotion, elementwise operations whose results are numpy.save-identical
** .npy payloads, reductions, and the helpers the aggregates accumulate with.
** No SQLite here; errors come back as codec_err messages without a function
** name, for the SQL layer to prefix.
**
** Every operation walks its inputs a block (KN_BLOCK elements) at a time with
** am_iter, which hands kernels.c contiguous elements in this machine's byte
** order: a view straight into the array when its bytes already are (the fast
** path: no copy), otherwise a copy into a small scratch block, byte-swapped
** and/or gathered from the other memory order.
**
** Results are in native byte order. Memory order follows NumPy's K order: an
** elementwise result is in Fortran order when every non-scalar input is
** (np.save then writes fortran_order True), otherwise in C order.
*/
#ifndef AR_ARRAYMATH_H
#define AR_ARRAYMATH_H

#include "math/kernels.h"
#include "codec/npy.h"

/* Scratch memory one operation needs (callers allocate it once and pass it
** to every call: records have many arrays). */
#define AM_SCRATCH ((size_t)6 * KN_BLOCK * 16)

/* --- iteration ----------------------------------------------------------- */

typedef struct am_iter {
  const unsigned char *data;
  dt_dtype dtype;
  size_t itemsize;
  uint64_t numel, pos;
  int swap;   /* convert to native byte order */
  int direct; /* storage order is the walk order: blocks are contiguous */
  /* the gather walk, when not direct: a C-order walk over `shape`, each
  ** step `stride` elements apart in storage (unit dimensions dropped) */
  int ndim;
  uint64_t shape[NPY_MAX_DIMS], stride[NPY_MAX_DIMS], idx[NPY_MAX_DIMS];
  uint64_t off;
} am_iter;

/* Is the array stored in Fortran order that differs from C order (at least
** two dimensions longer than 1)? That is what np.save calls fortran_order. */
int am_is_fortran(const npy_array *a);

/* Walk a's elements in Fortran order (fortran != 0) or C order; native != 0
** converts them to this machine's byte order. */
void am_iter_init(am_iter *it, const npy_array *a, int fortran, int native);
/* Does the walk read the array in place (storage order is the walk order,
** native byte order)? Then any n may be asked of am_iter_next at once. */
int am_iter_in_place(const am_iter *it);
/* The next n elements (at most what is left, and n <= KN_BLOCK unless the
** walk is in place): a pointer into the array, or into scratch (KN_BLOCK *
** 16 bytes) holding a copy. */
const unsigned char *am_iter_next(am_iter *it, size_t n, unsigned char *scratch);

/* --- dtypes and results ------------------------------------------------- */

/* np.promote_types for two numeric types. */
dt_type am_promote(dt_type a, dt_type b);

/* A result array is described by an npy_array without data: dtype, order,
** shape, numel, nbytes (npy_begin writes its .npy file, array_begin_result
** its record item). */

/* "[2,3]" into out (cap bytes; long shapes are cut with "..."). */
const char *am_shape_str(char *out, size_t cap, int ndim, const int64_t *shape);

/* --- elementwise operations (plan, then run into res->nbytes bytes) ------ */

/* a OP b (KN_ADD, KN_SUB, KN_MUL): equal shapes, or either a () scalar.
** Errors: shape mismatch, boolean subtract. */
int am_binary_plan(int op, const npy_array *a, const npy_array *b, npy_array *res, codec_err *err);
void am_binary_run(int op, const npy_array *a, const npy_array *b, const npy_array *res, unsigned char *dst,
                   unsigned char *scratch);

/* a * s for a real s, as NumPy's a * float(s): floating and complex arrays
** keep their dtype (s rounded to it first), bool and integers become float64. */
void am_scale_plan(const npy_array *a, npy_array *res);
void am_scale_run(const npy_array *a, double s, const npy_array *res, unsigned char *dst, unsigned char *scratch);

/* a.astype(dtype) (memory order kept). Fails on NaN, infinity or an
** out-of-range value cast to an integer type (NumPy leaves those undefined). */
void am_cast_plan(const npy_array *a, dt_dtype to, npy_array *res);
int am_cast_run(const npy_array *a, const npy_array *res, unsigned char *dst, unsigned char *scratch, codec_err *err);

/* a.reshape(shape) in C index order; one dimension may be -1. The dtype and
** its byte order are kept. */
int am_reshape_plan(const npy_array *a, int ndim, const int64_t *shape, npy_array *res, codec_err *err);
void am_reshape_run(const npy_array *a, const npy_array *res, unsigned char *dst, unsigned char *scratch);

/* One elementwise operation, whichever it is, for callers that apply the
** same operation to many arrays (the record functions). */
enum { AM_OP_BINARY, AM_OP_SCALE, AM_OP_CAST, AM_OP_RESHAPE };
typedef struct am_op {
  int kind;
  int binop;            /* AM_OP_BINARY: KN_ADD, KN_SUB, KN_MUL */
  double s;             /* AM_OP_SCALE */
  dt_dtype to;          /* AM_OP_CAST */
  int ndim;             /* AM_OP_RESHAPE */
  const int64_t *shape; /* AM_OP_RESHAPE */
} am_op;

/* Plan and run op on a (and b for AM_OP_BINARY). */
int am_plan(const am_op *op, const npy_array *a, const npy_array *b, npy_array *res, codec_err *err);
int am_run(const am_op *op, const npy_array *a, const npy_array *b, const npy_array *res, unsigned char *dst,
           unsigned char *scratch, codec_err *err);

/* AM_SCRATCH bytes from codec_malloc (NULL when out of memory). */
unsigned char *am_scratch(void);

/* --- reductions -------------------------------------------------------------- */

enum {
  AM_SUM = 1,   /* sum_re, sum_im */
  AM_MIN = 2,   /* min by kind (not for complex) */
  AM_MAX = 128, /* max by kind (not for complex) */
  AM_MINMAX = AM_MIN | AM_MAX,
  AM_STD = 4,       /* m2 = sum |x - mean|^2, with mean = sum / count (needs AM_SUM) */
  AM_SUMSQ = 8,     /* sum |x|^2 */
  AM_SUMABS = 16,   /* sum |x| */
  AM_MAXABS = 32,   /* max |x| */
  AM_NONFINITE = 64 /* NaN and infinite elements */
};

typedef struct am_stats {
  uint64_t count, nonfinite;
  int is_complex;
  double sum_re, sum_im, m2, sumsq, sumabs, maxabs;
  /* AM_MIN / AM_MAX: for DT_KIND_INT/BOOL in imin/imax, DT_KIND_UINT in
  ** umin/umax, floats in fmin/fmax (NaN when any element is NaN, as NumPy).
  ** Unset for an empty array; a float bound not asked for is unset too. */
  char min_kind;
  int64_t imin, imax;
  uint64_t umin, umax;
  double fmin, fmax;
} am_stats;

/* Reduce a (in its storage order). Sums are pairwise in double; sums of
** bool and integer arrays are exact (128-bit) until rounded once. */
void am_reduce(const npy_array *a, unsigned what, am_stats *st, unsigned char *scratch);

typedef struct am_dot_result {
  double re, im; /* sum a*b (no conjugation) */
  double aa, bb; /* sum |a|^2, sum |b|^2 */
} am_dot_result;

/* Flat dot product of two arrays of equal shape (either may be complex);
** aa and bb only when `norms`. */
int am_dot(const npy_array *a, const npy_array *b, int norms, am_dot_result *r, unsigned char *scratch, codec_err *err);

/* What am_compare finds in one pass over two arrays (and a base). */
typedef struct am_compare_result {
  int is_complex;              /* either array is: dot, sum_diff unset */
  double sumsq_a, sumsq_b;     /* sum |a|^2, sum |b|^2 */
  double dot;                  /* sum a*b */
  double sumsq_diff, sum_diff; /* sum |a-b|^2, sum (a-b) */
  double maxabs_diff;          /* max |a-b| (0 for empty arrays) */
  int maxabs_nan;              /* a difference was NaN: NumPy's max is NaN */
  uint64_t changed;            /* elements with a != b */
  uint64_t nonfinite_a, nonfinite_b;
  /* with a base c: sum |a-c|^2, sum |b-c|^2, sum (a-c)*(b-c) (dot_base
  ** unset when base_complex: any of the three is complex) */
  double sumsq_a_base, sumsq_b_base, dot_base;
  int base_complex;
} am_compare_result;

/* Compare two arrays of equal shape (the caller checks; dtypes may differ)
** element by element, in a's memory order: every element as a double (a
** (re, im) pair when either is complex), differences a - b rounded to
** double, sums pairwise as am_reduce's, so sumsq_a is the sumsq am_reduce
** gives for a. With base (NULL or a third array of the same shape), the
** sums against it too, in the same pass when the three are float32 (or
** float64) arrays read in place. */
void am_compare(const npy_array *a, const npy_array *b, const npy_array *base, am_compare_result *r,
                unsigned char *scratch);

/* Can a and b be compared by am_allclose (equal shapes or a () scalar)? */
int am_allclose_shapes(const npy_array *a, const npy_array *b, codec_err *err);
/* np.allclose(a, b, rtol, atol): equal shapes or a () scalar. */
int am_allclose(const npy_array *a, const npy_array *b, double rtol, double atol, int *close, unsigned char *scratch,
                codec_err *err);

/* --- accumulation, for the aggregates ------------------------------------ */

/* acc = (first ? 0 : acc) + w * a, visiting a in the given order; complex
** arrays accumulate (re, im) pairs. */
void am_axpy(const npy_array *a, int fortran, double w, double *acc, int first, unsigned char *scratch);
/* acc = w * a, acc + w * a or keep * acc + w * a (mode KN_ACC_SET, _ADD,
** _KEEP of kernels.h), each product and sum rounded on its own. */
void am_axpy_keep(const npy_array *a, int fortran, double w, int mode, double keep, double *acc,
                  unsigned char *scratch);
/* acc = (first ? 0 : acc) + a over int64 (bool, integer and unsigned a). */
void am_add_int(const npy_array *a, int fortran, int64_t *acc, int first, unsigned char *scratch);
/* acc (same type as a, native order) = elementwise min/max(acc, a). */
void am_elem_minmax(const npy_array *a, int fortran, unsigned char *acc, int want_max, int first,
                    unsigned char *scratch);
/* a's elements, native byte order, in the given order, into dst. */
void am_copy_native(const npy_array *a, int fortran, unsigned char *dst, unsigned char *scratch);
/* dst (n elements of type out, native order) = the weighted mean of nrows
** rows of n contiguous native elements of real type t (rows[r], weight
** w[r]) as a row-by-row accumulation computes it: acc = w[0] * x0, then
** acc + w[r] * xr for each row in order (am_axpy's roundings), then acc /
** div rounded once to out (kn_div_store). The same operations on every
** element, so the same bits, but a block of elements at a time through all
** the rows: the block's accumulator stays in L1 instead of a whole array of
** doubles going to memory and back once per row. Blocks are shared among the
** pool's threads. nrows >= 1; scratch holds AM_SCRATCH bytes. */
void am_rows_mean(dt_type t, const unsigned char *const *rows, const double *w, size_t nrows, double div, dt_type out,
                  void *dst, uint64_t n, unsigned char *scratch);

#endif
