/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_util.h — helpers shared by the SQL binding files: argument fetching
** with NULL/type handling, error reporting in the "fname: problem" form,
** results that respect SQLITE_LIMIT_LENGTH, and the registration table type.
*/
#ifndef AR_SQL_UTIL_H
#define AR_SQL_UTIL_H

#include "sqlite3ext.h"

#include "codec/buf.h"
#include "codec/npy.h"
#include "codec/record.h"

/* Each registered function's user data is its sql_function entry: the C
** code learns its SQL name (for messages) and an op code, so one C function
** can serve several closely related SQL functions. */
#define SQL_ENTRY(ctx) ((const sql_function *)sqlite3_user_data(ctx))
#define SQL_FNAME(ctx) (SQL_ENTRY(ctx)->name)
#define SQL_OP(ctx) (SQL_ENTRY(ctx)->op)

/* Every function and aggregate: UTF-8, same result for same input, and no
** side effects, so it is safe in views, triggers, indexes and CHECKs. */
#define SQL_PURE (SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS)
/* The one exception: a function whose result is random on purpose
** (ar_add_noise without a seed). Still free of side effects. */
#define SQL_VOLATILE (SQLITE_UTF8 | SQLITE_INNOCUOUS)

/* One SQL function for the registration table. */
typedef struct sql_function {
  const char *name;
  int nargs; /* -1 for variadic */
  void (*xFunc)(sqlite3_context *, int, sqlite3_value **);
  void (*xStep)(sqlite3_context *, int, sqlite3_value **);
  void (*xFinal)(sqlite3_context *);
  int op; /* free for the implementation */
} sql_function;

/* An aggregate that also works as a window function (OVER ...): xValue
** gives the current frame's result without ending the aggregate, xInverse
** removes the frame's oldest row. A type of its own rather than two more
** fields of sql_function, so the plain tables need no new initializers; the
** entry's user data is &f, so SQL_ENTRY, SQL_FNAME and SQL_OP work as for
** any function. */
typedef struct sql_window_function {
  sql_function f; /* xFunc NULL; xStep and xFinal as for an aggregate */
  void (*xValue)(sqlite3_context *);
  void (*xInverse)(sqlite3_context *, int, sqlite3_value **);
} sql_window_function;

/* Register a table of functions (user data = the entry, which must outlive
** the connection: keep tables static). A scalar function returns NULL when
** any argument is NULL, without its xFunc being called. On failure sets
** *pzErrMsg naming the function that failed. */
int sql_register(sqlite3 *db, const sql_function *fns, int count, char **pzErrMsg);
/* sql_register for scalar functions whose arguments after the first may
** be NULL (each such NULL documented: "a NULL base packs without one"):
** only a NULL first argument gives NULL without xFunc being called. */
int sql_register_optional(sqlite3 *db, const sql_function *fns, int count, char **pzErrMsg);
/* Register one scalar function whose user data is owned by the
** connection: entry's first member is its sql_function (so SQL_ENTRY and
** friends work), and SQLite calls destroy(entry) when the function goes
** (the connection closes, it is registered again) or when registering it
** fails. optional: as sql_register_optional. */
int sql_register_owned(sqlite3 *db, const sql_function *entry, int optional, void (*destroy)(void *), char **pzErrMsg);
/* sql_register with other flags (SQL_VOLATILE). */
int sql_register_flags(sqlite3 *db, const sql_function *fns, int count, int flags, char **pzErrMsg);
/* Register a table of window functions (sqlite3_create_window_function),
** errors as sql_register. */
int sql_register_window(sqlite3 *db, const sql_window_function *fns, int count, char **pzErrMsg);
#define SQL_REGISTER_WINDOW_TABLE(db, table, pzErrMsg) \
  sql_register_window((db), (table), (int)(sizeof(table) / sizeof((table)[0])), (pzErrMsg))
/* Register an eponymous table-valued function: module's client data is its
** CREATE TABLE statement (see sql_vtab_connect). Errors as sql_register. */
int sql_register_module(sqlite3 *db, const char *name, const sqlite3_module *module, const char *schema,
                        char **pzErrMsg);
