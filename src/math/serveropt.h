/* SPDX-License-Identifier: Apache-2.0 */
/*
** serveropt.h — the server-side optimizer steps of Flower's strategies
** (flwr/serverapp/strategy: FedAvgM, FedAdam, FedYogi, FedAdagrad), one
** fused pass per array, and the in-dtype weighted sum of
** strategy_utils.aggregate_arrayrecords.
**
** Bit-identical to Flower's NumPy lines: every intermediate is rounded to
** the dtype NumPy gives it, operations run in NumPy's order, and this folder
** is built without floating-point contraction (no FMA). Python float scalars
** are cast to the array's dtype (NumPy 1 and 2 alike); FedAdam's eta_norm, a
** NumPy float64 scalar, is cast likewise by NumPy 1 (value-based casting)
** but makes the update float64 on NumPy 2 (NEP 50): `strong_eta`. Arrays of
** different dtypes (float32 and float64) promote as NumPy promotes them.
*/
#ifndef AR_SERVEROPT_H
#define AR_SERVEROPT_H

#include <stddef.h>
#include <stdint.h>

enum { SO_FEDAVGM = 1, SO_FEDADAM, SO_FEDYOGI, SO_FEDADAGRAD };

/* One step's scalars, as Flower holds them (doubles; cast per dtype). */
typedef struct so_params {
  int strategy;
  double eta, tau, beta_1, beta_2;
  double eta_norm;     /* FedAdam: eta * sqrt(1 - beta_2^(r+1)) / (1 - beta_1^(r+1)) */
  double lr, momentum; /* FedAvgM */
  int server_opt;      /* FedAvgM: momentum != 0 or lr != 1 */
  int strong_eta;      /* FedAdam on NumPy 2: eta_norm * m_t is float64 */
} so_params;

/* Dtypes of one key's arrays, 1 for float32 and 0 for float64: the model x,
** the aggregate a and the previous moments m, v (ignored when absent: absent
** FedOpt moments are zeros_like(aggregate)). */
typedef struct so_types {
  unsigned char x, a, m, v;
} so_types;

/* The dtypes of the new model (out->x) and moments (out->m, out->v) that
** NumPy gives the step for inputs `in` (has_m, has_v: previous moments). */
void so_result_types(const so_params *p, const so_types *in, int has_m, int has_v, so_types *out);

/* Flower's FedAdam eta_norm for server_round. */
double so_adam_eta_norm(double eta, double beta_1, double beta_2, int64_t server_round);

/* Does the strategy keep a first moment (m_t / momentum_vector) and a second
** moment (v_t) for these parameters? */
int so_has_m(const so_params *p);
int so_has_v(const so_params *p);

/* n elements: x the global model, a the aggregate; m, v the previous moments
** (NULL: none yet — zeros for FedOpt, "first round" for FedAvgM), of dtypes
** t. Writes the new model to x_out and the new moments to m_out / v_out
** (unused ones may be NULL) in the dtypes so_result_types gives. Inputs and
** outputs are native and contiguous, with any alignment; outputs may not
** alias inputs. One dtype throughout takes a vectorized loop; a mix, one
** that computes in double and rounds each intermediate to its dtype (the
** same bits: double holds a float32 +, -, *, / or sqrt exactly enough for
** one rounding to float32 to be the correctly rounded result). */
void so_step(const so_params *p, const so_types *t, size_t n, const void *x, const void *a, const void *m,
             const void *v, void *x_out, void *m_out, void *v_out);

/* aggregate_arrayrecords' `acc = value * w` (first) or `acc += value * w`,
** in the dtype: float16 (uint16 bits), float32, float64; and for bool and
** integer arrays (given as doubles, already converted) in float64. */
void so_wsum_f16(size_t n, const void *v, double w, void *acc, int first);
void so_wsum_f32(size_t n, const void *v, double w, void *acc, int first);
void so_wsum_f64(size_t n, const void *v, double w, void *acc, int first);

#endif
