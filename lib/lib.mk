# libblamer: static and shared library.
#
# lib/ is five layers; a layer uses the ones above it in this list, never
# the ones below, and format/ and sys/ use nothing (Documentation/design.rst
# has the map):
#   format/  what writer and reader agree on: the heap format, atomics,
#            the activity clock, where heaps are
#   sys/     what writer and reader both ask the system: /proc
#   writer/  what an application links: contexts, the allocator, records
#   reader/  snapshots of every heap the caller may read
#   export/  JSON and Prometheus views of a snapshot (public API only)
# Each layer lists its sources and sees, besides include/, only its own
# and the lower layers' headers (LIB_INC_<layer>). Objects are built
# once, position independent, for both libraries and for the tools.
#
#   make lib            build/lib/libblamer.a, libblamer.so(.1), blamer.pc
#   make install        see mk/install.mk

LIB_FORMAT_SRCS := $(addprefix $(SRC)/lib/format/,clock.c where.c metric.c)
LIB_SYS_SRCS    := $(addprefix $(SRC)/lib/sys/,proc.c)
LIB_WRITER_SRCS := $(addprefix $(SRC)/lib/writer/,error.c sys.c clock_choose.c retention.c backend.c \
		     heap.c records.c modules.c registry.c tls.c context.c \
		     handle.c handle_store.c drops.c inherit.c \
		     process.c thread.c userdata.c log.c dag.c dag_shard.c \
		     metric.c metric_write.c)
LIB_READER_SRCS := $(addprefix $(SRC)/lib/reader/,snapshot.c copy.c slabs.c record.c \
		     decode_process.c decode_thread.c decode_userdata.c decode_module.c \
		     decode_drops.c parent_claim.c \
		     decode_log.c decode_dag.c decode_metric.c def_share.c module_index.c parse.c carry.c keep.c alive.c fd_keep.c dir_list.c dir_trust.c dir_buf.c dir_read.c dir_dead.c dir_comm.c dir.c dev.c pipeline.c series.c attrib.c names.c metric_names.c \
		     reader.c)
LIB_EXPORT_SRCS := $(addprefix $(SRC)/lib/export/,json_writer.c json_metric.c json.c prom.c prom_text.c \
						  prom_metric.c prom_fleet.c fleet.c fleet_state.c \
						  prom_path.c prom_cache.c prom_guard.c numtext.c)

LIB_INC_format := -I$(SRC)/lib/format
LIB_INC_sys    := -I$(SRC)/lib/sys
LIB_INC_writer := -I$(SRC)/lib/format -I$(SRC)/lib/sys -I$(SRC)/lib/writer
LIB_INC_reader := -I$(SRC)/lib/format -I$(SRC)/lib/sys -I$(SRC)/lib/reader
LIB_INC_export :=
# For tests and benchmarks that look inside (they build the sources
# themselves, with sanitizers): every layer's headers. Writer and reader
# each have an internal.h: a test names the one it means, by its layer
# ("writer/internal.h", from -I lib).
LIB_INCLUDES := -I$(SRC)/include/uapi -I$(SRC)/lib -I$(SRC)/lib/format -I$(SRC)/lib/sys \
		-I$(SRC)/lib/writer -I$(SRC)/lib/reader
LIB_PRIVATE_HDRS := $(wildcard $(SRC)/lib/*/*.h)

LIB_SRCS   := $(LIB_FORMAT_SRCS) $(LIB_SYS_SRCS) $(LIB_WRITER_SRCS) $(LIB_READER_SRCS) $(LIB_EXPORT_SRCS)
LIB_DIR    := $(BUILD)/lib
LIB_OBJS   := $(patsubst $(SRC)/lib/%.c,$(LIB_DIR)/obj/%.o,$(LIB_SRCS))
LIB_SOVER  := 2
LIB_A      := $(LIB_DIR)/libblamer.a
LIB_SO     := $(LIB_DIR)/libblamer.so
LIB_LDLIBS := -lpthread
# <linux/blamer.h> is the uapi header of this tree, not of the system.
LIB_CFLAGS := -I$(SRC)/include/uapi
LIB_PC     := $(LIB_DIR)/blamer.pc

# PREFIX, LIBDIR and INCLUDEDIR (for blamer.pc) are mk/install.mk's.
VERSION    ?= 0.3.0

.PHONY: lib
all: lib
lib: $(LIB_A) $(LIB_SO) $(LIB_PC)

# The layer is the first directory of the stem (writer/heap -> writer).
# -MMD: each object depends on exactly the headers it includes.
$(LIB_DIR)/obj/%.o: $(SRC)/lib/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(LIB_CFLAGS) $(LIB_INC_$(firstword $(subst /, ,$*))) \
		-fPIC -MMD -MP -c -o $@ $<
-include $(LIB_OBJS:.o=.d)

# The layers as built: which file calls which (from the objects' symbols),
# in the order of each layer's map, and which headers the exporters and
# the CLI include (scripts/check-layers); then check-layers' own test,
# planted breaks of a map in a small tree (scripts/tests/layers-test).
CHECK_SUITES += lib-layers
.PHONY: lib-layers
lib-layers: lib tools
	@$(SRC)/scripts/run-suite $@ -- sh -c '"$$0" "$$@"; a=$$?; \
		$(SRC)/scripts/tests/layers-test && exit $$a' \
		$(SRC)/scripts/check-layers $(SRC) $(LIB_DIR)/obj $(BUILD)/tools/obj $(LIB_OBJS)

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Only blamer_* symbols are exported from the shared library. -z nodelete:
# the exit handler (on_exit(), which dlclose() does not undo) stays valid.
$(LIB_SO): $(LIB_OBJS) $(SRC)/lib/libblamer.map
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libblamer.so.$(LIB_SOVER) -Wl,-z,nodelete \
		-Wl,--version-script=$(SRC)/lib/libblamer.map -o $@.$(LIB_SOVER) \
		$(LIB_OBJS) $(LIB_LDLIBS)
	ln -sf libblamer.so.$(LIB_SOVER) $@

# $(call pc_file,OUT): blamer.pc, from blamer.pc.in, for the PREFIX,
# LIBDIR and INCLUDEDIR of this make (the one sed that makes it).
pc_file = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	      -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	      $(SRC)/blamer.pc.in > $(1)

# (for in-tree use; make install writes the installed one with the PREFIX
# given to it)
$(LIB_PC): $(SRC)/blamer.pc.in
	@mkdir -p $(dir $@)
	$(call pc_file,$@)

# examples/: built against the static library, as an application would.
EXAMPLES := $(patsubst $(SRC)/examples/%.c,$(BUILD)/examples/%,$(wildcard $(SRC)/examples/*.c))
.PHONY: examples
all: examples
examples: $(EXAMPLES)
$(BUILD)/examples/%: $(SRC)/examples/%.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LIB_A) $(LIB_LDLIBS)
