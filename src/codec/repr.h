/* SPDX-License-Identifier: Apache-2.0 */
/*
** repr.h — NumPy's repr(ndarray) (numpy.array_repr with the default print
** options: linewidth 75, precision 8, floatmode 'maxprec', suppress False,
** threshold 1000, edgeitems 3) of an array, as text — as NumPy 1.24 prints
** it, or as a NumPy 2 release does (see repr_array).
**
** Floats print as NumPy's shortest round-trip digits ("unique"), at most 8
** after the point, found with printf("%.*e") at increasing precision until
** the text reads back as the same value (float16 through its float value).
** NumPy's Dragon4 and this agree except, perhaps, on values a hair from a
** rounding tie (see docs/reference.md, npy_repr).
*/
#ifndef AR_REPR_H
#define AR_REPR_H

#include "codec/buf.h"
#include "codec/npy.h"

/* Arrays with more than this many elements are summarised with "...". */
#define REPR_THRESHOLD 1000

/* NumPy versions as 100 * major + minor. */
#define REPR_NUMPY_1_24 124

/* Append repr(a) to out. Arrays of more than `threshold` elements show
** their first and last 3 items along each axis. numpy_version picks the
** printing: below 200 NumPy 1.24's; from 200 a non-native byte order is
** named (dtype='>f4'); from 202 summarised arrays end with shape=(...);
** from 203 float16 values from 1e3 up and float32/complex64 values from
** 1e6 up print in scientific notation. Errors go to out->rc. */
void repr_array(buf_t *out, const npy_array *a, uint64_t threshold, int numpy_version);

/* Append a Python str repr of key[0..n) ('w', "it's"): control characters
** as \n, \t, \r, \xNN, backslash and the quote escaped; other bytes as is. */
void repr_key(buf_t *out, const unsigned char *key, uint64_t n);

#endif
