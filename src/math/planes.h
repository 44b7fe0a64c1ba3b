/* SPDX-License-Identifier: Apache-2.0 */
/*
** planes.h — the arithmetic of packed records (codec/packed.h): an array's
** items split into byte planes, optionally after a transform against the
** same array of a base record, and merged back, bit for bit.
**
** Items are `width` bytes (1, 2, 4 or 8: a complex number is two items of
** its parts' width), stored little- or big-endian (`big`). Plane k holds
** byte k of every item's residual counted from the most significant byte:
** plane 0 the sign and exponent of a float, the last plane its lowest
** mantissa byte. The residual r of item x against base item b, all three
** read as unsigned integers of the item's width:
**
**   BP_PLAIN  r = x
**   BP_DIFF   r = zigzag(x - b): the difference modulo 2^(8 width), as a
**             signed integer d, stored as 2d (d >= 0) or -2d - 1 (d < 0), so
**             small differences of either sign have zero high bytes
**   BP_XOR    r = x ^ b
**
** Nothing here looks at values: NaN payloads, -0.0, subnormals and
** infinities are bit patterns like any other, and merging gives back the
** very bytes that were split.
**
** Lossy updates (BP_HALF, BP_BFLOAT16): a float32 or float64 item x is kept
** as u = x - b rounded to a 16-bit float (IEEE half, or bfloat16: the high
** half of a float32), in two planes (high byte first); it reads back as
** y = (T)((double)b + (double)u), rounded to x's type T once. Splitting
** computes y exactly as merging will and reports the largest |y - x|.
**
** No SQLite, no allocation: callers pass plane buffers of n bytes each.
*/
#ifndef AR_PLANES_H
#define AR_PLANES_H

#include <stdint.h>

enum { BP_PLAIN = 0, BP_DIFF = 1, BP_XOR = 2 };
enum { BP_HALF = 1, BP_BFLOAT16 = 2 };

/* Split n items at src (base: n items, NULL for BP_PLAIN) into planes[0 ..
** width-1], n bytes each. */
void bp_split(const unsigned char *src, const unsigned char *base, uint64_t n, int width, int big, int mode,
              unsigned char *const *planes);

/* Merge planes (as bp_split made them) back into n items at dst. */
void bp_merge(const unsigned char *const *planes, const unsigned char *base, uint64_t n, int width, int big, int mode,
              unsigned char *dst);

/* Bytes that zstd is expected to need for the planes of n items of src
** (against base, in mode): the order-0 entropy of each plane, measured on
** up to 2^18 items spread over the array. For choosing a mode, not a bound. */
uint64_t bp_estimate(const unsigned char *src, const unsigned char *base, uint64_t n, int width, int big, int mode);

/* Order-0 entropy of p[0..n), in bytes (n * H / 8, H in bits per byte). */
double bp_entropy(const unsigned char *p, uint64_t n);

/* The lossy update of n float32 (width 4) or float64 (width 8) items of src
** against base, in format fmt, into planes[0] (high bytes) and planes[1]
** (low bytes). Returns 0 and raises *max_err to the largest |y - x| seen,
** or 1 when an item of src or base is not finite or y would not be (the
** caller then keeps the array lossless; planes are then undefined). */
int bp_lossy_split(const unsigned char *src, const unsigned char *base, uint64_t n, int width, int big, int fmt,
                   unsigned char *const *planes, double *max_err);

/* y = b + u for n items, into dst (width and byte order of base). */
void bp_lossy_merge(const unsigned char *const *planes, const unsigned char *base, uint64_t n, int width, int big,
                    int fmt, unsigned char *dst);

#endif
