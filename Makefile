# SPDX-License-Identifier: Apache-2.0
# sqlite-arrayrecord — build, test, demo.
#
#   make            build/arrayrecord.so (the loadable extension)
#   make test       build and run every test; last line "N passed, N failed"
#   make demo       the main job end to end on a small database
#   make static     build/libarrayrecord.a, to link into an application
#                   (register it with sqlite3_auto_extension, include/arrayrecord.h)
#   make fuzz / sanitize / valgrind / oom / coverage   see tests/harden.mk
#   make bench      speed, side by side with the peers (bench/README.md)
#
# Every source is compiled once, into $(BUILD)/obj, and the objects are linked
# into the extension, the static library, the unit tests and the test hosts.
# src/ is layered; each folder is one wildcard here:
#   src/codec/   formats (no SQLite)         -> codec objects
#   src/math/    numeric kernels (no SQLite) -> math objects, -O3, no FMA
#   src/sql/     SQL bindings + arrayrecord.c (the entry point) -> built twice:
#                for the loadable library (calls go through sqlite3_api) and
#                with SQLITE_CORE for programs that link SQLite directly.
# Builds run in parallel by default: JOBS jobs (default: the number of cores;
# make 4.3 does not show a command line's -j to the Makefile, so say JOBS=8
# rather than -j8).

CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= -g $(OPT)
WARN    := -std=c99 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes
PYTHON  ?= /usr/bin/python3
SQLITE3 ?= sqlite3
VERSION := $(shell cat VERSION)
SQLITE_LIB ?= -lsqlite3

# SQLITE_AMALGAMATION=dir/sqlite3.c: the hosts link that SQLite, compiled
# once into BUILD/sqlite3.o, instead of the system's (make test-amalgamation,
# tests/platforms.mk); its sqlite3.h comes before the system's.
ifneq ($(SQLITE_AMALGAMATION),)
override CFLAGS += -I$(patsubst %/,%,$(dir $(SQLITE_AMALGAMATION)))
SQLITE_LIB = $(BUILD)/sqlite3/sqlite3.o -lpthread -ldl -lm
endif

JOBS    ?= $(shell nproc 2>/dev/null || echo 1)
ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(JOBS) --output-sync=target
endif

# `.load arrayrecord` finds the library by its short name only in the
# dynamic loader's own directories (ldconfig caches lib*.so names only), so
# the default install goes to /usr/lib. With PREFIX=/usr/local, load it by
# path or put $(PREFIX)/lib on LD_LIBRARY_PATH.
PREFIX  ?= /usr
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
DESTDIR ?=

BUILD   := build
OBJ     := $(BUILD)/obj
# The loadable library's name and link flags: macOS wants a .dylib whose
# sqlite3_* references stay unresolved until SQLite loads it; the Windows
# cross-build (make windows) passes its own.
ifeq ($(shell uname -s),Darwin)
SO_SUFFIX ?= .dylib
SHARED    ?= -dynamiclib -undefined dynamic_lookup
endif
SO_SUFFIX ?= .so
SHARED    ?= -fPIC -shared
EXT     := $(BUILD)/arrayrecord$(SO_SUFFIX)
LIB     := $(BUILD)/libarrayrecord.a

