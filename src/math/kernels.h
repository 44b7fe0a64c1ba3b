/* SPDX-License-Identifier: Apache-2.0 */
/*
** kernels.h — typed numeric loops over blocks of elements that are already
** contiguous and in this machine's byte order (arraymath.c puts them there,
** block by block). No SQLite, no allocation, no .npy headers: arithmetic
** only, written so the compiler vectorizes it (the Makefile builds this file
** with -O3 -ffp-contract=off, so results never depend on FMA contraction).
**
** Element pointers need no alignment: every load and store goes through
** memcpy, which compilers turn into plain (vector) moves. Arrays inside a
** record BLOB start at arbitrary byte offsets, so this matters.
**
** Conversions follow C, which is what NumPy does: to a float type, round to
** nearest even (float16 through dt_double_to_half); integer narrowing wraps;
** complex to real keeps the real part.
**
** Sums are pairwise, like NumPy's: kn_sum* split a block recursively down to
** 128 elements, each summed in 8 interleaved lanes, and kn_cascade combines
** the block sums of a whole array as a binary counter, so every array is
** summed in one pairwise tree in double precision. The rounding error grows
** as O(log n) ulps, not O(n).
*/
#ifndef AR_KERNELS_H
#define AR_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "codec/dtype.h"

/* KN_HOT: the loops that carry large arrays (kernels.c, robust.c) are
** compiled twice on x86-64 Linux: for AVX2 and for the baseline ISA; the
** dynamic loader picks one when the library loads (an ifunc). Both execute
** the same operations in the same order (no FMA contraction, no
** reassociation: -ffp-contract=off and no fast-math), so results are
** bit-identical; AVX2 only does more lanes per instruction. Elsewhere, or
** with -DAR_NO_CLONES, there is one portable copy.
** The cloned functions are static, each behind a plain public entry point
** (clang 14 gives an external cloned function no symbol of its own name).
** KN_CLONES is 1 where these clones are made (robust.c picks its own
** AVX-512 and AVX2 copies there, by __builtin_cpu_supports). */
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && !defined(AR_NO_CLONES) && \
    ((defined(__clang__) && __clang_major__ >= 14) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 6))
#define KN_HOT __attribute__((target_clones("avx2", "default")))
#define KN_CLONES 1
#else
#define KN_CLONES 0
#define KN_HOT
#endif

/* The SIMD path of the loops that pick one at run time (kn_compare_block,
** robust.c's Krum tiles and Bulyan), for tests that compare them:
** KN_ISA_BASE (portable), KN_ISA_AVX2, KN_ISA_AVX512; kn_set_isa(-1) for the
** best this CPU has (the default). A path the CPU lacks means the best.
** Returns the path now used. Not thread-safe: set it before the work. */
enum { KN_ISA_BASE = 0, KN_ISA_AVX2 = 1, KN_ISA_AVX512 = 2 };
int kn_set_isa(int isa);
int kn_isa(void);
int kn_best_isa(void);

/* Elements handled per block: small enough that a block of any type and the
** scratch copies made from it stay in L1/L2. */
#define KN_BLOCK 1024

/* --- pairwise summation across blocks ---------------------------------- */

typedef struct kn_cascade {
  double level[64]; /* level[k]: sum of 2^k blocks, when bit k of count is set */
  uint64_t count;
} kn_cascade;

void kn_cascade_init(kn_cascade *c);
void kn_cascade_add(kn_cascade *c, double block_sum);
double kn_cascade_sum(const kn_cascade *c);

/* --- conversions of n elements of type t ------------------------------- */

/* To double; complex gives its real part. dst needs no alignment. */
void kn_to_f64(dt_type t, const void *src, void *dst, size_t n);
/* To (re, im) double pairs; real types get im = 0. dst holds 2n. */
void kn_to_c128(dt_type t, const void *src, double *dst, size_t n);
/* To float as C converts (int64 -> float rounds once); complex: real part.
** dst needs no alignment. */
void kn_to_f32(dt_type t, const void *src, void *dst, size_t n);
/* To (re, im) float pairs. dst holds 2n. */
void kn_to_c64(dt_type t, const void *src, float *dst, size_t n);
/* Bool, integer and unsigned types to int64 (uint64 keeps its bits). */
void kn_to_i64(dt_type t, const void *src, int64_t *dst, size_t n);

