# make demo: the guided tour in a VM (tools/demo/run-demo).
#
# Other fragments add what the tour needs built to DEMO_DEPS; this file is
# included last so they all count. The module for KVER is always needed.

DEMO_DEPS += $(BUILD)/kmod-$(KVER)/blamer.ko

demo: deps $(DEMO_DEPS)
	@KVER=$(KVER) $(SRC)/tools/demo/run-demo