/* sql_register of a whole static table. */
#define SQL_REGISTER_TABLE(db, table, pzErrMsg) \
  sql_register((db), (table), (int)(sizeof(table) / sizeof((table)[0])), (pzErrMsg))

/* Results. */
void sql_error(sqlite3_context *ctx, const char *fmt, ...);               /* "fname: ..." */
void sql_codec_error(sqlite3_context *ctx, int rc, const codec_err *err); /* nomem/toobig/msg */
uint64_t sql_limit(sqlite3_context *ctx);                                 /* SQLITE_LIMIT_LENGTH */
/* Hand a buffer to SQLite as the result without copying (or report its
** error). text != 0 makes it TEXT. */
void sql_result_buf(sqlite3_context *ctx, buf_t *b, int text);
/* A buffer whose limit is SQLITE_LIMIT_LENGTH. */
void sql_buf_init(sqlite3_context *ctx, buf_t *b);
/* A copy of n bytes at p as the BLOB result. SQLITE_TRANSIENT would have
** SQLite copy them into memory of its own, fresh pages for a large BLOB;
** a large one is copied here instead, into a block from the codec allocator
** (and its pool of freed blocks, alloc_pool.h), and handed over with
** codec_free as its destructor, so the block comes back. */
void sql_result_blob_copy(sqlite3_context *ctx, const void *p, uint64_t n);

/* The shape as a JSON array text result ("[2,3]"). */
void sql_result_shape(sqlite3_context *ctx, int ndim, const int64_t *shape);

/* A BLOB value's bytes: a zero-length BLOB (whose pointer SQLite gives as
** NULL) as a valid address with n 0. SQLITE_OK, or SQLITE_NOMEM when SQLite
** could not produce a longer BLOB's bytes. */
int sql_blob_span(sqlite3_value *v, codec_span *out);

/* Arguments. These return 1 when the value is usable, 0 when it is NULL
** (the result is left NULL), -1 after reporting an error. */
int sql_arg_blob(sqlite3_context *ctx, sqlite3_value *v, int argi, const char *what, const unsigned char **p,
                 uint64_t *n);
/* The problem sql_arg_blob reports for a non-BLOB value ("argument 1 must be
** a .npy BLOB, got text"), into err; for npy_error, ar_error and friends,
** which report instead of raising. Returns CODEC_CORRUPT. */
int sql_blob_type_problem(codec_err *err, sqlite3_value *v, int argi, const char *what);
int sql_arg_text(sqlite3_context *ctx, sqlite3_value *v, int argi, const char *what, const char **p, uint64_t *n);
/* npy_parse for a BLOB bound by the user: a 4- or 8-byte BLOB that is no
** .npy gets a message saying it looks like a NumPy scalar bound as bytes. */
int sql_npy_parse(const unsigned char *p, uint64_t n, npy_array *a, codec_err *err);
int sql_arg_npy(sqlite3_context *ctx, sqlite3_value *v, int argi, npy_array *a);
int sql_arg_record(sqlite3_context *ctx, sqlite3_value *v, int argi, record_t *rec);
/* A .npy argument that becomes an Array (ar, ar_set, ar_agg, npy_object_id):
** parsed, every dimension within Flower's int32 shape, and *bytes cut to the
** header and payload. Bytes after the payload (which NumPy ignores) are not
** stored, so the data is the file numpy.save would write. With a key
** (key.p not NULL), errors name the argument and the key. */
int sql_arg_npy_value(sqlite3_context *ctx, sqlite3_value *v, int argi, codec_span key, npy_array *a,
                      codec_span *bytes);
/* A record key: text, or an integer taken as its decimal text. */
int sql_arg_key(sqlite3_context *ctx, sqlite3_value *v, int argi, const unsigned char **p, uint64_t *n);
/* An INTEGER (not a REAL or text). */
int sql_arg_int64(sqlite3_context *ctx, sqlite3_value *v, int argi, const char *what, sqlite3_int64 *out);
/* A number (INTEGER or REAL; not text). */
int sql_arg_double(sqlite3_context *ctx, sqlite3_value *v, int argi, const char *what, double *out);
/* A dtype name such as 'float32' or '<f4'. */
int sql_arg_dtype(sqlite3_context *ctx, sqlite3_value *v, int argi, dt_dtype *d);

