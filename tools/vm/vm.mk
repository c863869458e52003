# tools/vm: the QEMU test bed.
#
#   tools/vm/run --kernel 6.1|6.12 [--timeout S] [--add HOST[:GUEST]]... -- 'cmd'
#       boots a Debian kernel under TCG and runs cmd as root; see the header
#       of tools/vm/run and Documentation/testing.rst.
#   make vm-warn-modules
#       builds the deliberately warning test module for both kernels
#       ($(BUILD)/vm/warn-<release>/vm_warn_test.ko), used by the self-test.
#   make vm-runner
#       the runner's own TAP suite (part of `make check`).

VM_KVERS     := 6.1 6.12
VM_WARN_SRCS := $(SRC)/tools/vm/tests/warn/warn.c $(SRC)/tools/vm/tests/warn/Kbuild
# $(call vm_warn_ko,KERNEL): named by the release, like the module.
vm_warn_ko = $(BUILD)/vm/warn-$(shell $(SRC)/scripts/kernel-path --release $(1))/vm_warn_test.ko
VM_WARN_KOS  := $(foreach k,$(VM_KVERS),$(call vm_warn_ko,$(k)))

.PHONY: vm-warn-modules vm-runner
vm-warn-modules: $(VM_WARN_KOS)

# Built from a copy so the source tree stays free of kbuild litter and the
# two kernels do not share objects.
$(BUILD)/vm/warn-%/vm_warn_test.ko: $(VM_WARN_SRCS)
	@test -n '$(call kmod_kdir_of,$*)'
	@mkdir -p $(@D)/src
	@cp -p $(VM_WARN_SRCS) $(@D)/src/
	$(MAKE) --no-print-directory -C $(call kmod_kdir_of,$*) M=$(@D)/src modules
	@cp $(@D)/src/vm_warn_test.ko $@

# The warn modules are built inside the recipe, not as prerequisites: if
# one fails to build, the suite still runs and reports that as a failure.
CHECK_SUITES += vm-runner
vm-runner:
	@$(MAKE) --no-print-directory vm-warn-modules >$(BUILD)/vm-warn-build.log 2>&1 || \
		{ echo "vm-runner: warn module build failed:"; cat $(BUILD)/vm-warn-build.log; }
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/tools/vm/tests/runner-test

# ---- bed-bites-<kernel>: the debug kernels catch what they are for
# (tools/vm/tests/bed-bites): blamer.ko with the bugs of module/plant.c
# planted (BLAMER_PLANT=y, in $(BUILD)/plant-<release>/) and the warn
# module's UBSAN and KFENCE cases must each fail a run with the right
# report. Built in the recipe, so a build failure is the suite's failure.
BED_BITES_SUITES := $(addprefix bed-bites-,$(BED_DEBUG_ALL))
CHECK_SUITES += $(addprefix bed-bites-,$(BED_DEBUG))
.PHONY: $(BED_BITES_SUITES)
$(BED_BITES_SUITES): bed-bites-%: bed-kernel-%
	@r=$$($(SRC)/scripts/kernel-path --release $*) && \
	$(MAKE) --no-print-directory $(BUILD)/plant-$$r/blamer.ko \
		$(BUILD)/vm/warn-$$r/vm_warn_test.ko >$(BUILD)/bed-bites-$*-build.log 2>&1; \
	$(SRC)/scripts/run-suite $@ -- $(SRC)/tools/vm/tests/bed-bites $* \
		$$? $(BUILD)/bed-bites-$*-build.log \
		$(BUILD)/plant-$$r/blamer.ko $(BUILD)/vm/warn-$$r/vm_warn_test.ko

$(BUILD)/plant-%/blamer.ko: $(KMOD_SRCS)
	@mkdir -p $(@D)/src
	@cd $(SRC) && cp -p --parents $(KMOD_FILES) $(@D)/src/
	@test -n '$(call kmod_kdir_of,$*)'
	$(MAKE) --no-print-directory -C $(call kmod_kdir_of,$*) M=$(@D)/src BLAMER_PLANT=y modules
	@cp $(@D)/src/module/blamer.ko $@

# ---- trinity-<kernel>: Debian's trinity, bounded (tools/vm/tests/trinity),
# on the debug kernels in `make check`; TRINITY_CALLS per user, or
# TRINITY_SECONDS, whichever ends first.
TRINITY_CALLS ?= 5000
TRINITY_SECONDS ?= 150
TRINITY_SUITES := $(addprefix trinity-,$(BED_DEBUG_ALL) $(BED_STOCK))
CHECK_SUITES += $(addprefix trinity-,$(BED_DEBUG))
.PHONY: $(TRINITY_SUITES)
# The module is built in the recipe, not as a prerequisite: make puts off
# a suite whose prerequisite is being made until it has started every
# other suite, and trinity is among the longest (CHECK_FIRST). A build
# failure is the suite's failure, with the build's log.
$(TRINITY_SUITES): trinity-%: bed-kernel-%
	@l=$(BUILD)/trinity-$*-build.log; \
	if $(MAKE) --no-print-directory bed-module-$* >$$l 2>&1; then \
		$(SRC)/scripts/run-suite $@ -- $(SRC)/tools/vm/tests/trinity $* \
			$(TRINITY_CALLS) $(TRINITY_SECONDS); \
	else \
		$(SRC)/scripts/run-suite $@ -- sh -c 'sed "s/^/# /" "$$0"; \
			echo "not ok 1 - $$1: the module failed to build"; exit 1' $$l $@; \
	fi
