# The blamer command (reader owns this fragment).
#
#   make tools          $(BUILD)/tools/blamer  (dynamic, libkmod)
#   make tools-static   $(BUILD)/static/blamer (static, raw module syscalls; for the VM)
#
# The tool links the reader objects directly (not libblamer), so it builds
# and runs without the writer side. Reader sources: lib/reader.mk.
-include $(SRC)/lib/reader.mk

TOOLS_DIR     := $(BUILD)/tools
BLAMER_CLI_SRCS := $(filter-out %/kmod_libkmod.c %/kmod_raw.c,\
			$(wildcard $(SRC)/tools/blamer/*.c))
TOOLS_CFLAGS  := $(CFLAGS_COMMON) -I$(SRC)/include/uapi -I$(SRC)/tools/blamer
TOOLS_HDRS    := $(wildcard $(SRC)/tools/blamer/*.h) $(wildcard $(SRC)/lib/*.h) \
		 $(SRC)/include/blamer.h $(SRC)/include/uapi/linux/blamer.h
READER_OBJS   := $(patsubst $(SRC)/lib/%.c,$(TOOLS_DIR)/obj/lib/%.o,$(LIB_READER_SRCS))
CLI_OBJS      := $(patsubst $(SRC)/tools/blamer/%.c,$(TOOLS_DIR)/obj/cli/%.o,$(BLAMER_CLI_SRCS))
STATIC_OBJS   := $(patsubst $(TOOLS_DIR)/obj/%,$(BUILD)/static/obj/%,$(READER_OBJS) $(CLI_OBJS))

.PHONY: tools tools-static
all: tools
tools: $(TOOLS_DIR)/blamer
tools-static: $(BUILD)/static/blamer

$(TOOLS_DIR)/obj/lib/%.o: $(SRC)/lib/%.c $(TOOLS_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) -c -o $@ $<
$(TOOLS_DIR)/obj/cli/%.o: $(SRC)/tools/blamer/%.c $(TOOLS_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) -c -o $@ $<
$(BUILD)/static/obj/lib/%.o: $(SRC)/lib/%.c $(TOOLS_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) -c -o $@ $<
$(BUILD)/static/obj/cli/%.o: $(SRC)/tools/blamer/%.c $(TOOLS_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) -c -o $@ $<

$(TOOLS_DIR)/blamer: $(READER_OBJS) $(CLI_OBJS) $(TOOLS_DIR)/obj/cli/kmod_libkmod.o
	$(CC) $(LDFLAGS) -o $@ $^ -lkmod -lm

# Debian has no libkmod.a: the static binary loads modules with
# finit_module(2)/delete_module(2) directly (tools/blamer/kmod_raw.c).
$(BUILD)/static/blamer: $(STATIC_OBJS) $(BUILD)/static/obj/cli/kmod_raw.o
	$(CC) -static -o $@ $^ -lm
