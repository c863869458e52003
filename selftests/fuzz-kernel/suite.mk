# selftests/fuzz-kernel: blamer_kfuzz, a fuzzer of /dev/blamer that knows
# its ABI (see the program's header), in the VM: suite kfuzz-<kernel> runs
# it for KFUZZ_SECONDS on that kernel with fault injection where the
# kernel has it, then unloads the module (selftests/fuzz-kernel/vm-kfuzz).
# `make check` runs it on the stock kernels and the BED_DEBUG kernels; any
# kernel of the bed by name (make kfuzz-6.12-debug KFUZZ_SECONDS=600);
# make fuzz-kernel runs FUZZ_KERNEL for FUZZ_KERNEL_SECONDS.

KFUZZ_BIN := $(BUILD)/static/fuzz-kernel/blamer_kfuzz
KFUZZ_SECONDS ?= 30

$(KFUZZ_BIN): $(SRC)/selftests/fuzz-kernel/blamer_kfuzz.c \
		$(SRC)/include/uapi/linux/blamer.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_COMMON) -I$(SRC)/include/uapi -static -pthread -o $@ $<

KFUZZ_SUITES := $(addprefix kfuzz-,$(BED_STOCK) $(BED_DEBUG_ALL))
CHECK_SUITES += $(addprefix kfuzz-,$(BED_STOCK) $(BED_DEBUG))
.PHONY: $(KFUZZ_SUITES)
# Built inside the recipe: a build failure is the suite's failure.
$(KFUZZ_SUITES): kfuzz-%: bed-kernel-%
	@mkdir -p $(BUILD)/results
	@$(MAKE) --no-print-directory bed-module-$* $(KFUZZ_BIN) \
		>$(BUILD)/kfuzz-$*-build.log 2>&1; \
	BUILD=$(BUILD) $(SRC)/scripts/run-suite $@ -- \
		$(SRC)/selftests/fuzz-kernel/vm-kfuzz $* $$? \
		$(BUILD)/kfuzz-$*-build.log $(KFUZZ_BIN) $(KFUZZ_SECONDS)

# make fuzz-kernel: a long run, outside make check.
FUZZ_KERNEL ?= 6.12-debug
FUZZ_KERNEL_SECONDS ?= 600
.PHONY: fuzz-kernel
fuzz-kernel:
	@$(MAKE) --no-print-directory kfuzz-$(FUZZ_KERNEL) \
		KFUZZ_SECONDS=$(FUZZ_KERNEL_SECONDS)
