/*
** alloc_sqlite.c — maps the codecs' allocator hooks (codec.h) onto SQLite's
** allocator, so every byte the extension holds is counted by SQLite and
** subject to its soft heap limit and out-of-memory testing.
*/
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT3

#include "codec.h"

void *ar_malloc(uint64_t n) { return sqlite3_malloc64(n); }
void *ar_realloc(void *p, uint64_t n) { return sqlite3_realloc64(p, n); }
void ar_free(void *p) { sqlite3_free(p); }