CODEC_SRC := $(wildcard src/codec/*.c)
MATH_SRC  := $(wildcard src/math/*.c)
SQL_SRC   := $(wildcard src/sql/*.c) src/arrayrecord.c

CODEC_OBJ := $(CODEC_SRC:src/%.c=$(OBJ)/%.o)
MATH_OBJ  := $(MATH_SRC:src/%.c=$(OBJ)/%.o)
EXT_OBJ   := $(SQL_SRC:src/%.c=$(OBJ)/ext/%.o)
CORE_OBJ  := $(SQL_SRC:src/%.c=$(OBJ)/core/%.o)
PURE_OBJ  := $(CODEC_OBJ) $(MATH_OBJ)

# -fvisibility=hidden: the library exports its entry point only, so no
# internal name (buf_init, json_string, ...) can clash with, or be bound to,
# a symbol of the host process or of another extension.
OBJ_FLAGS := $(WARN) $(CFLAGS) -fPIC -fvisibility=hidden -Isrc -Iinclude -MMD -MP
# Numeric code is built with -O3 so the compiler vectorizes its loops, and
# without FMA contraction so results do not depend on the target CPU.
MATH_OPT  ?= -O3 -ffp-contract=off
LIBS      := -lm -lz -lzstd

.PHONY: all static test demo clean install uninstall

all: $(EXT)
static: $(LIB)

include tests/harden.mk
include tests/platforms.mk

$(CODEC_OBJ): $(OBJ)/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(OBJ_FLAGS) -c -o $@ $<

$(MATH_OBJ): $(OBJ)/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(OBJ_FLAGS) $(MATH_OPT) -c -o $@ $<

$(EXT_OBJ): $(OBJ)/ext/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(OBJ_FLAGS) -c -o $@ $<

$(CORE_OBJ): $(OBJ)/core/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(OBJ_FLAGS) -DSQLITE_CORE -c -o $@ $<

# The version lives in VERSION alone.
$(OBJ)/ext/arrayrecord.o $(OBJ)/core/arrayrecord.o: VERSION
$(OBJ)/ext/arrayrecord.o $(OBJ)/core/arrayrecord.o: OBJ_FLAGS += -DAR_VERSION='"$(VERSION)"'

$(EXT): $(PURE_OBJ) $(EXT_OBJ)
	$(CC) $(CFLAGS) $(SO_FLAGS) $(SHARED) -o $@ $^ $(LIBS)

$(LIB): $(PURE_OBJ) $(CORE_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

-include $(wildcard $(OBJ)/*/*.d $(OBJ)/*/*/*.d)

# C unit tests of the codecs and kernels, with a counting allocator
# (tests/c/unit_main.c provides the allocator hooks alloc_sqlite.c provides
# in the extension).
UNIT_SRC := tests/c/unit_main.c $(wildcard tests/c/test_*.c)
$(BUILD)/unit: $(UNIT_SRC) tests/c/unit.h $(PURE_OBJ)
	$(CC) $(WARN) $(CFLAGS) -Isrc -Itests/c -o $@ $(UNIT_SRC) $(PURE_OBJ) $(LIBS)

# The SQL test host: runs .sql files and prints results in a stable format.
$(BUILD)/sqlrun: tests/host/sqlrun.c tests/host/opendb.h $(HOST_DEPS)
	$(CC) $(WARN) $(CFLAGS) $(HOST_FLAGS) -o $@ tests/host/sqlrun.c $(HOST_LINK) $(SQLITE_LIB) $(LIBS)

# TEST_GROUPS: the groups of tests/run to run (default: every group but oom).
test: $(EXT) $(BUILD)/unit $(BUILD)/sqlrun hosts
	@BUILD=$(BUILD) PYTHON=$(PYTHON) tests/run $(TEST_GROUPS)

# The linters (tests/run lint): ruff, pinned in tests/requirements-lint.txt,
# in a virtual environment of its own; clang-format-14 is Debian's.
.PHONY: lint lint-env
lint-env: $(BUILD)/lint/bin/ruff
$(BUILD)/lint/bin/ruff: tests/requirements-lint.txt
	$(PYTHON) -m venv $(BUILD)/lint
	$(BUILD)/lint/bin/pip install -q --retries 10 -r tests/requirements-lint.txt
	@touch $@
lint:
	@tests/run lint

