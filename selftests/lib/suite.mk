# Library (writer) tests. Suites:
#   lib-asan      host, dir backend, clang ASan+UBSan: every test
#   lib-tsan      host, dir backend, clang TSan: the concurrency tests
#   vm-lib-<k>    the same tests in the VM against /dev/blamer (static gcc
#                 build), on each kernel of VM_KERNELS (mk/kernels.mk)
# The tests link the library built with their sanitizer's flags (not the
# installed library; selftests/selftests.mk) so that the sanitizers see
# every access, the reader included, so a test can read what the writer
# wrote as blamer does.

LIBT_SRC   := $(SRC)/selftests/lib
# One program per concern; test_concurrency is the one TSan runs.
LIBT_TESTS := test_context test_records test_dag test_metric test_heap test_process test_end \
	      test_concurrency
LIBT_DEPS  := $(LIBT_SRC)/validate.c $(wildcard $(LIBT_SRC)/*.h) $(KSELFTEST_HARNESS)

LIBT_ASAN   := $(addprefix $(BUILD)/asan/lib/,$(LIBT_TESTS))
LIBT_TSAN   := $(BUILD)/tsan/lib/test_concurrency
LIBT_STATIC := $(addprefix $(BUILD)/static/lib/,$(LIBT_TESTS))

VM_LIB_SUITES := $(addprefix vm-lib-,$(VM_KERNELS))
.PHONY: lib-tests lib-asan lib-tsan $(VM_LIB_SUITES)
lib-tests: $(LIBT_ASAN) $(LIBT_TSAN) $(LIBT_STATIC)

# $(call libt_program,FLAVOR,LDFLAGS): a test program of that flavor: its
# source, the validator and the flavor's library (selftests/selftests.mk).
define libt_program
$$(BUILD)/$(1)/lib/%: $$(LIBT_SRC)/%.c $$(BUILD)/$(1)/libt.a $$(LIBT_DEPS)
	@mkdir -p $$(@D)
	$$(TEST_CC_$(1)) $$(TEST_CFLAGS) $$(TEST_FLAGS_$(1)) -I$$(LIBT_SRC) $(2) -o $$@ $$< \
		$$(LIBT_SRC)/validate.c $$(BUILD)/$(1)/libt.a -lm -lpthread
endef
$(eval $(call libt_program,asan,))
$(eval $(call libt_program,tsan,))
$(eval $(call libt_program,static,-static))

CHECK_SUITES += lib-asan lib-tsan
lib-asan: $(LIBT_ASAN)
	@BUILD=$(BUILD) $(SRC)/scripts/run-suite lib-asan -- sh -c \
		'ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 && \
		 export ASAN_OPTIONS UBSAN_OPTIONS && fail=0 && \
		 for t in $(LIBT_ASAN); do $$t || fail=1; done; [ $$fail = 0 ]'

lib-tsan: $(LIBT_TSAN)
	@BUILD=$(BUILD) $(SRC)/scripts/run-suite lib-tsan -- sh -c \
		'TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" $(LIBT_TSAN)'

# In the VM: load the module, open the device to every user (the module
# leaves the mode to udev, which the test bed does not run), run every
# test as an unprivileged user against the device (dir-specific tests use
# a private directory). On the debug kernels test_end plants 1,000 dead
# heaps, not 10,000 (BLAMER_TEST_DEAD_HEAPS; the test says why): a dir
# backend test on tmpfs, it was 4/5 of those suites' time.
# $(call libt_vm_cmd,KERNEL)
libt_vm_cmd = insmod /blamer.ko && chmod 0666 /dev/blamer || exit 1; fail=0; \
	for t in $(LIBT_TESTS); do as-user env BLAMER_TEST_BACKEND=device \
	$(if $(filter %-debug,$(1)),BLAMER_TEST_DEAD_HEAPS=1000 )/bin/$$t || fail=1; done; \
	[ $$fail = 0 ]

# The programs and the module are built in the recipe, not as
# prerequisites: make puts off a goal whose prerequisites are being made
# until it has started every other goal, which started the debug kernels'
# vm-lib, among the longest suites, last of all (CHECK_FIRST in the
# Makefile). The lock keeps two kernels' suites from building the same
# programs at once; nothing else builds $(BUILD)/static/lib or its
# library. A build failure is the suite's failure, with the build's log.
CHECK_SUITES += $(VM_LIB_SUITES)
$(VM_LIB_SUITES): vm-lib-%: bed-kernel-%
	@mkdir -p $(BUILD)/static/lib
	@l=$(BUILD)/vm-lib-$*-build.log; \
	if flock $(BUILD)/static/lib/.build-lock $(MAKE) --no-print-directory \
		$(LIBT_STATIC) bed-module-$* >$$l 2>&1; then \
		BUILD=$(BUILD) $(SRC)/scripts/run-suite vm-lib-$* -- $(SRC)/tools/vm/run --kernel $* \
			--timeout 600 --quiet $(foreach t,$(LIBT_STATIC),--add $(t)) -- \
			'$(call libt_vm_cmd,$*)'; \
	else \
		$(SRC)/scripts/run-suite $@ -- sh -c 'sed "s/^/# /" "$$0"; \
			echo "not ok 1 - $$1: the tests or the module failed to build"; exit 1' $$l $@; \
	fi
