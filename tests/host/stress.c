/* SPDX-License-Identifier: Apache-2.0 */
/*
** stress.c — concurrent load on one database file: 8 threads, each with its
** own connection, writers inserting client updates while readers run every
** aggregate and table function, for a bounded time. Links the static
** library (make static) and registers it with sqlite3_auto_extension.
**
**   build/stress [SECONDS [DIR]]     (or STRESS_SECONDS, STRESS_DIR)
**
** Two variants, SECONDS each: "wal" (one connection per thread on a WAL
** file; half SQLITE_OPEN_FULLMUTEX, half SQLITE_OPEN_NOMUTEX) and
** "shared_cache" (the same over a shared cache, where conflicts are
** SQLITE_LOCKED and are waited out with sqlite3_unlock_notify). With
** STRESS_EXT=path/to/arrayrecord a third, "loadable": every thread loads
** the extension library into its own connection, at the same time.
**
** Every result is checked: queries over the table "fixed", written before
** the threads start, must return exactly what they returned single-threaded;
** queries over "updates", which the writers grow, must satisfy invariants
** that hold in every snapshot (counts and sums agree with the records).
** SQLITE_BUSY / SQLITE_LOCKED are waited for and retried, and each wait and
** retry is counted and printed. Prints "ok stress/..." or "FAIL stress/..."
** lines for tests/run; errors must be 0. `make tsan` runs it under
** ThreadSanitizer.
*/
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arrayrecord.h"

#define NTHREADS 8
#define NWRITERS 3
#define FIXED_ROWS 12
#define MAX_ERRORS_SHOWN 5

static int shared_cache;     /* set before the threads start, read-only after */
static const char *ext_path; /* the loadable variant: load this library */

/* ---- results as one text value ---------------------------------------- */

typedef struct {
  long queries, writes, retries, busy_waits, errors;
  char first_error[512];
} stats;

static void fail(stats *s, const char *what, const char *detail) {
  if (s->errors++ == 0) snprintf(s->first_error, sizeof s->first_error, "%.200s: %.300s", what, detail);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- waiting out conflicts ------------------------------------------- */

/* A busy handler that counts: WAL conflicts (a second writer, a checkpoint)
** wait here, 1 ms at a time, for up to 10 s, before SQLITE_BUSY comes back. */
static int busy_handler(void *arg, int n) {
  stats *s = arg;
  s->busy_waits++;
  if (n >= 10000) return 0;
  sleep_ms(1);
  return 1;
}

/* sqlite3_unlock_notify's documented pattern: block until the connection
** holding the shared-cache lock ends its transaction. */
typedef struct {
  int fired;
  pthread_mutex_t mu;
  pthread_cond_t cond;
} unlock_wait;

static void unlock_cb(void **args, int n) {
  for (int i = 0; i < n; i++) {
    unlock_wait *w = args[i];
    pthread_mutex_lock(&w->mu);
    w->fired = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->mu);
  }
}

/* After SQLITE_BUSY or SQLITE_LOCKED: wait before the caller retries. */
static void wait_conflict(sqlite3 *db, stats *s) {
  s->retries++;
  if (sqlite3_extended_errcode(db) == SQLITE_LOCKED_SHAREDCACHE) {
    unlock_wait w = {0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER};
    /* SQLITE_LOCKED here means a deadlock: the caller rolls back and retries. */
    if (sqlite3_unlock_notify(db, unlock_cb, &w) == SQLITE_OK) {
      pthread_mutex_lock(&w.mu);
      while (!w.fired) pthread_cond_wait(&w.cond, &w.mu);
      pthread_mutex_unlock(&w.mu);
      return;
    }
  }
  sleep_ms(1);
}

