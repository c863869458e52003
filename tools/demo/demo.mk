# make demo: the guided tour in a VM (tools/demo/run-demo).
#
# Other fragments add what the tour needs built to DEMO_DEPS; this file is
# included last so they all count. The module for KVER is always needed.
# DEMO_DEPS are built by a sub-make so that, even with -j, nothing starts
# compiling before `deps` has installed the compilers and kernel headers.

DEMO_DEPS += $(BUILD)/kmod-$(KVER)/blamer.ko

demo: deps
	@$(MAKE) --no-print-directory $(DEMO_DEPS)
	@KVER=$(KVER) $(SRC)/tools/demo/run-demo
