/* SPDX-License-Identifier: Apache-2.0 */
/*
** dtype.h — the numeric dtypes we support, their names, and element access.
**
** A dtype is a type (bool, int8..int64, uint8..uint64, float16/32/64,
** complex64/128) plus a byte order. Names follow NumPy: dt_name() gives
** str(np.dtype) ("float32", or ">f4" for a non-native byte order, exactly as
** NumPy prints it on a little-endian machine) and dt_descr() gives dtype.str
** ("<f4", "|u1", ">c16").
*/
#ifndef AR_DTYPE_H
#define AR_DTYPE_H

#include "codec/codec.h"

typedef enum dt_type {
  DT_BOOL = 0,
  DT_INT8,
  DT_INT16,
  DT_INT32,
  DT_INT64,
  DT_UINT8,
  DT_UINT16,
  DT_UINT32,
  DT_UINT64,
  DT_FLOAT16,
  DT_FLOAT32,
  DT_FLOAT64,
  DT_COMPLEX64,
  DT_COMPLEX128,
  DT_NTYPES
} dt_type;

typedef struct dt_dtype {
  unsigned char type; /* dt_type */
  unsigned char big;  /* stored big-endian (always 0 for 1-byte types) */
} dt_dtype;

/* Kinds, as NumPy's dtype.kind. */
#define DT_KIND_BOOL 'b'
#define DT_KIND_INT 'i'
#define DT_KIND_UINT 'u'
#define DT_KIND_FLOAT 'f'
#define DT_KIND_COMPLEX 'c'

/* Longest name or descr plus NUL ("complex128"). */
#define DT_NAME_MAX 16

size_t dt_size(dt_type t);
char dt_kind(dt_type t);
/* The canonical name of the type ("float32"), byte order aside. */
const char *dt_type_name(dt_type t);

int dt_host_big(void);
/* A dtype of type t in this machine's byte order. */
dt_dtype dt_native(dt_type t);
/* Does reading this dtype need a byte swap on this machine? */
int dt_swapped(dt_dtype d);

/* str(np.dtype(d)) and np.dtype(d).str, written into out[DT_NAME_MAX]. */
void dt_name(dt_dtype d, char *out);
void dt_descr(dt_dtype d, char *out);

/* Parse a dtype as NumPy's np.dtype(str) would for the numeric types: names
** ("float32", "float", "double", "int", ...), type strings with an optional
** byte order ("<f4", ">i8", "|b1", "f4", "=u2") and single-character codes
** ("f", "d", "?"). Returns CODEC_OK, or CODEC_UNSUPPORTED with a message
** naming the dtype (and why: unicode, object, structured...). */
int dt_parse(const char *s, size_t n, dt_dtype *out, codec_err *err);

/* IEEE half precision <-> double, round-to-nearest-even like NumPy. */
double dt_half_to_double(uint16_t h);
uint16_t dt_double_to_half(double d);

/* One element, widened. For complex types `re` and `im` are both set; for the
** others im = 0. Integers are exact in `i`/`u` (kind tells which is set). */
typedef struct dt_value {
  char kind;  /* DT_KIND_* */
  int64_t i;  /* DT_KIND_INT, DT_KIND_BOOL */
  uint64_t u; /* DT_KIND_UINT */
  double re;  /* every kind, converted */
  double im;  /* DT_KIND_COMPLEX */
} dt_value;

/* Read element at p (no alignment needed) in dtype d. */
void dt_load(const unsigned char *p, dt_dtype d, dt_value *v);
/* Element at p as a double (complex: the real part). */
double dt_load_double(const unsigned char *p, dt_dtype d);

/* Store v converted to dtype d at p, as NumPy's astype does: integers wrap
** to the target width, floats round to the target precision, anything to
** bool tests for non-zero, complex to real drops the imaginary part.
** Float to integer truncates toward zero; NaN, infinities and values outside
** the target's range are not stored and return 1 (NumPy leaves them
** undefined). Returns 0 when stored. */
int dt_store(unsigned char *p, dt_dtype d, const dt_value *v);

/* Convenience constructors for dt_value. */
void dt_value_double(dt_value *v, double x);
void dt_value_int(dt_value *v, int64_t x);
void dt_value_uint(dt_value *v, uint64_t x);

/* Reverse the bytes of n items of dtype d in place (complex: each half). */
void dt_byteswap(unsigned char *p, uint64_t n, dt_dtype d);

#endif
