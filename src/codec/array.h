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
int array_open(const ar_item *item, int index, npy_array *a, codec_err *err);

/* array_open plus the checks ar_valid makes: the message's dtype and shape
** agree with the .npy header. */
int array_validate(const ar_item *item, int index, codec_err *err);

/* Append the array as a .npy file: the stored bytes for numpy.ndarray
** items, a numpy.save-identical file for raw ones. */
void array_write_npy(ar_buf *out, const ar_item *item, const npy_array *a);

/* The spec of a new numpy.ndarray item holding the .npy file `bytes` parsed
** as a, as Flower's Array(ndarray) has it: dtype str(dtype) (written into
** dtname[DT_NAME_MAX]), a's shape, stype "numpy.ndarray". */
void array_numpy_spec(ar_item_spec *spec, ar_span key, const npy_array *a, ar_span bytes, char *dtname);

/* Index of the first dimension beyond Flower's int32 shape, or -1. */
int array_dim_over_int32(int ndim, const int64_t *shape);

/* Item context for messages: " (item 3, key 'w')". out holds AR_QUOTE_MAX+32. */
const char *array_where(char *out, size_t cap, const ar_item *item, int index);

#endif
