# libblamer: static and shared library (writer owns this fragment).
#
# Writer sources are lib/*.c except the reader's; the reader lists its
# sources in LIB_READER_SRCS in lib/reader.mk (included below). Objects
# are built once, position independent, for both libraries.
#
#   make lib            build/lib/libblamer.a, libblamer.so(.1), blamer.pc
#   make install        see mk/install.mk

LIB_READER_SRCS :=
-include $(SRC)/lib/reader.mk

LIB_WRITER_SRCS := $(filter-out $(SRC)/lib/reader% $(SRC)/lib/export%,\
		     $(wildcard $(SRC)/lib/*.c))
LIB_SRCS   := $(LIB_WRITER_SRCS) $(addprefix $(SRC)/,$(patsubst $(SRC)/%,%,$(LIB_READER_SRCS)))
LIB_DIR    := $(BUILD)/lib
LIB_OBJS   := $(patsubst $(SRC)/lib/%.c,$(LIB_DIR)/obj/%.o,$(LIB_SRCS))
LIB_HDRS   := $(wildcard $(SRC)/lib/*.h) $(SRC)/include/blamer.h \
	      $(SRC)/include/uapi/linux/blamer.h
LIB_SOVER  := 1
LIB_A      := $(LIB_DIR)/libblamer.a
LIB_SO     := $(LIB_DIR)/libblamer.so
LIB_LDLIBS := -lpthread
# <linux/blamer.h> is the uapi header of this tree, not of the system.
LIB_CFLAGS := -I$(SRC)/include/uapi
LIB_PC     := $(LIB_DIR)/blamer.pc

# PREFIX, LIBDIR and INCLUDEDIR (for blamer.pc) are mk/install.mk's.
VERSION    ?= 0.1.0

.PHONY: lib
all: lib
lib: $(LIB_A) $(LIB_SO) $(LIB_PC)

$(LIB_DIR)/obj/%.o: $(SRC)/lib/%.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(LIB_CFLAGS) -fPIC -c -o $@ $<

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# Only blamer_* symbols are exported from the shared library.
$(LIB_SO): $(LIB_OBJS) $(SRC)/lib/libblamer.map
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libblamer.so.$(LIB_SOVER) \
		-Wl,--version-script=$(SRC)/lib/libblamer.map -o $@.$(LIB_SOVER) \
		$(LIB_OBJS) $(LIB_LDLIBS)
	ln -sf libblamer.so.$(LIB_SOVER) $@

# (for in-tree use; make install writes the installed one with the PREFIX
# given to it)
$(LIB_PC): $(SRC)/blamer.pc.in
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

# examples/: built against the static library, as an application would.
EXAMPLES := $(patsubst $(SRC)/examples/%.c,$(BUILD)/examples/%,$(wildcard $(SRC)/examples/*.c))
.PHONY: examples
all: examples
examples: $(EXAMPLES)
$(BUILD)/examples/%: $(SRC)/examples/%.c $(LIB_A) $(SRC)/include/blamer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) -o $@ $< $(LIB_A) $(LIB_LDLIBS)
