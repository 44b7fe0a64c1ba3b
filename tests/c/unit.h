/* SPDX-License-Identifier: Apache-2.0 */
/*
** unit.h — a minimal C unit-test harness for the codecs.
**
**   TEST(npy_parses_v1) { CHECK(x == 1); CHECK_EQ_INT(a, b); }
**
** Tests register themselves; unit_main.c runs each one, prints "ok name" or
** "FAIL name: file:line: expression", and fails any test that leaves an
** allocation behind. The codecs' allocator hooks are defined in unit_main.c:
** they count live allocations and can be told to fail the Nth one
** (unit_fail_alloc_after) for out-of-memory tests.
*/
#ifndef AR_UNIT_H
#define AR_UNIT_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef void (*unit_fn)(void);
void unit_register(const char *name, unit_fn fn);
void unit_fail(const char *file, int line, const char *expr);
int unit_failed(void);
/* Mark the running test skipped (it reports "SKIP c/name: why"). */
void unit_skip(const char *why);

/* Allocation control for OOM tests: fail the allocation after `n` more
** succeed (-1 = never), and every one after it. unit_live_allocs() counts what is not yet freed. */
void unit_fail_alloc_after(long n);
/* The same, but only that one allocation fails; later ones succeed again
** (as with SQLite, whose allocator recovers). */
void unit_fail_alloc_once(long n);
long unit_live_allocs(void);
int unit_alloc_failed(void); /* did an injected failure happen? */

/* Read tests/data/<rel> into a malloc'd buffer (free with free()). */
unsigned char *unit_read_file(const char *rel, uint64_t *len);

#define TEST(name)                                                                               \
  static void name(void);                                                                        \
  __attribute__((constructor)) static void register_##name(void) { unit_register(#name, name); } \
  static void name(void)

#define CHECK(cond)                         \
  do {                                      \
    if (!(cond)) {                          \
      unit_fail(__FILE__, __LINE__, #cond); \
      return;                               \
    }                                       \
  } while (0)

#define CHECK_STR(a, b) CHECK(strcmp((a), (b)) == 0)

/* Skip the rest of a test that cannot run here, saying why (never a pass). */
#define SKIP(why)   \
  do {              \
    unit_skip(why); \
    return;         \
  } while (0)

/* A deterministic generator (xorshift64*) over the caller's state, so
** failures reproduce. */
static inline uint64_t unit_xorshift(uint64_t *state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 2685821657736338717ull;
}

#endif
