/* SPDX-License-Identifier: Apache-2.0 */
/*
** sha256.c — the project's SHA-256 (src/codec/sha256.c) over one buffer, on
** both compression paths, for `make bench`. Prints two numbers in GB/s
** (10^9 bytes hashed per second, best of several runs): the portable code,
** then the path the library chose at load time (SHA-NI when the CPU has it;
** the same path twice otherwise), then 1 or 0 for whether that is SHA-NI.
** Usage: bench_sha256 MEGABYTES
*/
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec/sha256.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double best_gbps(const unsigned char *p, size_t n, int runs) {
  unsigned char d[SHA256_DIGEST_SIZE];
  double best = 1e9;
  int r;
  for (r = 0; r < runs; r++) {
    double t = now();
    sha256(p, n, d);
    t = now() - t;
    if (t < best) best = t;
  }
  return (double)n / best / 1e9;
}

int main(int argc, char **argv) {
  size_t n = (size_t)(argc > 1 ? atof(argv[1]) : 100) * 1000000, i;
  unsigned char *p = malloc(n ? n : 1);
  double portable, chosen;
  if (!p) return 1;
  for (i = 0; i < n; i++) p[i] = (unsigned char)(i * 131 + 7);
  sha256_force_portable(1);
  portable = best_gbps(p, n, 3);
  sha256_force_portable(0);
  chosen = best_gbps(p, n, 5);
  printf("%.3f %.3f %d\n", portable, chosen, sha256_accelerated());
  free(p);
  return 0;
}
