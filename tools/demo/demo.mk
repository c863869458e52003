# make demo: the guided tour in a VM (tools/demo/run-demo).
#
# Other fragments add what the tour needs built to DEMO_DEPS; this file is
# included last so they all count. The tour runs the static blamer tool
# and tools/demo/demo-app (linked with libblamer.a) in the guest.

# KVER picks the demo's kernel: 6.1 (default) or 6.12.
DEMO_KVER := $(or $(KVER),6.1)
DEMO_DEPS += $(call kmod_ko,$(DEMO_KVER)) $(BUILD)/static/blamer $(BUILD)/static/demo-app

$(BUILD)/static/demo-app: $(SRC)/tools/demo/demo-app.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -static -o $@ $< $(LIB_A) -lpthread

# Two stages: on a fresh machine `make deps` installs the compilers and
# kernel headers the build needs, so nothing may start building before it
# finishes (with -j, prerequisites of one rule run in parallel).
.PHONY: demo-run
demo: deps
	@$(MAKE) --no-print-directory demo-run

demo-run: $(DEMO_DEPS)
	@KVER=$(DEMO_KVER) BUILD=$(BUILD) $(SRC)/tools/demo/run-demo
