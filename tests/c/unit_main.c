/* SPDX-License-Identifier: Apache-2.0 */
/*
** unit_main.c — runs the registered C unit tests (see unit.h) and provides
** the codecs' allocator hooks: a counting allocator that can inject failures.
*/
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "unit.h"

#define MAX_TESTS 512

static struct {
  const char *name;
  unit_fn fn;
} tests[MAX_TESTS];
static int ntests;
static int current_failed;
static const char *current_skip;
static long live_allocs;
static long fail_after = -1;
static int injected;
static int fail_once;

void unit_register(const char *name, unit_fn fn) {
  if (ntests < MAX_TESTS) {
    tests[ntests].name = name;
    tests[ntests].fn = fn;
    ntests++;
  }
}

void unit_fail(const char *file, int line, const char *expr) {
  printf("  %s:%d: CHECK(%s) failed\n", file, line, expr);
  current_failed = 1;
}

int unit_failed(void) { return current_failed; }

void unit_skip(const char *why) { current_skip = why; }

void unit_fail_alloc_after(long n) {
  fail_after = n;
  fail_once = 0;
  injected = 0;
}
void unit_fail_alloc_once(long n) {
  unit_fail_alloc_after(n);
  fail_once = 1;
}
long unit_live_allocs(void) { return live_allocs; }
int unit_alloc_failed(void) { return injected; }

static int should_fail(void) {
  if (fail_after < 0) return 0;
  if (fail_after == 0) {
    injected = 1;
    if (fail_once) fail_after = -1;
    return 1;
  }
  fail_after--;
  return 0;
}

/* Each block carries its size in a 16-byte header (keeps alignment). */
/* Each block starts with 16 bytes holding its size (for codec_msize). */
void *codec_malloc(uint64_t n) {
  unsigned char *p;
  if (should_fail() || n > SIZE_MAX - 16) return NULL;
  p = malloc((size_t)n + 16);
  if (!p) return NULL;
  live_allocs++;
  memcpy(p, &n, sizeof(n));
  return p + 16;
}

void *codec_realloc(void *old, uint64_t n) {
  unsigned char *p;
  if (!old) return codec_malloc(n);
  if (should_fail() || n > SIZE_MAX - 16) return NULL;
  p = realloc((unsigned char *)old - 16, (size_t)n + 16);
  if (!p) return NULL;
  memcpy(p, &n, sizeof(n));
  return p + 16;
}

void codec_free(void *p) {
  if (!p) return;
  live_allocs--;
  free((unsigned char *)p - 16);
}

uint64_t codec_msize(const void *p) {
  uint64_t n;
  if (!p) return 0;
  memcpy(&n, (const unsigned char *)p - 16, sizeof(n));
  return n;
}

unsigned char *unit_read_file(const char *rel, uint64_t *len) {
  char path[512];
  FILE *f;
  long n;
  unsigned char *buf;
  snprintf(path, sizeof(path), "tests/data/%s", rel);
  f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  buf = malloc((size_t)n + 1);
  if (buf && n && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = (uint64_t)n;
  return buf;
}

int main(void) {
  int i, failed = 0;
  for (i = 0; i < ntests; i++) {
    long before = live_allocs;
    current_failed = 0;
    current_skip = NULL;
    fail_after = -1;
    fflush(stdout);
    tests[i].fn();
    fail_after = -1;
    if (!current_failed && live_allocs != before) {
      printf("FAIL c/%s: leaked %ld allocation(s)\n", tests[i].name, live_allocs - before);
      current_failed = 1;
    } else if (current_failed) {
      printf("FAIL c/%s\n", tests[i].name);
    } else if (current_skip) {
      printf("SKIP c/%s: %s\n", tests[i].name, current_skip);
    } else {
      printf("ok c/%s\n", tests[i].name);
    }
    failed += current_failed;
  }
  return failed ? 1 : 0;
}
