# bindings/python: the CPython extension blamer._blamer (C API, over
# libblamer) and the pure-Python package blamer around it
# (Documentation/python.rst).
#
#   make python         $(BUILD)/python/blamer/: the package, importable
#                       with PYTHONPATH=$(BUILD)/python; the extension for
#                       Debian's python3 and, if python3-dbg is installed,
#                       for its debug build (the tests' reference counts)
#   make install        also installs the package (mk/install.mk):
#                       PYTHONDIR, default /usr/lib/python3/dist-packages
#                       for PREFIX=/usr, $(PREFIX)/lib/python3.X/
#                       dist-packages for /usr/local (Debian's sys.path),
#                       else $(PREFIX)/lib/python3.X/site-packages (the
#                       user site of PREFIX=~/.local)
#
# Built against Debian's Python, whatever `python3` is on PATH.
#
# The extension links the shared libblamer, not a copy of its objects:
# one process has one library, so one default context and one fork
# handler, also when a C extension of the same program uses libblamer
# too (two copies would make two heaps of one process, and the dir
# backend refuses the second: one heap per process and directory); and
# Debian wants no embedded copies of a library. In the build tree it
# finds $(BUILD)/lib/libblamer.so.2 through an rpath relative to itself
# ($ORIGIN/../../lib); the installed one is linked again without it (an
# rpath only where LIBDIR is not a directory the loader searches).

