/* SPDX-License-Identifier: Apache-2.0 */
/*
** serveropt.h — the server-side optimizer steps of Flower's strategies
** (flwr/serverapp/strategy: FedAvgM, FedAdam, FedYogi, FedAdagrad), one
** fused pass per array, and the in-dtype weighted sum of
** strategy_utils.aggregate_arrayrecords.
**
** Bit-identical to Flower's NumPy 1.x lines: every intermediate is rounded
** to the array's dtype (Python and NumPy float scalars are cast to it first,
** as value-based casting does), operations run in NumPy's order, and this
** folder is built without floating-point contraction (no FMA).
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
} so_params;

/* Flower's FedAdam eta_norm for server_round. */
double so_adam_eta_norm(double eta, double beta_1, double beta_2, int64_t server_round);

/* Does the strategy keep a first moment (m_t / momentum_vector) and a second
** moment (v_t) for these parameters? */
int so_has_m(const so_params *p);
int so_has_v(const so_params *p);

/* n elements: x the global model, a the aggregate; m, v the previous moments
** (NULL: none yet — zeros for FedOpt, "first round" for FedAvgM). Writes the
** new model to x_out and the new moments to m_out / v_out (unused ones may be
** NULL). Inputs and outputs are native and contiguous, with any alignment;
** outputs may not alias inputs. */
void so_step_f32(const so_params *p, size_t n, const void *x, const void *a, const void *m, const void *v, void *x_out,
                 void *m_out, void *v_out);
void so_step_f64(const so_params *p, size_t n, const void *x, const void *a, const void *m, const void *v, void *x_out,
                 void *m_out, void *v_out);

/* aggregate_arrayrecords' `acc = value * w` (first) or `acc += value * w`,
** in the dtype: float16 (uint16 bits), float32, float64; and for bool and
** integer arrays (given as doubles, already converted) in float64. */
void so_wsum_f16(size_t n, const void *v, double w, void *acc, int first);
void so_wsum_f32(size_t n, const void *v, double w, void *acc, int first);
void so_wsum_f64(size_t n, const void *v, double w, void *acc, int first);

#endif
