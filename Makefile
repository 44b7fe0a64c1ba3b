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

BUILD   := build
EXT     := $(BUILD)/arrayrecord.so

CODEC_SRC := src/buf.c src/dtype.c src/npy.c src/record.c src/keyset.c src/json.c src/array.c
SQL_SRC   := src/alloc_sqlite.c src/sql_util.c src/sql_npy.c src/sql_record.c src/sql_build.c \
             src/vtab_array_record.c src/vtab_npy_each.c src/arrayrecord.c
HEADERS   := $(wildcard src/*.h)

.PHONY: all test demo clean unit sqltests pytests host

all: $(EXT)

include tests/harden.mk

$(EXT): $(CODEC_SRC) $(SQL_SRC) $(HEADERS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) $(SO_FLAGS) -fPIC -shared -o $@ $(CODEC_SRC) $(SQL_SRC) -lm

$(BUILD):
	mkdir -p $(BUILD)

# C unit tests of the codecs, with a counting allocator.
UNIT_SRC := $(wildcard tests/c/test_*.c)
$(BUILD)/unit: $(UNIT_SRC) tests/c/unit_main.c tests/c/unit.h $(CODEC_SRC) $(HEADERS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -Isrc -Itests/c -o $@ tests/c/unit_main.c $(UNIT_SRC) $(CODEC_SRC) -lm

# The SQL test host: runs .sql files and prints results in a stable format.
$(BUILD)/sqlrun: tests/host/sqlrun.c $(HOST_DEPS) | $(BUILD)
	$(CC) $(WARN) $(CFLAGS) -o $@ tests/host/sqlrun.c $(HOST_LINK) -lsqlite3 -lm

test: $(EXT) $(BUILD)/unit $(BUILD)/sqlrun hosts
	@BUILD=$(BUILD) PYTHON=$(PYTHON) tests/run

demo: $(EXT)
	@$(PYTHON) examples/demo.py

clean:
	rm -rf $(BUILD)