PY           := /usr/bin/python3
PY_CONFIG    := /usr/bin/python3-config
PY_DBG       := /usr/bin/python3-dbg
PY_DBG_CONFIG := /usr/bin/python3-dbg-config
PY_VERSION   := $(shell $(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PY_INCLUDES  := $(shell $(PY_CONFIG) --includes 2>/dev/null)
PY_EXT       := $(shell $(PY_CONFIG) --extension-suffix 2>/dev/null)
PY_DBG_INCLUDES := $(shell $(PY_DBG_CONFIG) --includes 2>/dev/null)
PY_DBG_EXT   := $(shell $(PY_DBG_CONFIG) --extension-suffix 2>/dev/null)

PY_SRC       := $(SRC)/bindings/python
PY_BUILD     := $(BUILD)/python
PY_PKG       := $(PY_BUILD)/blamer
PY_C_SRCS    := $(addprefix $(PY_SRC)/_blamer/,module.c context.c activity.c value.c dag.c \
		  metric.c promvalue.c fleet.c reader.c snapshot.c convert.c)
PY_FILES     := $(notdir $(wildcard $(PY_SRC)/blamer/*.py))
PY_OBJS      := $(patsubst $(PY_SRC)/_blamer/%.c,$(PY_BUILD)/obj/%.o,$(PY_C_SRCS))
PY_DBG_OBJS  := $(patsubst $(PY_SRC)/_blamer/%.c,$(PY_BUILD)/obj-dbg/%.o,$(PY_C_SRCS))
PY_SO        := $(PY_PKG)/_blamer$(PY_EXT)
PY_DBG_SO    := $(if $(PY_DBG_EXT),$(PY_PKG)/_blamer$(PY_DBG_EXT))
PY_SO_INSTALL := $(PY_BUILD)/install/_blamer$(PY_EXT)
# Only the module's init function is exported.
PY_CFLAGS    := $(CFLAGS_COMMON) -fPIC -fvisibility=hidden -fno-strict-aliasing
PY_LDLIBS    := -L$(LIB_DIR) -lblamer

# Without Debian's python3 headers (python3-dev, which `make deps`
# installs) `make` and `make install` leave the binding out, saying so in
# one line; `make python` fails saying what to install.
PY_HAVE      := $(if $(PY_EXT),$(wildcard $(firstword $(subst -I,,$(PY_INCLUDES)))/Python.h))

.PHONY: python python-none
ifneq ($(PY_HAVE),)
all: python
python: $(PY_SO) $(PY_DBG_SO) $(addprefix $(PY_PKG)/,$(PY_FILES))
else
all: python-none
python-none:
	@echo "python: not built: no Python.h from $(PY_CONFIG) (install python3-dev: make deps)"
python:
	@echo "python: no Python.h from $(PY_CONFIG): install python3-dev (make deps)" >&2; exit 1
endif

$(PY_BUILD)/obj/%.o: $(PY_SRC)/_blamer/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PY_CFLAGS) $(PY_INCLUDES) -MMD -MP -c -o $@ $<
$(PY_BUILD)/obj-dbg/%.o: $(PY_SRC)/_blamer/%.c
	@mkdir -p $(dir $@)
	$(CC) $(PY_CFLAGS) $(PY_DBG_INCLUDES) -MMD -MP -c -o $@ $<
-include $(PY_OBJS:.o=.d) $(PY_DBG_OBJS:.o=.d)

# No -lpython: an extension takes the interpreter's symbols from the
# process that loads it (Debian's python3 has no libpython to link).
$(PY_SO): $(PY_OBJS) $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -shared -o $@ $(PY_OBJS) $(PY_LDLIBS) -Wl,-rpath,'$$ORIGIN/../../lib'
$(PY_DBG_SO): $(PY_DBG_OBJS) $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -shared -o $@ $(PY_DBG_OBJS) $(PY_LDLIBS) -Wl,-rpath,'$$ORIGIN/../../lib'

$(PY_PKG)/%.py: $(PY_SRC)/blamer/%.py
	@mkdir -p $(dir $@)
	cp $< $@

# ---- install (mk/install.mk hangs these on install and uninstall) ----
PY_SYSLIBDIRS = /usr/lib /usr/local/lib $(if $(MULTIARCH),/usr/lib/$(MULTIARCH) \
		 /usr/local/lib/$(MULTIARCH))
PY_RPATH     = $(if $(filter $(LIBDIR),$(PY_SYSLIBDIRS)),,-Wl,-rpath,$(LIBDIR))
PYTHONDIR    ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(if \
		$(filter /usr/local,$(PREFIX)),$(PREFIX)/lib/python$(PY_VERSION)/dist-packages,$(PREFIX)/lib/python$(PY_VERSION)/site-packages))

PY_INSTALL_FILES = $(PY_SO_INSTALL):$(PYTHONDIR)/blamer/_blamer$(PY_EXT) \
	$(foreach f,$(PY_FILES),$(PY_SRC)/blamer/$(f):$(PYTHONDIR)/blamer/$(f))

.PHONY: python-install python-uninstall
# Linked again for where it goes, at every install (the rpath, if any,
# is the install's LIBDIR).
ifneq ($(PY_HAVE),)
python-install: $(PY_OBJS) $(LIB_SO)
	@mkdir -p $(dir $(PY_SO_INSTALL))
	$(CC) $(LDFLAGS) -shared -o $(PY_SO_INSTALL) $(PY_OBJS) $(PY_LDLIBS) $(PY_RPATH)
	$(call install_files,$(PY_INSTALL_FILES))
else
python-install: python-none
endif
python-uninstall:
	$(call uninstall_files,$(PY_INSTALL_FILES))
	@rm -rf $(DESTDIR)$(PYTHONDIR)/blamer/__pycache__
	@rmdir $(DESTDIR)$(PYTHONDIR)/blamer 2>/dev/null || :

# ---- tests (bindings/python/tests, TAP through tests/tap.py) ----
#   python-unit      the writer and reader APIs, fork, threads, hostile
#                    heaps, no system call on the hot path (strace), with
#                    Debian's python3 on the dir backend
#   python-dbg       the same under python3-dbg, and every entry point's
#                    reference counts (tests/test_refleak.py)
#   python-valgrind  the writer, reader and fork tests under valgrind
#                    (memory errors in the extension or the library,
#                    PYTHONMALLOC=malloc so it sees Python's allocations)
PY_TESTS     := $(PY_SRC)/tests
PY_UNIT      := test_writer test_fork test_reader test_nosyscall test_prometheus
PY_TEST_ENV  := env -u BLAMER_BACKEND -u BLAMER_DIR PYTHONPATH=$(PY_BUILD) \
		BLAMER_CLI=$(TOOLS_DIR)/blamer PYTHONDONTWRITEBYTECODE=1
CHECK_SUITES += python-unit python-dbg python-valgrind
.PHONY: python-unit python-dbg python-valgrind

python-unit: python $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(PY_TEST_ENV) $(PY) $(PY_TESTS)/tap.py $(PY_UNIT)

python-dbg: python $(TOOLS_DIR)/blamer
ifneq ($(PY_DBG_SO),)
	@$(SRC)/scripts/run-suite $@ -- $(PY_TEST_ENV) $(PY_DBG) $(PY_TESTS)/tap.py \
		$(PY_UNIT) test_refleak
else
	@$(SRC)/scripts/run-suite $@ -- echo "1..0 # SKIP python3-dbg not installed (make deps)"
endif

python-valgrind: python $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- $(PY_TEST_ENV) PYTHONMALLOC=malloc nice -n 5 \
		valgrind -q --error-exitcode=99 --leak-check=no $(PY) $(PY_TESTS)/tap.py \
		test_writer test_reader test_fork test_prometheus

#   python-gunicorn  a Flask application under Debian's gunicorn (4 sync
#                    workers restarted every ~20 requests, one route that
#                    kills its worker), its prometheus_client metrics
#                    switched to blamer, scraped by Debian's Prometheus
#                    through `blamer export --listen` (tests/servers/)
#   python-uwsgi     the same under Debian's uWSGI (its master, 4 processes
#                    recycled every 20 requests; forks in C: no Python fork
#                    hook runs in its workers)
PY_SERVERS := python-gunicorn python-uwsgi
CHECK_SUITES += $(PY_SERVERS)
.PHONY: $(PY_SERVERS)
$(PY_SERVERS): python-%: python $(TOOLS_DIR)/blamer
	@$(SRC)/scripts/run-suite $@ -- env -u BLAMER_BACKEND -u BLAMER_DIR \
		$(PY_TESTS)/servers/server-test.sh $(TOOLS_DIR)/blamer $(PY_BUILD) $*
