/* SPDX-License-Identifier: Apache-2.0 */
/*
** failalloc.h — an allocator for SQLite that fails on demand, shared by the
** out-of-memory host (oomrun.c) and the SQL fuzz harness: it wraps SQLite's
** default allocator, fails the Nth allocation from when it is armed, and
** counts outstanding allocations (for leak checks). The extension allocates
** through SQLite, so its memory goes through here too.
**
**   failalloc_install()      before SQLite is initialised; also turns
**                            lookaside off so every allocation is seen
**   failalloc_arm(n)         fail the allocation after n more succeed
**   failalloc_disarm()       stop failing; returns whether one failed
**   failalloc_outstanding    allocations not yet freed
**   failalloc_calls          allocations and reallocations asked for
*/
#ifndef AR_FAILALLOC_H
#define AR_FAILALLOC_H

#include <sqlite3.h>
#include <stddef.h>

static sqlite3_mem_methods failalloc_base;
static long failalloc_countdown = -1; /* fail when it reaches 0; -1: never */
static int failalloc_failed;
static long failalloc_outstanding;
static long failalloc_calls;

static int failalloc_now(void) {
  failalloc_calls++;
  if (failalloc_countdown < 0) return 0;
  if (failalloc_countdown-- == 0) {
    failalloc_failed = 1;
    return 1;
  }
  return 0;
}
static void *failalloc_malloc(int n) {
  void *p = failalloc_now() ? NULL : failalloc_base.xMalloc(n);
  if (p) failalloc_outstanding++;
  return p;
}
static void failalloc_free(void *p) {
  if (p) failalloc_outstanding--;
  failalloc_base.xFree(p);
}
static void *failalloc_realloc(void *p, int n) { return failalloc_now() ? NULL : failalloc_base.xRealloc(p, n); }

static int failalloc_install(void) {
  sqlite3_mem_methods m;
  if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &failalloc_base) != SQLITE_OK) return SQLITE_ERROR;
  m = failalloc_base;
  m.xMalloc = failalloc_malloc;
  m.xFree = failalloc_free;
  m.xRealloc = failalloc_realloc;
  if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK) return SQLITE_ERROR;
  return sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 0, 0);
}

static void failalloc_arm(long n) {
  failalloc_failed = 0;
  failalloc_countdown = n;
}

static int failalloc_disarm(void) {
  failalloc_countdown = -1;
  return failalloc_failed;
}

#endif
