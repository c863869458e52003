# tools/vm: the QEMU test bed.
#
#   tools/vm/run --kernel 6.1|6.12 [--timeout S] [--add HOST[:GUEST]]... -- 'cmd'
#       boots a Debian kernel under TCG and runs cmd as root; see the header
#       of tools/vm/run and Documentation/testing.rst.
#   make vm-warn-modules
#       builds the deliberately warning test module for both kernels
#       ($(BUILD)/vm/warn-<KVER>/vm_warn_test.ko), used by the self-test.
#   make vm-runner
#       the runner's own TAP suite (part of `make check`).

VM_KVERS     := 6.1 6.12
VM_WARN_SRCS := $(SRC)/tools/vm/tests/warn/warn.c $(SRC)/tools/vm/tests/warn/Kbuild
VM_WARN_KOS  := $(foreach k,$(VM_KVERS),$(BUILD)/vm/warn-$(k)/vm_warn_test.ko)

.PHONY: vm-warn-modules vm-runner
vm-warn-modules: $(VM_WARN_KOS)

# Built from a copy so the source tree stays free of kbuild litter and the
# two kernels do not share objects.
$(BUILD)/vm/warn-%/vm_warn_test.ko: $(VM_WARN_SRCS)
	@mkdir -p $(@D)/src
	@cp -p $(VM_WARN_SRCS) $(@D)/src/
	$(MAKE) --no-print-directory -C $(shell $(SRC)/scripts/kernel-path --headers $*) \
		M=$(@D)/src modules
	@cp $(@D)/src/vm_warn_test.ko $@

# The warn modules are built inside the recipe, not as prerequisites: if
# one fails to build, the suite still runs and reports that as a failure.
CHECK_SUITES += vm-runner
vm-runner:
	@$(MAKE) --no-print-directory vm-warn-modules >$(BUILD)/vm-warn-build.log 2>&1 || \
		{ echo "vm-runner: warn module build failed:"; cat $(BUILD)/vm-warn-build.log; }
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/tools/vm/tests/runner-test
