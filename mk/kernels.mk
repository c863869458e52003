# The kernels of the test bed, by the names scripts/kernel-path resolves.
# VM suites iterate over these lists; nothing here depends on `uname -r`.
#
#   6.1 6.12              Debian's stock kernels: what users load the module on
#   6.1-rt 6.12-rt        Debian's PREEMPT_RT kernels
#   6.1-debug 6.12-debug  built from Debian's source by scripts/debug-kernel
#                         with KASAN, KFENCE, lockdep, UBSAN, gcov...
#
#   make debug-kernels        build BED_DEBUG and BED_DEBUG_EXTRA (cached
#                             outside the tree; a no-op once built)
#   make bed-module-KERNEL    the module for a bed kernel
#
# Suites kernel-<debug kernel> (one per BED_DEBUG kernel) build the debug
# kernels in `make check`. They are registered first, so on a fresh
# machine the long build starts at once, and every suite of a debug kernel
# waits for it through bed-kernel-<kernel> (a failed build is reported
# once, by its own suite, with the end of the log).

BED_STOCK := 6.1 6.12
BED_RT    := 6.1-rt 6.12-rt
# Debug kernels in `make check`, in the order they are built, and those
# only in `make check-debug-extra` (none now: both fit in CI's time, see
# Documentation/testing.rst for what each costs).
BED_DEBUG := 6.12-debug 6.1-debug
BED_DEBUG_EXTRA :=
BED_DEBUG_ALL = $(sort $(BED_DEBUG) $(BED_DEBUG_EXTRA))
# The module, library and reader suites run on VM_KERNELS; the module
# suite also on the RT kernels.
VM_KERNELS := $(BED_STOCK) $(BED_DEBUG)
VM_MODULE_KERNELS := $(VM_KERNELS) $(BED_RT)

# The suites of the BED_DEBUG_EXTRA kernels alone, as `make check` runs
# them (make check-debug-extra).
.PHONY: debug-kernels check-debug-extra
check-debug-extra:
ifeq ($(strip $(BED_DEBUG_EXTRA)),)
	@echo "check-debug-extra: no debug kernel outside make check (BED_DEBUG: $(BED_DEBUG))"
else
	@$(MAKE) --no-print-directory check BED_DEBUG='$(BED_DEBUG_EXTRA)' \
		BED_DEBUG_EXTRA= CHECK_ONLY='%-debug'
endif
debug-kernels:
	@for k in $(BED_DEBUG_ALL); do \
		$(SRC)/scripts/debug-kernel --build $${k%-debug} >/dev/null || exit; done

DEBUG_KERNEL_SUITES := $(addprefix kernel-,$(BED_DEBUG_ALL))
CHECK_SUITES += $(addprefix kernel-,$(BED_DEBUG))
.PHONY: $(DEBUG_KERNEL_SUITES)
# A cold build is make check's longest chain (every suite of its kernel
# waits for it), so here it runs at the suites' own priority, not at the
# nice 10 debug-kernel uses by itself: niced, it got what the other slot's
# suites left (64 of some 1,200 compiler runs in its first 4.5 minutes).
$(DEBUG_KERNEL_SUITES): kernel-%-debug:
	@BLAMER_KERNEL_NICE=$${BLAMER_KERNEL_NICE:-0} \
		$(SRC)/scripts/run-suite $@ -- $(SRC)/scripts/debug-kernel --tap $*

# make check's first make builds the debug kernels at once, one per job
# slot, each with -j$(nproc): no suite runs beside them (Makefile), and a
# build alone leaves a CPU idle for a fifth of its time (its links, its
# tarball's unpacking, the last objects), which the other build fills.

# Pattern rules whose targets are never files always run (.PHONY cannot
# name patterns). The more specific pattern wins for debug kernels.
# make check runs the kernel suites first and then the others with
# BED_KERNELS_READY naming those kernels (Makefile): a suite of one of
# them does not wait for its kernel's suite, and one whose kernel failed
# to build fails on its own (scripts/kernel-path builds nothing). Any
# other debug kernel is built or found through its suite, as before.
$(foreach k,$(filter-out $(BED_KERNELS_READY),$(BED_DEBUG_ALL)),\
  $(eval bed-kernel-$(k): kernel-$(k)))
bed-kernel-%: ;
# Suites build their kernel's module in their recipes (vm-module, vm-lib,
# kfuzz, bed-bites...) as well as through this target, and two suites of
# one kernel may do so at once: one kernel's build at a time (kbuild in
# one output directory, its Module.symvers written by each run).
bed-module-%: bed-kernel-%
	@mkdir -p $(BUILD)
	@flock $(BUILD)/.bed-module-$*.lock $(MAKE) --no-print-directory KVER=$* modules

# ---- coverage: the module's line coverage on the debug kernels
# Suites on a debug kernel bring the module's gcov data back from the guest
# (tools/vm/run, BLAMER_VM_GCOV) into $(GCOV_DIR)/<suite>/; coverage-<kernel>
# sums the selftests' runs and the fuzzer's and lists the lines no run
# reached (scripts/coverage, report in $(BUILD)/coverage/<kernel>.txt).
GCOV_DIR := $(BUILD)/gcov
COVERAGE_SELFTESTS := vm-module vm-lib vm-reader
COVERAGE_FUZZERS := trinity kfuzz
$(foreach k,$(BED_DEBUG_ALL),\
  $(foreach s,$(COVERAGE_SELFTESTS) $(COVERAGE_FUZZERS),\
    $(eval $(s)-$(k): export BLAMER_VM_GCOV = $(GCOV_DIR)/$(s)-$(k))))

COVERAGE_SUITES := $(addprefix coverage-,$(BED_DEBUG_ALL))
CHECK_SUITES += $(addprefix coverage-,$(BED_DEBUG))
.PHONY: $(COVERAGE_SUITES) coverage
# make coverage: those suites and the report, for the BED_DEBUG kernels.
coverage: $(addprefix coverage-,$(BED_DEBUG))
$(COVERAGE_SUITES): coverage-%: $(foreach s,$(COVERAGE_SELFTESTS) $(COVERAGE_FUZZERS),$(s)-%)
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/scripts/coverage $* $(GCOV_DIR) \
		selftests=$(subst $(eval) ,:,$(foreach s,$(COVERAGE_SELFTESTS),$(GCOV_DIR)/$(s)-$*)) \
		fuzzers=$(subst $(eval) ,:,$(foreach s,$(COVERAGE_FUZZERS),$(GCOV_DIR)/$(s)-$*))