static int is_conflict(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

/* Runs sql (binding text/blob parameters as given) and puts the first
** column of its first row, as text, in out. Retries on conflict. Returns
** SQLITE_OK, or the error (with the message in out). */
typedef struct {
  const void *p;
  int n;
  int blob;
} param;

static int run(sqlite3 *db, stats *s, const char *sql, const param *ps, int np, char *out, size_t cap) {
  sqlite3_stmt *st = NULL;
  int rc;
  out[0] = 0;
  for (;;) {
    rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) break;
    if (!is_conflict(rc)) {
      snprintf(out, cap, "prepare: %s", sqlite3_errmsg(db));
      return rc;
    }
    wait_conflict(db, s); /* shared cache: the schema can be locked too */
  }
  for (int i = 0; i < np; i++) {
    if (ps[i].blob)
      sqlite3_bind_blob(st, i + 1, ps[i].p, ps[i].n, SQLITE_STATIC);
    else
      sqlite3_bind_text(st, i + 1, ps[i].p, ps[i].n, SQLITE_STATIC);
  }
  for (;;) {
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
      const unsigned char *t = sqlite3_column_text(st, 0);
      snprintf(out, cap, "%s", t ? (const char *)t : "NULL");
      while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
    }
    if (rc == SQLITE_DONE) {
      rc = SQLITE_OK;
      break;
    }
    if (!is_conflict(rc) || !sqlite3_get_autocommit(db)) {
      /* inside a transaction the whole transaction is retried */
      snprintf(out, cap, "%s", sqlite3_errmsg(db));
      break;
    }
    sqlite3_reset(st);
    wait_conflict(db, s);
  }
  sqlite3_finalize(st);
  return rc;
}

/* ---- the workload ------------------------------------------------------ */

/* A float32 JSON array of n values depending on seed, built in SQL. */
#define JSON_VALUES(n, seed)                                                      \
  "(WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < " #n \
  " - 1) "                                                                        \
  "SELECT json_group_array(((" seed ") * 7 + i * 13) % 101 / 4.0 - 12) FROM s)"

static const char *setup_sql[] = {
    "PRAGMA journal_mode = WAL",
    "CREATE TABLE fixed(id INTEGER PRIMARY KEY, rec BLOB, n INTEGER)",
    "CREATE TABLE updates(id INTEGER PRIMARY KEY, thread INTEGER, rec BLOB, n INTEGER)",
    "WITH RECURSIVE r(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM r WHERE id < 12) "
    "INSERT INTO fixed SELECT id, ar('w', npy(npy_raw(npy_from_json(" JSON_VALUES(96, "id") ", 'float32')), 'float32', '[8, 12]'), "
    "'b', npy_from_json(" JSON_VALUES(5, "id * 3") ", 'float64'), "
    "'steps', npy_from_json(json_array(id, id * 2), 'int32')), 10 + id FROM r",
    ("INSERT INTO updates(thread, rec, n) VALUES (-1, ar('w', npy_from_json('[0, 0, 0, 0]', 'float32'), "
     "'c', npy_from_json('[1]', 'int64'), 'n', npy_from_json('[5]', 'int64')), 5)"),
};