/* The result of a *_valid / *_error function for a check that ended in rc:
** *_valid gives 1 or 0, *_error NULL or the message; running out of memory
** raises SQLITE_NOMEM instead (it says nothing about the value). */
void sql_result_check(sqlite3_context *ctx, int rc, const codec_err *err, int want_error);
/* What a *_valid / *_error / *_check function gives: a 0/1, the message, or
** (SQL_CHECK_RAISE) 1 or the message raised as "fname: message". */
enum { SQL_CHECK_VALID, SQL_CHECK_ERROR, SQL_CHECK_RAISE };
/* The optional last argument of a *_check function (argument argi): only
** 'nonempty', which also rejects a BLOB without items. 1 when it is there
** and valid, 0 when absent, -1 after reporting an error. */
int sql_check_option(sqlite3_context *ctx, int argc, sqlite3_value **argv, int argi);
/* sql_result_check for any of the three ops; with nonempty, a check that
** passed on `items` == 0 fails with "the <what> is empty ...". */
void sql_result_check_op(sqlite3_context *ctx, int op, int rc, const codec_err *err, int nonempty, int items,
                         const char *what);

/* Results for one element: bool/int as INTEGER, uint64 above INT64_MAX and
** floats as REAL (NaN becomes NULL, as SQLite stores it), complex as the
** JSON text "[re,im]". */
void sql_result_value(sqlite3_context *ctx, const dt_value *v, dt_type t);

/* The parts every eponymous table-valued function shares. xConnect: the
** module's client data (sqlite3_create_module's last argument) is its CREATE
** TABLE statement; the table is a plain sqlite3_vtab, marked innocuous (it
** has no side effects). xDisconnect frees it. sql_vtab_open allocates a
** zeroed cursor of `size` bytes (its first member a sqlite3_vtab_cursor). */
int sql_vtab_connect(sqlite3 *db, void *schema, int argc, const char *const *argv, sqlite3_vtab **ppVtab, char **pzErr);
/* sql_vtab_connect's work for a table of its own type: declares schema,
** allocates a zeroed table of `size` bytes (its first member a
** sqlite3_vtab) and marks it innocuous when `innocuous` is set. */
int sql_vtab_connect_size(sqlite3 *db, const char *schema, size_t size, int innocuous, sqlite3_vtab **ppVtab);
int sql_vtab_disconnect(sqlite3_vtab *vtab);
int sql_vtab_open(size_t size, sqlite3_vtab_cursor **ppCursor);

/* xFilter's part every table-valued function shares: the hidden argument
** must be present (else "fname: missing argument (<what> BLOB)") and a
** BLOB (else the scalar functions' type message). On SQLITE_OK, arg->p is
** NULL for a NULL argument (no rows) or the BLOB's bytes. Errors are set on
** the vtab as "fname: ...". sql_vtab_error sets one from a message. */
int sql_vtab_blob_arg(sqlite3_vtab_cursor *base, const char *fname, const char *what, int idxNum, int argc,
                      sqlite3_value **argv, codec_span *arg);
int sql_vtab_error(sqlite3_vtab_cursor *base, const char *fname, int rc, const codec_err *err);
/* A column's error as its result: "<who>: message", or SQLITE_NOMEM for
** CODEC_NOMEM (a column context has no function for sql_codec_error to
** name). Returns 0. */
int sql_vtab_column_error(sqlite3_context *ctx, const char *who, int rc, const codec_err *err);

/* xBestIndex for a table-valued function with one required hidden argument
** in column `arg_col`: uses an equality constraint on it (idxNum 1), asks
** for a better plan when it is present but unusable (SQLITE_CONSTRAINT),
** and leaves idxNum 0 when it is absent so xFilter can say so. */
int sql_vtab_best_index(sqlite3_index_info *info, int arg_col);
/* xBestIndex's part for a table-valued function whose `nargs` hidden
** arguments (at most 8) are the columns from `first_col` on: each given by
** an equality constraint is used, in column order (argvIndex 1, 2, ...), and
** sets idxNum bit k for argument k; one that is present but unusable asks
** for another plan (SQLITE_CONSTRAINT). The caller sets the cost. */
int sql_vtab_best_index_args(sqlite3_index_info *info, int first_col, int nargs);

#endif
