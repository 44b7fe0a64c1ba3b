/* SPDX-License-Identifier: Apache-2.0 */
/*
** npy.h — the NumPy .npy file format: parse (versions 1.0, 2.0, 3.0) into a
** zero-copy view, and write headers byte-identical to numpy.save.
**
** Format (numpy/lib/format.py): "\x93NUMPY", major, minor, header length
** (uint16 LE in 1.0, uint32 LE in 2.0/3.0), then a Python dict literal
** {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with spaces
** and a final '\n' so the payload starts on a 64-byte boundary, then the
** payload. Only numeric dtypes are accepted; object arrays (pickles) never are.
*/
#ifndef AR_NPY_H
#define AR_NPY_H

#include "codec/buf.h"
#include "codec/dtype.h"

/* NumPy 2 allows 64 dimensions (NumPy 1.x: 32). */
#define NPY_MAX_DIMS 64

typedef struct npy_array {
  dt_dtype dtype;
  int fortran_order;
  int ndim;
  int64_t shape[NPY_MAX_DIMS];
  uint64_t numel;            /* product of shape (1 for shape ()) */
  uint64_t nbytes;           /* payload bytes = numel * itemsize */
  int version;               /* 1, 2 or 3 */
  uint64_t header_len;       /* bytes before the payload */
  const unsigned char *data; /* payload, inside the parsed buffer */
  uint64_t trailing;         /* bytes after the payload (ignored, as NumPy does) */
} npy_array;

/* Parse a whole .npy file held in buf[0..n). On success `a` points into buf.
** Errors: CODEC_CORRUPT (malformed) or CODEC_UNSUPPORTED (non-numeric dtype),
** with a message such as "header truncated at byte 20". */
int npy_parse(const unsigned char *buf, uint64_t n, npy_array *a, codec_err *err);

/* Product of the dimensions; CODEC_CORRUPT on uint64 overflow or a negative
** dimension. (Not CODEC_TOOBIG: such a shape cannot describe any stored
** array, and the message must reach the user; SQL maps TOOBIG to SQLite's
** generic "string or blob too big".) */
int npy_shape_numel(int ndim, const int64_t *shape, uint64_t *numel, codec_err *err);

/* Exact size of the header numpy.save writes for this array. */
uint64_t npy_header_size(dt_dtype d, int ndim, const int64_t *shape, int fortran_order);

/* Append the header numpy.save writes (magic .. '\n') to out. */
void npy_write_header(buf_t *out, dt_dtype d, int ndim, const int64_t *shape, int fortran_order);

/* Append a complete .npy (header + payload) of a C-order payload. */
void npy_write(buf_t *out, dt_dtype d, int ndim, const int64_t *shape, const void *payload, uint64_t nbytes);

/* Copy a Fortran-order payload into C order (dst must hold nbytes). */
void npy_fortran_to_c(const unsigned char *src, unsigned char *dst, int ndim, const int64_t *shape, size_t itemsize);

/* Append the shape as a JSON array: "[2,3]", "[]" for a scalar. */
void npy_shape_json(buf_t *out, int ndim, const int64_t *shape);
/* The same text into out (NPY_SHAPE_JSON_MAX bytes, not terminated);
** returns its length. */
#define NPY_SHAPE_JSON_MAX (2 + NPY_MAX_DIMS * 21)
size_t npy_shape_format(char *out, int ndim, const int64_t *shape);

/* Byte offset, within the payload, of the element at C-order flat index i
** (accounts for Fortran order). */
uint64_t npy_element_offset(const npy_array *a, uint64_t i);

/* Do these bytes not even start like a .npy file (npy_parse's "bad magic")?
** Lets callers say what the bytes look like instead. */
int npy_bad_magic(const unsigned char *buf, uint64_t n);

/* A computed array's .npy file: res describes it without data (dtype,
** order, shape, numel, nbytes). Writes its numpy.save header into out and
** returns where its payload (res->nbytes bytes) goes, or NULL when the buffer
** failed (its rc says why). */
unsigned char *npy_begin(buf_t *out, const npy_array *res);

/* The array's payload in C order: a view when it already is, otherwise a
** copy in *owned (freed by the caller with codec_free). NULL on NOMEM. */
const unsigned char *npy_c_payload(const npy_array *a, unsigned char **owned);

#endif