# The Flower test environment (tests/run flower): build/flwr, a virtual
# environment from Debian's python3 (its sqlite3 loads extensions), without
# system site packages (Debian's torch is built for NumPy 1), holding
# flwr[simulation] 1.42.0 (Ray 2.55.1, for the Simulation Engine) and NumPy 2
# from PyPI, every version pinned in
# tests/flower/constraints.txt, and this package installed editable: every
# process Flower starts imports bindings/python and loads build/arrayrecord.so.
FLWR := $(BUILD)/flwr
# A test environment's recipe: $(call PY_ENV,folder,constraints,packages)
# makes the virtual environment afresh, installs the packages under the
# constraints and this package editable.
define PY_ENV
rm -rf $(1)
$(PYTHON) -m venv $(1)
$(1)/bin/pip install -q --retries 10 --disable-pip-version-check -c $(2) setuptools wheel
$(1)/bin/pip install -q --retries 10 --disable-pip-version-check -c $(2) $(3)
$(1)/bin/pip install -q --disable-pip-version-check --no-deps --no-build-isolation -e bindings/python
endef
.PHONY: flower-env
flower-env: $(FLWR)/.installed $(EXT)
$(FLWR)/.installed: tests/flower/constraints.txt bindings/python/pyproject.toml bindings/python/setup.py
	$(call PY_ENV,$(FLWR),tests/flower/constraints.txt,flwr[simulation]==1.42.0)
	@$(FLWR)/bin/python -c "import flwr, numpy, ray; print('build/flwr: flwr', flwr.__version__, 'numpy', numpy.__version__, 'ray', ray.__version__)"
	@touch $@

# The crash soak of a logged run (tests/flower/soak.py): a 10-round FedAdam
# run killed with SIGKILL at SOAK_KILLS seeded random moments (clients
# training, evaluate_fn, inside the COMMIT, inside the checkpoint), resumed
# each time; the log checked after every kill, the end compared with an
# uninterrupted run. make test runs 5 kills (test_soak.py); CI runs this.
SOAK_KILLS ?= 20
SOAK_SEED  ?= 1
.PHONY: soak
soak: flower-env $(EXT)
	$(FLWR)/bin/python tests/flower/soak.py --kills $(SOAK_KILLS) --seed $(SOAK_SEED)

# The Datasette environment (tests/run datasette, the plugin
# sqlite_arrayrecord.datasette): build/datasette, a virtual environment from
# Debian's python3 as build/flwr, holding Datasette 0.65.5 (the stable line),
# selenium (the browser tests drive Debian's chromium and chromium-driver),
# flwr 1.42.0 (the test database is written by LoggingStrategy), every version
# pinned in tests/datasette/constraints.txt (flwr's pins are
# tests/flower/constraints.txt's), and this package installed editable, so
# Datasette finds the plugin by its entry point.
DSENV := $(BUILD)/datasette
.PHONY: datasette-env
datasette-env: $(DSENV)/.installed $(EXT)
$(DSENV)/.installed: tests/datasette/constraints.txt bindings/python/pyproject.toml bindings/python/setup.py
	$(call PY_ENV,$(DSENV),tests/datasette/constraints.txt,datasette==0.65.5 selenium flwr==1.42.0)
	@$(DSENV)/bin/python -c "import datasette.version, selenium, flwr; print('build/datasette: datasette', datasette.version.__version__, 'selenium', selenium.__version__, 'flwr', flwr.__version__)"
	@touch $@

# The tracking environment (tests/run tracking: the MLflow and TensorBoard
# exporters, sqlite_arrayrecord.export, and the notebook example):
# build/tracking, a virtual environment from Debian's python3 as build/flwr,
# holding MLflow 3.17.2 (its server, with a SQLite store, is what the tests
# export to; the exporter uses only the client, mlflow-skinny), TensorBoard
# 2.21.0 (`tensorboard --logdir` and its event reader), flwr 1.42.0 (the
# test database is written by LoggingStrategy), every version pinned in
# tests/tracking/constraints.txt, and this package installed editable.
TRENV := $(BUILD)/tracking
.PHONY: tracking-env
tracking-env: $(TRENV)/.installed $(EXT)
$(TRENV)/.installed: tests/tracking/constraints.txt bindings/python/pyproject.toml bindings/python/setup.py
	$(call PY_ENV,$(TRENV),tests/tracking/constraints.txt,mlflow==3.17.2 tensorboard==2.21.0 flwr==1.42.0)
	@$(TRENV)/bin/python -c "import mlflow, tensorboard, flwr; print('build/tracking: mlflow', mlflow.__version__, 'tensorboard', tensorboard.__version__, 'flwr', flwr.__version__)"
	@touch $@

