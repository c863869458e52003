# The blamer command.
#
#   make tools          $(BUILD)/tools/blamer  (dynamic, libkmod)
#   make tools-static   $(BUILD)/static/blamer (static, raw module syscalls; for the VM)
#
# The CLI sees only the public headers (include/). It links libblamer.a,
# from which only the reader and the exporters are pulled in: the tool
# carries no writer code.

TOOLS_DIR     := $(BUILD)/tools
BLAMER_CLI_SRCS := $(addprefix $(SRC)/tools/blamer/,main.c util.c cmd_list.c cmd_dump.c \
			cmd_blame.c cmd_top.c cmd_postmortem.c cmd_release.c cmd_export.c http.c cmd_kmod.c cmd_status.c term.c \
			metrics.c)
TOOLS_CFLAGS  := $(CFLAGS_COMMON) -I$(SRC)/include/uapi -I$(SRC)/tools/blamer \
		 -DBLAMER_VERSION='"$(VERSION)"'
CLI_OBJS      := $(patsubst $(SRC)/tools/blamer/%.c,$(TOOLS_DIR)/obj/%.o,$(BLAMER_CLI_SRCS))
# How modules are loaded: libkmod (dynamic build) or raw syscalls (static).
KMOD_OBJS     := $(TOOLS_DIR)/obj/kmod_libkmod.o $(TOOLS_DIR)/obj/kmod_raw.o

.PHONY: tools tools-static
all: tools
tools: $(TOOLS_DIR)/blamer
tools-static: $(BUILD)/static/blamer

$(TOOLS_DIR)/obj/%.o: $(SRC)/tools/blamer/%.c
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) -MMD -MP -c -o $@ $<
-include $(CLI_OBJS:.o=.d) $(KMOD_OBJS:.o=.d)

$(TOOLS_DIR)/blamer: $(CLI_OBJS) $(TOOLS_DIR)/obj/kmod_libkmod.o $(LIB_A)
	$(CC) $(LDFLAGS) -o $@ $^ -lkmod -lm

# Debian has no libkmod.a: the static binary loads modules with
# finit_module(2)/delete_module(2) directly (tools/blamer/kmod_raw.c).
$(BUILD)/static/blamer: $(CLI_OBJS) $(TOOLS_DIR)/obj/kmod_raw.o $(LIB_A)
	@mkdir -p $(dir $@)
	$(CC) -static -o $@ $^ -lm
