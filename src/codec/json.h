/* SPDX-License-Identifier: Apache-2.0 */
/*
** json.h — the small amount of JSON the extension reads and writes:
** shapes ("[2,3]"), nested numeric arrays (npy_to_json / npy_from_json),
** strings and numbers for summaries.
**
** Numbers are written in the shortest form that reads back to the same value
** of the element's own precision (float32 0.1 prints as 0.1), floats always
** with a '.' or exponent. NaN and infinities are not JSON numbers; they are
** written as the strings "NaN", "Infinity", "-Infinity" (which the reader
** accepts back, along with null for NaN).
*/
#ifndef AR_JSON_H
#define AR_JSON_H

#include "codec/buf.h"
#include "codec/dtype.h"
#include "codec/npy.h"

/* Append a JSON string literal (s is UTF-8). */
void json_put_string(buf_t *out, const unsigned char *s, uint64_t n);
/* Append a float with the shortest round-trip digits at `bits` precision
** (16, 32 or 64); non-finite values as strings. */
void json_put_float(buf_t *out, double v, int bits);
/* Append one element: bool as true/false, integers exactly, floats as
** above, complex as [re, im]. */
void json_put_value(buf_t *out, const dt_value *v, dt_type t);
/* Shortest text that reads back as v at `bits` precision, without the
** JSON string quoting of non-finite values ("nan", "inf", "-inf").
** out must hold 32 bytes. */
void json_format_float(char *out, double v, int bits);

/* strtod of JSON number text (a '.' decimal point whatever the locale);
** s is NUL-terminated, at most 511 bytes. */
double json_strtod(const char *s);
/* Append a whole C-order payload as nested lists (scalar for ndim 0). */
void json_put_array(buf_t *out, const unsigned char *cdata, dt_dtype d, int ndim, const int64_t *shape);

/* Parse a shape: a JSON array of non-negative integers ("[2,3]", "[]"), or a
** single integer ("5" means [5]). */
int json_parse_shape(const char *s, uint64_t n, int *ndim, int64_t *shape, codec_err *err);
/* The same, except that entries may be -1 (an unknown dimension, as in
** np.reshape); the caller checks there is at most one. */
int json_parse_newshape(const char *s, uint64_t n, int *ndim, int64_t *shape, codec_err *err);

/* Parse nested JSON lists of numbers into a C-order payload of dtype *d.
** When has_dtype is 0 the dtype is inferred (bool, int64, uint64 or float64,
** as np.array would) and stored in *d. Complex dtypes take [re, im] pairs as the
** innermost lists. The payload is appended to out (native byte order unless
** d says otherwise); shape is returned in ndim/shape. */
int json_parse_array(const char *s, uint64_t n, int has_dtype, dt_dtype *d, int *ndim, int64_t *shape, buf_t *out,
                     codec_err *err);

#endif