/* From double to a floating type (float16/32/64; complex gets im = 0). */
void kn_from_f64(dt_type t, const double *src, void *dst, size_t n);
/* From float to float16 or float32. */
void kn_from_f32(dt_type t, const float *src, void *dst, size_t n);
/* From (re, im) double pairs to complex64 or complex128. */
void kn_from_c128(dt_type t, const double *src, void *dst, size_t n);
/* From int64 to bool (non-zero) or an integer type (wrapping). */
void kn_from_i64(dt_type t, const int64_t *src, void *dst, size_t n);
/* From double to an integer type, truncating toward zero. Returns the index
** of the first value that is NaN, infinite or out of the type's range (it
** and the rest are not stored), or n when all fit. */
size_t kn_f64_to_int(dt_type t, const double *src, void *dst, size_t n);

/* --- elementwise arithmetic in one compute type -------------------------- */

enum { KN_ADD, KN_SUB, KN_MUL };

/* out = a OP b, n elements (complex: n pairs). Integers wrap (two's
** complement); complex products use the textbook formula, as NumPy does. */
void kn_binary_f64(int op, const void *a, const void *b, void *out, size_t n);
void kn_binary_f32(int op, const void *a, const void *b, void *out, size_t n);
void kn_binary_i64(int op, const void *a, const void *b, void *out, size_t n);
void kn_binary_c128(int op, const void *a, const void *b, void *out, size_t n);
void kn_binary_c64(int op, const void *a, const void *b, void *out, size_t n);

/* out = x * s, with s real (complex: x * complex(s, 0), full formula). */
void kn_scale_f64(const void *x, double s, void *out, size_t n);
void kn_scale_f32(const void *x, float s, void *out, size_t n);
void kn_scale_c128(const void *x, double s, void *out, size_t n);
void kn_scale_c64(const void *x, float s, void *out, size_t n);

/* --- reductions over doubles ------------------------------------------- */

/* Pairwise sums of n doubles at x (and y). */
double kn_sum(const void *x, size_t n);
double kn_sum_sq(const void *x, size_t n);                  /* x^2 */
double kn_sum_abs(const void *x, size_t n);                 /* |x| */
double kn_sum_sqdev(const void *x, double mean, size_t n);  /* (x - mean)^2 */
double kn_sum_prod(const void *x, const void *y, size_t n); /* x * y */
/* Over (re, im) pairs: |z|^2, |z|, |z - mean|^2. */
double kn_sum_sq_c(const void *z, size_t n);
double kn_sum_abs_c(const void *z, size_t n);
double kn_sum_sqdev_c(const void *z, double mean_re, double mean_im, size_t n);

/* Exact sum of n int64 (uint64 when is_unsigned) into a 128-bit two's
** complement accumulator acc[0] (low) / acc[1] (high), so integer sums
** neither wrap nor round until kn_int128_to_double rounds them once. */
void kn_sum_int(const int64_t *x, size_t n, int is_unsigned, uint64_t acc[2]);
double kn_int128_to_double(const uint64_t acc[2]);

/* The same sums straight from float32 elements (the usual model dtype),
** still accumulated in double, without a conversion pass. */
double kn_sum_f32(const void *x, size_t n);
double kn_sum_sq_f32(const void *x, size_t n);
double kn_sum_abs_f32(const void *x, size_t n);
double kn_sum_sqdev_f32(const void *x, double mean, size_t n);
double kn_sum_prod_f32(const void *x, const void *y, size_t n);

