# sqlite-arrayrecord — build, test, demo.
#
#   make            build/arrayrecord.so (the loadable extension)
#   make test       build and run every test; last line "N passed, N failed"
#   make demo       the main job end to end on a small database
#   make fuzz / sanitize / valgrind / oom / coverage   see tests/harden.mk
#
# Codec sources (no SQLite calls) and SQL binding sources are listed apart so
# the C unit tests link the codecs alone.

CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= -g $(OPT)
WARN    := -std=c99 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes
PYTHON  ?= /usr/bin/python3
SQLITE3 ?= sqlite3

# `.load arrayrecord` finds the library by its short name only in the
# dynamic loader's own directories (ldconfig caches lib*.so names only), so
# the default install goes to /usr/lib. With PREFIX=/usr/local, load it by
# path or put $(PREFIX)/lib on LD_LIBRARY_PATH.
PREFIX  ?= /usr
LIBDIR  ?= $(PREFIX)/lib
DESTDIR ?=

BUILD   := build
EXT     := $(BUILD)/arrayrecord.so

CODEC_SRC := src/buf.c src/dtype.c src/npy.c src/record.c src/keyset.c src/json.c src/array.c
SQL_SRC   := src/alloc_sqlite.c src/sql_util.c src/sql_npy.c src/sql_record.c src/sql_build.c \
             src/vtab_array_record.c src/vtab_npy_each.c src/arrayrecord.c
# Interop: Flower objects, safetensors, .npz (zlib is for .npz deflate only).
CODEC_SRC += src/sha256.c src/json_read.c src/flower_object.c src/safetensors.c src/npz.c
SQL_SRC   += src/sql_flower.c src/vtab_ar_objects.c src/sql_formats.c
HEADERS   := $(wildcard src/*.h)

# Numeric code (no SQLite calls either) is built as objects with -O3 so the
# compiler vectorizes its loops, and without FMA contraction so results do not
# depend on the target CPU.
MATH_SRC  := src/kernels.c src/arraymath.c
MATH_OPT  ?= -O3 -ffp-contract=off
MATH_OBJ  := $(MATH_SRC:src/%.c=$(BUILD)/%.o)
SQL_SRC   += src/sql_math.c src/sql_record_math.c src/sql_aggregate.c src/vtab_ar_stats.c

.PHONY: all test demo clean install uninstall

all: $(EXT)

include tests/harden.mk

# -fvisibility=hidden: the library exports its entry point only, so no
# internal name (buf_init, json_string, ...) can clash with, or be bound to,
# a symbol of the host process or of another extension.
$(EXT): $(CODEC_SRC) $(SQL_SRC) $(MATH_OBJ) $(HEADERS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) $(SO_FLAGS) -fvisibility=hidden -fPIC -shared -o $@ $(CODEC_SRC) $(SQL_SRC) $(MATH_OBJ) -lm -lz

$(MATH_OBJ): $(BUILD)/%.o: src/%.c $(HEADERS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) $(SO_FLAGS) $(MATH_OPT) -fvisibility=hidden -fPIC -c -o $@ $<

$(BUILD):
	mkdir -p $(BUILD)

# C unit tests of the codecs, with a counting allocator.
UNIT_SRC := $(wildcard tests/c/test_*.c)
$(BUILD)/unit: $(UNIT_SRC) tests/c/unit_main.c tests/c/unit.h $(CODEC_SRC) $(MATH_SRC) $(HEADERS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -Isrc -Itests/c -o $@ tests/c/unit_main.c $(UNIT_SRC) $(CODEC_SRC) $(MATH_SRC) -lm -lz

# The SQL test host: runs .sql files and prints results in a stable format.
$(BUILD)/sqlrun: tests/host/sqlrun.c tests/host/opendb.h $(HOST_DEPS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -o $@ tests/host/sqlrun.c $(HOST_LINK) -lsqlite3 -lm -lz

test: $(EXT) $(BUILD)/unit $(BUILD)/sqlrun hosts
	@BUILD=$(BUILD) PYTHON=$(PYTHON) tests/run

demo: $(EXT)
	@rm -f $(BUILD)/demo.db
	@$(SQLITE3) $(BUILD)/demo.db < examples/demo.sql

install: $(EXT)
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0755 $(EXT) $(DESTDIR)$(LIBDIR)/arrayrecord.so

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/arrayrecord.so

clean:
	rm -rf $(BUILD)

# Speed targets, measured side by side and printed (never asserted in tests):
# `make bench`, or `make bench QUICK=1` for data about ten times smaller.
.PHONY: bench
bench: $(EXT) $(BUILD)/bench_memcpy $(BUILD)/bench_noop.so
	$(PYTHON) bench/run.py $(if $(QUICK),--quick)

$(BUILD)/bench_memcpy: bench/memcpy.c | $(BUILD)
	$(CC) $(WARN) -O2 -o $@ bench/memcpy.c

$(BUILD)/bench_noop.so: bench/noop.c | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -fPIC -shared -o $@ bench/noop.c
