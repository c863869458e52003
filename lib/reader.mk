# Reader side of libblamer (reader owns this fragment; included by lib/lib.mk
# and tools/tools.mk). Snapshots, the dir and device backends, exporters.
LIB_READER_SRCS := $(SRC)/lib/reader.c $(SRC)/lib/reader_heap.c \
		   $(SRC)/lib/reader_dir.c $(SRC)/lib/reader_dev.c $(SRC)/lib/reader_clock.c \
		   $(SRC)/lib/export_json.c $(SRC)/lib/export_prom.c