/* Lower *mn / raise *mx over n doubles (the caller seeds them with the first
** element); either pointer may be NULL when that bound is not wanted.
** Returns 1 when a NaN was seen: NumPy's min/max are then NaN. */
int kn_minmax(const void *x, size_t n, double *mn, double *mx);
/* Largest |x| (|z| for pairs when `complex`); returns 1 when a NaN was seen. */
int kn_max_abs(const void *x, size_t n, int complex_pairs, double *mx);
/* float32 versions of kn_minmax and kn_max_abs (results are exact). */
int kn_minmax_f32(const void *x, size_t n, float *mn, float *mx);
int kn_max_abs_f32(const void *x, size_t n, float *mx);
void kn_minmax_i64(const int64_t *x, size_t n, int64_t *mn, int64_t *mx);
void kn_minmax_u64(const uint64_t *x, size_t n, uint64_t *mn, uint64_t *mx);
/* Elements (or pairs) that are NaN or infinite. */
uint64_t kn_count_nonfinite(const void *x, size_t n, int complex_pairs);
uint64_t kn_count_nonfinite_f32(const void *x, size_t n);
/* Elements (or pairs) where x != y, as NumPy's a != b: NaN differs from
** everything, infinities equal themselves, -0.0 equals 0.0. */
uint64_t kn_count_ne(const void *x, const void *y, size_t n, int complex_pairs);
/* NumPy's isclose for every element: |a - b| <= atol + rtol * |b| when both
** are finite, else a == b. Returns 1 when all n are close. */
int kn_allclose(const void *a, const void *b, size_t n, int complex_pairs, double rtol, double atol);

/* What am_compare finds in one block of m elements of a and b, both float32
** (f64 0) or both float64, native order, read once: the five sums bit for
** bit those of kn_sum_sq(xa), kn_sum_sq(xb), kn_sum_prod(xa, xb),
** kn_sum_sq(d) and kn_sum(d) (xa, xb the elements as doubles, d = xa - xb:
** the same pairwise trees, each lane's terms in the same order), the
** largest |d| (NaN ignored, nan set when one was NaN), the count of
** a != b and of nonfinite elements of each. With base (a third array of
** the same type, else NULL), also the pairwise sums of (xa - xc)^2,
** (xb - xc)^2 and (xa - xc)(xb - xc), xc its elements as doubles. */
typedef struct kn_cmp_block {
  double sa, sb, dot, sd, sdiff;
  double sd_a, sd_b, dot_base;
  double maxabs;
  int nan;
  uint64_t changed, nf_a, nf_b;
} kn_cmp_block;
void kn_compare_block(int f64, const void *a, const void *b, const void *base, size_t m, kn_cmp_block *r);

/* --- accumulators for the aggregates ------------------------------------ */

/* acc (n doubles) = w * x (mode KN_ACC_SET), acc + w * x (KN_ACC_ADD) or
** keep * acc + w * x (KN_ACC_KEEP), for x of real type t. */
enum { KN_ACC_ADD = 0, KN_ACC_SET = 1, KN_ACC_KEEP = 2 };
void kn_axpy(dt_type t, const void *x, double w, double *acc, size_t n, int mode, double keep);
/* The same for complex t into (re, im) pairs. */
void kn_axpy_c(dt_type t, const void *x, double w, double *acc, size_t n, int mode, double keep);
/* acc = (first ? 0 : acc) + x, wrapping int64. */
void kn_add_i64(int64_t *acc, const int64_t *x, size_t n, int first);
/* dst (type t, floating or complex) = acc / div, rounded once. `pairs` when
** acc holds complex pairs. dst may overlap acc as long as it starts at or
** before it (results are written block by block behind the reads). */
void kn_div_store(dt_type t, const double *acc, int pairs, double div, void *dst, size_t n);
/* Elementwise acc = min(acc, x) or max (want_max) over n elements of type t,
** NaN-propagating like np.minimum/np.maximum (bool: and / or). */
void kn_elem_minmax(dt_type t, void *acc, const void *x, size_t n, int want_max);

#endif