# examples/flower_app on a real local federation (a SuperLink and two
# SuperNodes on 127.0.0.1), logged with LoggingStrategy into
# build/flower-demo.db, then the views and a few sql/queries.sql recipes.
.PHONY: flower-demo
flower-demo: flower-env $(EXT)
	$(FLWR)/bin/python examples/flower_app/run_demo.py --db $(abspath $(BUILD))/flower-demo.db

demo: $(EXT)
	@rm -f $(BUILD)/demo.db
	@$(SQLITE3) $(BUILD)/demo.db < examples/demo.sql

install: $(EXT) $(LIB)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR)
	install -m 0755 $(EXT) $(DESTDIR)$(LIBDIR)/$(notdir $(EXT))
	install -m 0644 $(LIB) $(DESTDIR)$(LIBDIR)/libarrayrecord.a
	install -m 0644 include/arrayrecord.h $(DESTDIR)$(INCDIR)/arrayrecord.h

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/$(notdir $(EXT)) $(DESTDIR)$(LIBDIR)/libarrayrecord.a \
	  $(DESTDIR)$(INCDIR)/arrayrecord.h

clean:
	rm -rf $(BUILD)

# Speed targets, measured side by side and printed (never asserted in tests):
# `make bench`, or `make bench QUICK=1` for data about ten times smaller.
# Flower's side runs Flower's own code in build/flwr when it exists (make
# flower-env), else bench/flower_way.py's copy of it; bench/curves.png is
# rewritten by a full run (bench/README.md).
.PHONY: bench bench-scale
bench: $(EXT) $(BUILD)/bench_memcpy $(BUILD)/bench_noop.so $(BUILD)/bench_sha256 $(BUILD)/bench_pack
	$(PYTHON) bench/run.py $(if $(QUICK),--quick)

# The median and trimmed mean of 64 clients x 32 MB under a 512 MB heap limit
# (2 GB written to /tmp; a few minutes); then every view, recipe and
# examples/plot_rounds.py on 5 clients x 3 rounds of resnet18-sized records
# (45 MB each), timed against reading their records once, with their
# temporary disk space (bench/views_at_scale.py; ~1 GB in /tmp).
bench-scale: $(EXT)
	$(PYTHON) bench/at_scale.py $(SCALE)
	$(PYTHON) bench/views_at_scale.py

$(BUILD)/bench_memcpy: bench/memcpy.c
	@mkdir -p $(@D)
	$(CC) $(WARN) -O2 -o $@ bench/memcpy.c

$(BUILD)/bench_noop.so: bench/noop.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CFLAGS) -fPIC -shared -o $@ bench/noop.c

# The Python package (bindings/python, distribution sqlite-arrayrecord): a
# wheel in build/python, built offline with Debian's python3-build,
# python3-setuptools and python3-wheel.
.PHONY: python
python:
	$(PYTHON) -m build --no-isolation --wheel --outdir $(BUILD)/python bindings/python

# Packing and unpacking in C alone (bench/pack.c), on the codecs' objects.
$(BUILD)/bench_pack: bench/pack.c $(PURE_OBJ)
	$(CC) $(WARN) -O2 -pthread -Isrc -o $@ bench/pack.c $(PURE_OBJ) $(LIBS)

# The project's SHA-256 alone, portable and SHA-NI (bench/sha256.c).
$(BUILD)/bench_sha256: bench/sha256.c $(OBJ)/codec/sha256.o $(OBJ)/codec/sha256_ni.o
	$(CC) $(WARN) -O2 -Isrc -o $@ $^

# The server optimizer steps take square roots in their loops: without errno
# (results unchanged) GCC and clang vectorize them.
$(OBJ)/math/serveropt.o: MATH_OPT += -fno-math-errno