/* Each reader query returns one text value; over "fixed" it must equal the
** single-threaded result; over "updates" it must be 'ok'. */
static const char *fixed_queries[] = {
    "SELECT hex(ar_mean(rec, n)) FROM fixed",
    "SELECT hex(ar_mean(rec)) FROM fixed",
    "SELECT hex(ar_sum(rec)) FROM fixed",
    "SELECT hex(ar_min(rec)) || hex(ar_max(rec)) FROM fixed",
    "SELECT hex(ar_median(rec)) FROM fixed",
    "SELECT hex(ar_trimmed_mean(rec, 0.2)) FROM fixed",
    "SELECT hex(ar_stack(rec)) FROM fixed WHERE id <= 6",
    "SELECT hex(ar_agg('k' || id, ar_get(rec, 'w'))) FROM (SELECT id, rec FROM fixed ORDER BY id)",
    "SELECT hex(ar_agg_list(ar_get(rec, 'b'))) FROM (SELECT rec FROM fixed ORDER BY id)",
    "SELECT hex(ar_inflate(o.object_id, o.content)) = hex(f.rec) FROM fixed f, ar_objects(f.rec) o WHERE f.id = 3",
    "SELECT group_concat(f.id || k.key || k.dtype || k.shape || k.nbytes, ';') FROM fixed f, array_record(f.rec) k",
    "SELECT count(*) || ' ' || sum(e.value) FROM fixed f, npy_each(ar_get(f.rec, 'b')) e",
    "SELECT group_concat(s.key || s.min || s.max || s.mean || s.std || s.l2 || s.nonfinite, ';') "
    "FROM fixed f, ar_stats(f.rec) s",
    "SELECT group_concat(o.type || o.object_id || length(o.content), ';') FROM fixed f, ar_objects(f.rec) o WHERE f.id "
    "IN (2, 7)",
    "SELECT hex(ar_mean(rec, n)) FROM (SELECT ar_inflate(o.object_id, o.content) rec, f.n FROM fixed f, "
    "ar_objects(f.rec) o "
    "GROUP BY f.id)",
    /* arrays the thread pool splits (main sets its threshold low) */
    "SELECT hex(ar_mean(ar('big', npy_add(npy(zeroblob(16384), 'float32', '[64, 64]'), npy_from_json(id || '', "
    "'float32'))), n)) "
    "|| hex(ar_max(ar('big', npy_add(npy(zeroblob(16384), 'int16', '[128, 64]'), npy_from_json(id || '', 'int16'))))) "
    "FROM fixed",
    /* rows of 4 MiB: the order statistics' tiles split among the threads,
    ** ar_compare's blocks too (against a base), and blocks of 1 MiB and more
    ** taken from and given back to the pool of freed blocks by every thread */
    "SELECT hex(ar_object_id(ar_median(r))) || hex(ar_object_id(ar_trimmed_mean(r, 0.25))) "
    "FROM (SELECT ar('big', npy_add(npy(zeroblob(4194304), 'float32', '[64, 16384]'), npy_from_json((id * 7) % 5 || "
    "'', "
    "'float32'))) r FROM fixed)",
    "SELECT group_concat(c.norm_diff || ' ' || c.norm_a_base || ' ' || c.dot_base, ';') "
    "FROM (SELECT ar('big', npy_add(npy(zeroblob(4194304), 'float32', '[1048576]'), npy_from_json(id || '', "
    "'float32'))) r "
    "FROM fixed) f, ar_compare(f.r, ar('big', npy(zeroblob(4194304), 'float32', '[1048576]')), "
    "ar('big', npy_add(npy(zeroblob(4194304), 'float32', '[1048576]'), npy_from_json('1', 'float32')))) c",
};
#define NFIXED ((int)(sizeof fixed_queries / sizeof fixed_queries[0]))
static char *fixed_expected[NFIXED];

static const char *live_queries[] = {
    /* one statement, one snapshot: the counts and the records agree */
    "SELECT CASE WHEN c = npy_item(ar_get(s, 'c'), 0) AND tn = npy_item(ar_get(s, 'n'), 0) AND k = 3 * c "
    "AND m = 1.0 THEN 'ok' ELSE printf('count %d, ar_sum c %s, sum(n) %d, ar_sum n %s, keys %d, mean c %s', "
    "c, npy_to_json(ar_get(s, 'c')), tn, npy_to_json(ar_get(s, 'n')), k, m) END "
    "FROM (SELECT count(*) c, sum(n) tn, ar_sum(rec) s, npy_item(ar_get(ar_mean(rec, n), 'c'), 0) m FROM updates), "
    "(SELECT count(*) k FROM updates u, array_record(u.rec))",
    "SELECT CASE WHEN count(*) = (SELECT count(*) FROM updates) THEN 'ok' ELSE 'npy_each count ' || count(*) END "
    "FROM updates u, npy_each(ar_get(u.rec, 'c')) e WHERE e.value = 1",
    "SELECT CASE WHEN sum(s.numel) = 6 * count(DISTINCT u.id) AND sum(s.nonfinite) = 0 THEN 'ok' ELSE 'ar_stats numel' "
    "END "
    "FROM updates u, ar_stats(u.rec) s",
};
#define NLIVE ((int)(sizeof live_queries / sizeof live_queries[0]))

typedef struct {
  int id;
  const char *uri;
  double until;
  stats s;
} worker;

