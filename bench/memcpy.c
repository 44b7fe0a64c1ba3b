/* SPDX-License-Identifier: Apache-2.0 */
/*
** memcpy.c — single-core memcpy bandwidth, the yardstick `make bench`
** divides by. Prints two numbers in GB/s (10^9 bytes copied per second):
**   warm:  into a destination that is already mapped (best of several runs);
**   fresh: into a newly allocated destination, page faults included, which
**          is what producing any new result of that size costs.
** Usage: bench_memcpy MEGABYTES
*/
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t n = (size_t)(argc > 1 ? atof(argv[1]) : 100) * 1000000;
  char *src = malloc(n), *dst = malloc(n);
  double warm = 1e9, fresh = 1e9;
  int r;
  if (!src || !dst) return 1;
  memset(src, 1, n);
  memset(dst, 2, n);
  for (r = 0; r < 7; r++) {
    double t = now();
    memcpy(dst, src, n);
    t = now() - t;
    if (t < warm) warm = t;
  }
  for (r = 0; r < 5; r++) {
    double t = now();
    char *volatile d = malloc(n);
    if (!d) return 1;
    memcpy(d, src, n);
    free(d);
    t = now() - t;
    if (t < fresh) fresh = t;
  }
  printf("%.3f %.3f\n", (double)n / warm / 1e9, (double)n / fresh / 1e9);
  r = dst[n - 1] == 3; /* keeps the copies observable */
  free(src);
  free(dst);
  return r;
}
