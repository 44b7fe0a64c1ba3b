/* SPDX-License-Identifier: Apache-2.0 */
/*
** arrayrecord.h — the public interface of sqlite-arrayrecord.
**
** As a loadable extension (build/arrayrecord.so) nothing here is needed:
** `.load arrayrecord` or sqlite3_load_extension() finds the entry point.
**
** Linked into a program (make static: build/libarrayrecord.a, then link with
** -lsqlite3 -lm -lz), register it for every connection the program opens:
**
**   #include <sqlite3.h>
**   #include "arrayrecord.h"
**   sqlite3_auto_extension((void (*)(void))sqlite3_arrayrecord_init);
**
** or for one connection: sqlite3_arrayrecord_init(db, &errmsg, NULL).
** It refuses an SQLite older than SQLITE_ARRAYRECORD_MIN_SQLITE with a
** message saying so.
*/
#ifndef SQLITE_ARRAYRECORD_H
#define SQLITE_ARRAYRECORD_H

#include <sqlite3.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The oldest SQLite the extension runs on (SQLITE_INNOCUOUS functions and
** tables came in 3.31.0). */
#define SQLITE_ARRAYRECORD_MIN_SQLITE "3.31.0"
#define SQLITE_ARRAYRECORD_MIN_SQLITE_NUMBER 3031000

#ifdef _WIN32
__declspec(dllexport)
#elif defined(__GNUC__)
__attribute__((visibility("default"))) /* the library's one exported symbol */
#endif
    int sqlite3_arrayrecord_init(sqlite3 *db, char **pzErrMsg, const struct sqlite3_api_routines *pApi);

#ifdef __cplusplus
}
#endif

#endif
