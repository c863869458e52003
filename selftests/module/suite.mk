# selftests/module: tests of the kernel module in the QEMU test bed, on
# every kernel of VM_MODULE_KERNELS (mk/kernels.mk): suites vm-module-6.1,
# vm-module-6.12-debug, vm-module-6.1-rt...
#
# blamer_module_test (kselftest harness), blamer_slabctl and blamer_fuzz
# are linked statically for the busybox guest; vm-module.sh drives them there, as root
# and as the unprivileged users, with Debian's stress-ng added with its
# libraries (--add-dynamic).

MODTEST_DIR := $(BUILD)/static/module
MODTEST_BINS := $(MODTEST_DIR)/blamer_module_test $(MODTEST_DIR)/blamer_slabctl \
	$(MODTEST_DIR)/blamer_fuzz
# The harness is not -Wextra clean; it builds with -Wall in the kernel.
MODTEST_CFLAGS := $(CFLAGS_COMMON) -Wno-unused-parameter -Wno-sign-compare \
	-Wno-clobbered -I$(SRC)/include/uapi -I$(KSELFTEST_DIR) -static -pthread
MODTEST_DEPS := $(SRC)/selftests/module/blamer_util.h \
	$(SRC)/include/uapi/linux/blamer.h

$(MODTEST_DIR)/blamer_module_test: $(SRC)/selftests/module/blamer_test.c \
		$(MODTEST_DEPS) $(KSELFTEST_HARNESS)
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

# The same tests as a 32-bit program exercise the compat ioctl path and the
# "same layout on 32 and 64 bit" promise. Needs gcc-multilib; optional: if
# it cannot be built the guest reports a SKIP. (The harness compares
# pointers through intmax_t casts, hence -Wno-pointer-to-int-cast.)
$(MODTEST_DIR)/blamer_module_test32: $(SRC)/selftests/module/blamer_test.c \
		$(MODTEST_DEPS) $(KSELFTEST_HARNESS)
	@mkdir -p $(@D)
	$(CC) -m32 $(MODTEST_CFLAGS) -Wno-pointer-to-int-cast -o $@ $<

.PHONY: module-selftests
module-selftests: $(MODTEST_BINS)

VM_MODULE_SUITES := $(addprefix vm-module-,$(VM_MODULE_KERNELS))
CHECK_SUITES += $(VM_MODULE_SUITES)
.PHONY: $(VM_MODULE_SUITES)
# Built inside the recipe: a build failure is reported by the suite
# (selftests/module/vm-suite prints the log and fails) instead of
# stopping `make check`.
# Suites run in parallel share the test programs: the lock keeps one from
# copying a binary another is still writing.
$(VM_MODULE_SUITES): vm-module-%: bed-kernel-%
	@mkdir -p $(BUILD)/results $(MODTEST_DIR)
	@flock $(MODTEST_DIR)/.build-lock sh -c '\
	$(MAKE) --no-print-directory $(MODTEST_DIR)/blamer_module_test32 \
		>$(BUILD)/vm-module-$*-build32.log 2>&1 || \
		rm -f $(MODTEST_DIR)/blamer_module_test32; \
	$(MAKE) --no-print-directory bed-module-$* module-selftests \
		>$(BUILD)/vm-module-$*-build.log 2>&1'; \
	BUILD=$(BUILD) $(SRC)/scripts/run-suite $@ -- \
		$(SRC)/selftests/module/vm-suite $* $$? \
		$(BUILD)/vm-module-$*-build.log
