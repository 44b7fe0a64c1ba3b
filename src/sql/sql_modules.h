/* SPDX-License-Identifier: Apache-2.0 */
/*
** sql_modules.h — the registration function of every SQL binding file,
** called in turn by sqlite3_arrayrecord_init (arrayrecord.c).
*/
#ifndef AR_SQL_MODULES_H
#define AR_SQL_MODULES_H

#include "sqlite3ext.h"

int sql_npy_register(sqlite3 *db, char **pzErrMsg);
int sql_record_register(sqlite3 *db, char **pzErrMsg);
int sql_build_register(sqlite3 *db, char **pzErrMsg);
int vtab_array_record_register(sqlite3 *db, char **pzErrMsg);
int vtab_npy_each_register(sqlite3 *db, char **pzErrMsg);
int sql_flower_register(sqlite3 *db, char **pzErrMsg);
int vtab_ar_objects_register(sqlite3 *db, char **pzErrMsg);
int sql_formats_register(sqlite3 *db, char **pzErrMsg);
int sql_math_register(sqlite3 *db, char **pzErrMsg);
int sql_record_math_register(sqlite3 *db, char **pzErrMsg);
int sql_aggregate_register(sqlite3 *db, char **pzErrMsg);
int vtab_ar_stats_register(sqlite3 *db, char **pzErrMsg);
int vtab_ar_compare_register(sqlite3 *db, char **pzErrMsg);
int vtab_ar_rolling_register(sqlite3 *db, char **pzErrMsg);
int sql_repr_register(sqlite3 *db, char **pzErrMsg);
int sql_threads_register(sqlite3 *db, char **pzErrMsg);
int sql_pool_register(sqlite3 *db, char **pzErrMsg);
/* Removes what sql_pool_register registered (a later registrar failed). */
void sql_pool_unregister(sqlite3 *db);
int sql_robust_register(sqlite3 *db, char **pzErrMsg);
int sql_recorddict_register(sqlite3 *db, char **pzErrMsg);
int vtab_record_dict_register(sqlite3 *db, char **pzErrMsg);
int sql_message_register(sqlite3 *db, char **pzErrMsg);
int sql_strategy_register(sqlite3 *db, char **pzErrMsg);
int sql_inspect_register(sqlite3 *db, char **pzErrMsg);
int vtab_ar_inspect_register(sqlite3 *db, char **pzErrMsg);
int sql_pack_register(sqlite3 *db, char **pzErrMsg);

#endif
