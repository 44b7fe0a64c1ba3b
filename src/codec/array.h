/* SPDX-License-Identifier: Apache-2.0 */
/*
** array.h — one Array of a record (dtype, shape, stype, data) seen as an
** n-dimensional array, whatever its stype:
**   - stype "numpy.ndarray": data is a .npy file, parsed in place;
**   - any other stype (legacy ParametersRecord, e.g. ""): data is the raw
**     C-order buffer described by the message's dtype and shape, as
**     np.frombuffer(data, dtype).reshape(shape) reads it.
** Either way the result is an npy_array view into the record; nothing is
** copied. Error messages end with the item's place: "(item 3, key 'w')".
*/
#ifndef AR_ARRAY_H
#define AR_ARRAY_H

#include "codec/npy.h"
#include "codec/record.h"

/* View the item's array. index is the item's position, for messages. */
int array_open(const record_item *item, int index, npy_array *a, codec_err *err);

/* array_open plus the checks ar_valid makes: the message's dtype and shape
** agree with the .npy header. */
int array_validate(const record_item *item, int index, codec_err *err);

/* Append the array as a .npy file: the stored bytes for numpy.ndarray
** items, a numpy.save-identical file for raw ones. */
void array_write_npy(buf_t *out, const record_item *item, const npy_array *a);

/* The spec of a new numpy.ndarray item holding the .npy file `bytes` parsed
** as a, as Flower's Array(ndarray) has it: dtype str(dtype) (written into
** dtname[DT_NAME_MAX]), a's shape, stype "numpy.ndarray". */
void array_numpy_spec(record_item_spec *spec, codec_span key, const npy_array *a, codec_span bytes, char *dtname);

/* Index of the first dimension beyond Flower's int32 shape, or -1. */
int array_dim_over_int32(int ndim, const int64_t *shape);

/* Item context for messages: " (item 3, key 'w')". out holds CODEC_QUOTE_MAX+32. */
const char *array_where(char *out, size_t cap, const record_item *item, int index);

/* A computed array (res: an npy_array without data, see npy_begin) as a new
** item, as Flower's Array(ndarray) would hold it: dtype str(dtype), the shape,
** stype "numpy.ndarray", data = .npy (lengths only: the caller writes the
** bytes). dtname holds DT_NAME_MAX. */
void array_result_spec(record_item_spec *spec, codec_span key, const npy_array *res, char *dtname);
/* Bytes such an item adds to a record. */
uint64_t array_result_size(codec_span key, const npy_array *res);
/* Write the item's framing and .npy header; returns where its payload goes
** (res->nbytes bytes), or NULL when the buffer failed. */
unsigned char *array_begin_result(buf_t *out, codec_span key, const npy_array *res);

#endif
