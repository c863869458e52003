# blamer: top-level build.
#
#   make            library, tool and, if the running kernel's headers are
#                   installed, the module for it
#   make check      every test suite; ends with "N passed, N failed"
#                   (CHECK_JOBS=2 suites at a time unless -jN is given)
#   make demo       the guided tour in a VM
#   make bench      benchmarks with ratios against baselines
#   make deps       install the Debian packages everything needs (cheap
#                   when done: a stamp in $(BUILD))
#   make install    the library, headers, tool and man pages (PREFIX=/usr/local);
#                   make install-dkms, install-system, deb: the module's
#                   sources for DKMS, its udev rule and groups, the Debian
#                   packages (mk/install.mk)
#
# Variables: BUILD=dir (all outputs, default ./build), KVER=<kernel> (what
# `make modules` builds for: a full release or a test-bed name such as
# 6.1 or 6.12-debug, see scripts/kernel-path; default: the running kernel),
# KDIR=path (a kernel build tree; see module/module.mk). The test suites
# name their kernels themselves and never depend on `uname -r`.
# CPPFLAGS, CFLAGS and LDFLAGS from the environment or the command line
# are added to the project's own (Debian's build flags reach the library
# and the tool this way).
#
# Each part of the tree has a fragment included below. A fragment
#   - hangs its build products on `all`, either with its own `all: foo`
#     rule or by appending to ALL_TARGETS (all depends on ALL_TARGETS
#     after every fragment is read, so either order works);
#   - registers test suites by appending to CHECK_SUITES the names of make
#     targets that run `scripts/run-suite NAME -- cmd...`, which writes TAP
#     to $(RESULTS)/NAME.tap. `make check` runs them all with -k and then
#     scripts/tap-summary, whose exit status is the result of `make check`.
#   - adds to DEMO_DEPS what `make demo` needs built first.
# BUILD and RESULTS are exported so scripts (run-suite, tools/vm/run) use
# the same build directory as make.

SRC      := $(CURDIR)
BUILD    ?= $(SRC)/build
override BUILD := $(abspath $(BUILD))
RESULTS  := $(BUILD)/results
export BUILD RESULTS

CC       ?= cc
# Warnings are errors in this tree and in make check. A package build
# (debian/rules) sets WERROR= : a warning a newer compiler adds must not
# fail a user's build of a release.
WERROR   ?= -Werror
# Only the public headers: code outside lib/ sees nothing else.
CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) -O2 -g -I$(SRC)/include \
		 $(CPPFLAGS) $(CFLAGS)
CHECK_SUITES :=
ALL_TARGETS  :=
DEMO_DEPS    :=

.PHONY: all check demo bench deps clean
all:

# include, not -include: a fragment that is missing is an error, never
# suites silently gone from make check.
include mk/deps.mk
include mk/kernels.mk
include mk/check.mk
include lib/lib.mk
include tools/tools.mk
include module/module.mk
include tools/vm/vm.mk
include selftests/selftests.mk
include bench/bench.mk
include tools/demo/demo.mk
include Documentation/docs.mk
include examples/examples.mk
include bindings/python/python.mk
include mk/install.mk

all: $(ALL_TARGETS)

# Suites run with -k so one failure does not hide the others; the summary
# decides the exit status. Suites are independent targets, so unless the
# caller chose a -j of their own they run CHECK_JOBS at a time, with each
# suite's output kept together (-Otarget).
# CHECK_ONLY=pattern runs only the suites it matches (make's % pattern).
CHECK_JOBS ?= 2
CHECK_RUN = $(if $(CHECK_ONLY),$(filter $(CHECK_ONLY),$(CHECK_SUITES)),$(CHECK_SUITES))
# make starts the suites in the order it is given them, so the longest
# go first (CHECK_FIRST, longest first; measured in
# Documentation/testing.rst): one of them started last would run alone at
# the end while the other slot idles.
CHECK_FIRST := vm-module-6.12-debug trinity-6.1-debug vm-module-6.1-debug \
	trinity-6.12-debug deb-packages bed-bites-6.12-debug bed-bites-6.1-debug \
	vm-module-6.1-rt vm-module-6.12-rt deb-install vm-install-6.12 \
	vm-lib-6.12-debug vm-lib-6.1-debug fuzz
CHECK_ORDER = $(filter $(CHECK_RUN),$(CHECK_FIRST)) $(filter-out $(CHECK_FIRST),$(CHECK_RUN))
# Suites that mostly wait (on a real Prometheus's scrapes, a server's
# workers, a terminal, the clock of timing tests): under a third of their
# time on a CPU (Documentation/testing.rst, "The suites that wait"). In
# the job slots they held a slot while it idled; they run in a lane of
# their own (CHECK_QUIET_JOBS at a time) beside the slots instead. Their
# prerequisites are built first, through the slots (the suites' own
# targets with BLAMER_SUITE_BUILD_ONLY=1, so the list is the suites'
# rules, not a copy): the lanes are two makes, which must never build
# one file at once.
CHECK_QUIET := fleet-prometheus prometheus-server prometheus cli-top cli-completion \
	reader-interop reader-amplify reader-unit reader-trust python-unit \
	python-gunicorn python-uwsgi systemd-unit prefork \
	check-plumbing docs
CHECK_QUIET_JOBS ?= 2
CHECK_QUIET_RUN = $(filter $(CHECK_QUIET),$(CHECK_RUN))
# The debug kernels' suites (kernel-*-debug: built or found in the cache)
# run first, in a make of their own, and the others then with
# BED_KERNELS_READY naming those kernels (mk/kernels.mk): were a kernel
# suite still running when make reached the suites that need it, make
# would put those off until it had started every other suite (it did:
# the debug suites, the longest, started 7.5 minutes into a warm run). A
# cold build uses every CPU by itself, so nothing is lost by not running
# suites beside it.
check: deps
	@rm -rf $(RESULTS) $(BUILD)/gcov && mkdir -p $(RESULTS)
	@case " $$MAKEFLAGS" in *" -j"* | *jobserver*) j= ;; \
	 *) j="-j$(CHECK_JOBS) -Otarget" ;; esac; \
	$(if $(filter kernel-%,$(CHECK_RUN)),$(MAKE) --no-print-directory -k $$j \
		$(filter kernel-%,$(CHECK_RUN)) || true;) \
	$(if $(CHECK_QUIET_RUN),BLAMER_SUITE_BUILD_ONLY=1 $(MAKE) --no-print-directory -k $$j \
		$(CHECK_QUIET_RUN) || true; \
	 { MAKEFLAGS='$(filter-out -j% --jobserver-auth=% --jobserver-fds=%,$(MAKEFLAGS))' \
		$(MAKE) --no-print-directory -k -j$(CHECK_QUIET_JOBS) -Otarget \
		$(CHECK_QUIET_RUN) || true; } & ) \
	$(MAKE) --no-print-directory -k $$j \
		BED_KERNELS_READY='$(patsubst kernel-%,%,$(filter kernel-%,$(CHECK_RUN)))' \
		$(filter-out kernel-% $(CHECK_QUIET),$(CHECK_ORDER)) || true; \
	wait
	@$(SRC)/scripts/tap-summary $(RESULTS) $(CHECK_RUN)

clean:
	rm -rf $(BUILD)
