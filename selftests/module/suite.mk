# selftests/module: tests of the kernel module in the QEMU test bed, on
# every kernel of VM_MODULE_KERNELS (mk/kernels.mk): suites vm-module-6.1,
# vm-module-6.12-debug, vm-module-6.1-rt...; and a static check of the
# test sources (module-selftests-checkpatch).
#
# One kselftest-harness program per concern (test_<concern>.c ->
# blamer_test_<concern>), blamer_slabctl and blamer_fuzz, all linked
# statically for the busybox guest; vm-module.sh drives them there, as
# root and as the unprivileged users, with Debian's stress-ng added with
# its libraries (--add-dynamic).

MODTEST_DIR := $(BUILD)/static/module
MODTEST_CONCERNS := ioctl map pages exit owner perm quota race fault
MODTEST_TESTS := $(addprefix $(MODTEST_DIR)/blamer_test_,$(MODTEST_CONCERNS))
MODTEST_BINS := $(MODTEST_TESTS) $(MODTEST_DIR)/blamer_slabctl \
	$(MODTEST_DIR)/blamer_fuzz
# The harness is not -Wextra clean; it builds with -Wall in the kernel.
MODTEST_CFLAGS := $(CFLAGS_COMMON) -Wno-unused-parameter -Wno-sign-compare \
	-Wno-clobbered -I$(SRC)/include/uapi -I$(KSELFTEST_DIR) -static -pthread
MODTEST_DEPS := $(SRC)/selftests/module/blamer_util.h \
	$(SRC)/include/uapi/linux/blamer.h
MODTEST_TDEPS := $(MODTEST_DEPS) $(SRC)/selftests/module/blamer_test.h \
	$(KSELFTEST_HARNESS)

$(MODTEST_DIR)/blamer_test_%: $(SRC)/selftests/module/test_%.c $(MODTEST_TDEPS)
	@mkdir -p $(@D)
	$(CC) $(MODTEST_CFLAGS) -o $@ $<

$(MODTEST_DIR)/blamer_slabctl: $(SRC)/selftests/module/blamer_slabctl.c \
		$(MODTEST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(MODTEST_CFLAGS) -o $@ $<

$(MODTEST_DIR)/blamer_fuzz: $(SRC)/selftests/module/blamer_fuzz.c \
		$(MODTEST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(MODTEST_CFLAGS) -o $@ $<

# The ioctl and mapping tests as 32-bit programs exercise the compat
# ioctl path and the "same layout on 32 and 64 bit" promise. Needs
# gcc-multilib; optional: if they cannot be built the guest reports a
# SKIP. (The harness compares pointers through intmax_t casts, hence
# -Wno-pointer-to-int-cast.)
MODTEST_TESTS32 := $(MODTEST_DIR)/blamer_test_ioctl32 \
	$(MODTEST_DIR)/blamer_test_map32
$(MODTEST_DIR)/blamer_test_%32: $(SRC)/selftests/module/test_%.c \
		$(MODTEST_TDEPS)
	@mkdir -p $(@D)
	$(CC) -m32 $(MODTEST_CFLAGS) -Wno-pointer-to-int-cast -o $@ $<

.PHONY: module-selftests
module-selftests: $(MODTEST_BINS)

VM_MODULE_SUITES := $(addprefix vm-module-,$(VM_MODULE_KERNELS))
CHECK_SUITES += $(VM_MODULE_SUITES) module-selftests-checkpatch
.PHONY: $(VM_MODULE_SUITES) module-selftests-checkpatch
# Built inside the recipe: a build failure is reported by the suite
# (selftests/module/vm-suite prints the log and fails) instead of
# stopping `make check`.
# Suites run in parallel share the test programs: the lock keeps one from
# copying a binary another is still writing.
$(VM_MODULE_SUITES): vm-module-%: bed-kernel-%
	@mkdir -p $(BUILD)/results $(MODTEST_DIR)
	@flock $(MODTEST_DIR)/.build-lock sh -c '\
	$(MAKE) --no-print-directory $(MODTEST_TESTS32) \
		>$(BUILD)/vm-module-$*-build32.log 2>&1 || \
		rm -f $(MODTEST_TESTS32); \
	$(MAKE) --no-print-directory bed-module-$* module-selftests \
		>$(BUILD)/vm-module-$*-build.log 2>&1'; \
	BUILD=$(BUILD) $(SRC)/scripts/run-suite $@ -- \
		$(SRC)/selftests/module/vm-suite $* $$? \
		$(BUILD)/vm-module-$*-build.log

# The tests and tools of the module are kernel-style C too: checkpatch
# --strict on each (kernel-doc has nothing to say about them).
MODTEST_SRCS := $(sort $(wildcard $(SRC)/selftests/module/*.c \
	$(SRC)/selftests/module/*.h))
module-selftests-checkpatch:
	@$(MAKE) --no-print-directory $(KSCRIPTS_STAMP)
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/module/check-checkpatch \
		$(KSCRIPTS_DIR)/checkpatch.pl $(SRC) \
		$(MODTEST_SRCS:$(SRC)/%=%)
