/* SPDX-License-Identifier: Apache-2.0 */
/*
** exactsum.h — running sums that rows can leave without drift, for the
** window forms of ar_sum / ar_mean.
**
** A sum is an expansion of XS_N doubles, largest first: nonoverlapping
** components whose exact sum is the sum of everything added (Shewchuk's
** Grow-Expansion, then zeros squeezed out). Adding and then subtracting a
** value restores the expansion exactly, so a window slides forever without
** drift. XS_N = 4 holds any sum that fits in four 53-bit pieces (1e30 next
** to 1e-30 and full-precision noise, say); only a sum needing a fifth piece
** is rounded, at about 2^-200 of its largest part.
**
** Products w * x are added as two exact parts (Dekker's TwoProduct), so a
** weighted sum is exact too. No fused multiply-add anywhere (the Makefile
** compiles src/math with -ffp-contract=off): TwoSum and the splitting rely
** on every operation being rounded on its own.
*/
#ifndef ARRAYRECORD_EXACTSUM_H
#define ARRAYRECORD_EXACTSUM_H

#include <stddef.h>

#include "codec/npy.h"

#define XS_N 4

/* v (XS_N doubles, largest first) += p, exactly. */
void xs_add(double *v, double p);
/* v += w * x, exactly (both parts of the product). */
void xs_add_product(double *v, double w, double x);
/* v rounded to a double (faithfully: within one rounding of the exact sum). */
double xs_value(const double *v);
/* v / d, both expansions, to within about one rounding of the exact
** quotient (double-double division of the expansions' leading parts). */
double xs_div(const double *v, const double *d);

/* Elementwise: the sums of element i are comp[0][i], ..., comp[XS_N-1][i]
** (largest first); w * a is added to them (complex arrays as (re, im)
** pairs, so comp has 2 * numel doubles each): the products exact, or
** rounded to a double first when exact is 0. */
void xs_axpy(const npy_array *a, int fortran, double w, int exact, double *const *comp, unsigned char *scratch);

#endif