static sqlite3 *open_conn(const char *uri, int id, stats *s) {
  sqlite3 *db = NULL;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI;
  flags |= (id % 2) ? SQLITE_OPEN_NOMUTEX : SQLITE_OPEN_FULLMUTEX;
  if (shared_cache) flags |= SQLITE_OPEN_SHAREDCACHE;
  if (sqlite3_open_v2(uri, &db, flags, NULL) != SQLITE_OK) {
    fail(s, "open", db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return NULL;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_handler(db, busy_handler, s);
  if (ext_path) {
    char *err = NULL;
    sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 1, NULL);
    if (sqlite3_load_extension(db, ext_path, "sqlite3_arrayrecord_init", &err) != SQLITE_OK) {
      fail(s, "load_extension", err ? err : "?");
      sqlite3_free(err);
      sqlite3_close(db);
      return NULL;
    }
  }
  return db;
}

/* One writer transaction: a few client updates, built in SQL, from a bound
** BLOB, and with ar_set over a bound BLOB; now and then old rows go. */
static int write_batch(sqlite3 *db, worker *w, long seq, const void *blob, int blob_n, char *out, size_t cap) {
  char tid[16], nstr[16], json[128];
  long n = 1 + (seq * 7 + w->id) % 50;
  snprintf(tid, sizeof tid, "%d", w->id);
  snprintf(nstr, sizeof nstr, "%ld", n);
  snprintf(json, sizeof json, "[%ld, %d, -1.5, 0.25]", seq % 1000, w->id);
  param sql_built[] = {{tid, -1, 0}, {json, -1, 0}, {nstr, -1, 0}};
  param bound[] = {{tid, -1, 0}, {blob, blob_n, 1}};
  param set[] = {{tid, -1, 0}, {blob, blob_n, 1}, {nstr, -1, 0}};
  int rc;
  if ((rc = run(db, &w->s, "BEGIN IMMEDIATE", NULL, 0, out, cap)) != SQLITE_OK) return rc;
  rc = run(db, &w->s,
           "INSERT INTO updates(thread, rec, n) VALUES (?1, ar('w', npy_from_json(?2, 'float32'), "
           "'c', npy_from_json('[1]', 'int64'), 'n', npy_from_json(json_array(?3 + 0), 'int64')), ?3)",
           sql_built, 3, out, cap);
  if (rc == SQLITE_OK)
    rc = run(db, &w->s, "INSERT INTO updates(thread, rec, n) VALUES (?1, ?2, 7)", bound, 2, out, cap);
  if (rc == SQLITE_OK)
    rc = run(db, &w->s,
             "INSERT INTO updates(thread, rec, n) VALUES (?1, ar_set(?2, 'n', npy_from_json(json_array(?3 + 0), "
             "'int64')), ?3)",
             set, 3, out, cap);
  if (rc == SQLITE_OK && seq % 20 == 19)
    rc = run(db, &w->s, "DELETE FROM updates WHERE thread = ?1 AND id < (SELECT max(id) - 300 FROM updates)", bound, 1,
             out, cap);
  if (rc == SQLITE_OK) rc = run(db, &w->s, "COMMIT", NULL, 0, out, cap);
  if (rc != SQLITE_OK) {
    char ignore[64];
    if (!sqlite3_get_autocommit(db)) run(db, &w->s, "ROLLBACK", NULL, 0, ignore, sizeof ignore);
  }
  return rc;
}

static void *work(void *arg) {
  worker *w = arg;
  enum { OUT_CAP = 1 << 16 }; /* the longest expected value is ~20 kB of hex */
  char *out = malloc(OUT_CAP);
  sqlite3 *db = out ? open_conn(w->uri, w->id, &w->s) : NULL;
  if (!db) {
    if (!out) fail(&w->s, "malloc", "out of memory");
    free(out);
    return NULL;
  }
  void *blob = NULL;
  int blob_n = 0;
  if (w->id < NWRITERS) { /* the bound update, built once by this connection */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(
            db,
            "SELECT ar('w', npy_from_json('[1, 2, 3, 4]', 'float32'), 'c', npy_from_json('[1]', 'int64'), "
            "'n', npy_from_json('[7]', 'int64'))",
            -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
      blob_n = sqlite3_column_bytes(st, 0);
      blob = malloc((size_t)blob_n);
      if (blob) memcpy(blob, sqlite3_column_blob(st, 0), (size_t)blob_n);
    }
    sqlite3_finalize(st);
    if (!blob) fail(&w->s, "writer setup", sqlite3_errmsg(db));
  }
  long seq = 0;
  while (now() < w->until && w->s.errors == 0) {
    seq++;
    if (w->id < NWRITERS && blob) {
      int rc;
      while ((rc = write_batch(db, w, seq, blob, blob_n, out, OUT_CAP)) != SQLITE_OK && is_conflict(rc))
        wait_conflict(db, &w->s); /* the whole transaction again */
      if (rc != SQLITE_OK) fail(&w->s, "write", out);
      w->s.writes++;
      if (seq % 4) continue; /* writers read now and then too */
    }
    int q = (int)((seq * 5 + w->id) % (NFIXED + NLIVE));
    const char *sql = q < NFIXED ? fixed_queries[q] : live_queries[q - NFIXED];
    int rc = run(db, &w->s, sql, NULL, 0, out, OUT_CAP);
    w->s.queries++;
    if (rc != SQLITE_OK) {
      fail(&w->s, sql, out);
    } else if (q < NFIXED ? strcmp(out, fixed_expected[q]) != 0 : strcmp(out, "ok") != 0) {
      char detail[600];
      snprintf(detail, sizeof detail, "got %.200s, expected %.200s", out, q < NFIXED ? fixed_expected[q] : "ok");
      fail(&w->s, sql, detail);
    }
  }
  free(blob);
  free(out);
  if (sqlite3_close(db) != SQLITE_OK) fail(&w->s, "close", "statements left open");
  return NULL;
}

/* Creates the database, computes the expected results single-threaded,
** then runs the threads. Returns the number of FAIL lines printed. */
static int variant(const char *name, const char *dir, double seconds) {
  char path[4096], uri[4200], out[1 << 16];
  stats setup = {0};
  snprintf(path, sizeof path, "%s/%s.db", dir, name);
  for (const char *suffix = ""; suffix; suffix = *suffix ? NULL : "-wal") {
    char p[4200];
    snprintf(p, sizeof p, "%s%s", path, suffix);
    unlink(p);
  }
  snprintf(uri, sizeof uri, "file:%s%s", path, shared_cache ? "?cache=shared" : "");
  /* The first connection stays open throughout: shared cache keeps the cache
  ** while one connection uses it, and the expected values come from it. */
  sqlite3 *db = open_conn(uri, 0, &setup);
  if (!db) {
    printf("FAIL stress/%s: %s\n", name, setup.first_error);
    return 1;
  }
  for (size_t i = 0; i < sizeof setup_sql / sizeof setup_sql[0]; i++)
    if (run(db, &setup, setup_sql[i], NULL, 0, out, sizeof out) != SQLITE_OK) {
      printf("FAIL stress/%s: setup: %s\n", name, out);
      sqlite3_close(db);
      return 1;
    }
  for (int q = 0; q < NFIXED; q++) {
    if (run(db, &setup, fixed_queries[q], NULL, 0, out, sizeof out) != SQLITE_OK || !strcmp(out, "NULL") ||
        !strcmp(out, "0") || !strcmp(out, "")) {
      printf("FAIL stress/%s: expected value of %s: %s\n", name, fixed_queries[q], out);
      sqlite3_close(db);
      return 1;
    }
    fixed_expected[q] = strdup(out);
  }
  for (int q = 0; q < NLIVE; q++)
    if (run(db, &setup, live_queries[q], NULL, 0, out, sizeof out) != SQLITE_OK || strcmp(out, "ok") != 0) {
      printf("FAIL stress/%s: before the threads, %s: %s\n", name, live_queries[q], out);
      sqlite3_close(db);
      return 1;
    }

  worker ws[NTHREADS];
  pthread_t th[NTHREADS];
  double t0 = now();
  for (int i = 0; i < NTHREADS; i++) {
    memset(&ws[i], 0, sizeof ws[i]);
    ws[i].id = i;
    ws[i].uri = uri;
    ws[i].until = t0 + seconds;
    if (pthread_create(&th[i], NULL, work, &ws[i]) != 0) {
      printf("FAIL stress/%s: pthread_create\n", name);
      exit(1);
    }
  }
  stats total = {0};
  for (int i = 0; i < NTHREADS; i++) {
    pthread_join(th[i], NULL);
    total.queries += ws[i].s.queries;
    total.writes += ws[i].s.writes;
    total.retries += ws[i].s.retries;
    total.busy_waits += ws[i].s.busy_waits;
    total.errors += ws[i].s.errors;
  }
  double elapsed = now() - t0;
  /* The rows the writers left must still check out, single-threaded. */
  int after_ok = 1;
  for (int q = 0; q < NLIVE && after_ok; q++)
    after_ok = run(db, &setup, live_queries[q], NULL, 0, out, sizeof out) == SQLITE_OK && !strcmp(out, "ok");
  run(db, &setup, "SELECT count(*) FROM updates", NULL, 0, out, sizeof out);
  sqlite3_close(db);
  for (int q = 0; q < NFIXED; q++) free(fixed_expected[q]);

  int failed = total.errors != 0 || !after_ok || total.queries == 0 || total.writes == 0;
  printf(
      "%s stress/%s: %d threads (%d writers; FULLMUTEX and NOMUTEX alternate), %.1f s, %ld queries, "
      "%ld write transactions, %s rows left, %ld retries, %ld busy waits, %ld errors%s\n",
      failed ? "FAIL" : "ok", name, NTHREADS, NWRITERS, elapsed, total.queries, total.writes, out, total.retries,
      total.busy_waits, total.errors, after_ok ? "" : ", invariants broken after the run");
  for (int i = 0, shown = 0; i < NTHREADS && shown < MAX_ERRORS_SHOWN; i++)
    if (ws[i].s.errors) {
      printf("    thread %d: %ld errors, first: %s\n", i, ws[i].s.errors, ws[i].s.first_error);
      shown++;
    }
  return failed;
}

int main(int argc, char **argv) {
  const char *sec = argc > 1 ? argv[1] : getenv("STRESS_SECONDS");
  const char *dir = argc > 2 ? argv[2] : getenv("STRESS_DIR");
  double seconds = sec ? atof(sec) : 5.0;
  char tmpl[4096];
  if (seconds <= 0) seconds = 5.0;
  if (!dir) { /* a fresh temporary directory under build/ */
    mkdir("build", 0777);
    snprintf(tmpl, sizeof tmpl, "build/stress.XXXXXX");
    if (!mkdtemp(tmpl)) {
      printf("FAIL stress/setup: mkdtemp %s\n", tmpl);
      return 1;
    }
    dir = tmpl;
  } else {
    mkdir(dir, 0777);
  }
  if (!sqlite3_threadsafe()) {
    printf("SKIP stress: this SQLite is built with SQLITE_THREADSAFE=0\n");
    return 0;
  }
  /* The aggregates' thread pool (src/math/pool.c) splits arrays from 2048
  ** elements on, so the pool is raced too. */
  setenv("AR_THREADS", "2", 0);
  setenv("AR_THREADS_MIN", "2048", 0);
  if (sqlite3_auto_extension((void (*)(void))sqlite3_arrayrecord_init) != SQLITE_OK) {
    printf("FAIL stress/auto_extension\n");
    return 1;
  }
  int failed = variant("wal", dir, seconds);
  shared_cache = 1;
  failed += variant("shared_cache", dir, seconds);
  if ((ext_path = getenv("STRESS_EXT")) != NULL && *ext_path) {
    shared_cache = 0;
    sqlite3_reset_auto_extension(); /* the library's own copy this time */
    failed += variant("loadable", dir, seconds);
  }
  if (!failed && dir == tmpl) { /* keep the files of a failed run to look at */
    char p[4200];
    const char *names[] = {"wal.db",          "wal.db-wal",          "wal.db-shm",
                           "shared_cache.db", "shared_cache.db-wal", "shared_cache.db-shm",
                           "loadable.db",     "loadable.db-wal",     "loadable.db-shm"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      snprintf(p, sizeof p, "%s/%s", dir, names[i]);
      unlink(p);
    }
    rmdir(dir);
  }
  return failed != 0;
}
