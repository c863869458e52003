# Build blamer.ko for the Debian 6.1 and 6.12 kernels and
# register the module's static-check suites.
#
#   make modules [KVER=6.1|6.12] [KDIR=/path/to/kernel/build/tree]
#       -> $(BUILD)/kmod-$(KVER)/blamer.ko
#
# Two kernels cannot build in one source directory (kbuild leaves objects
# next to the sources), so each kernel builds a private copy of the module
# sources in $(BUILD)/kmod-<KVER>/src. KDIR defaults to the installed
# Debian headers, found by glob (never `uname -r`, see scripts/kernel-path).

KMOD_KVERS := 6.1 6.12
KMOD_SRCS := $(SRC)/Kbuild $(SRC)/module/Kbuild \
	$(wildcard $(SRC)/module/*.c $(SRC)/module/*.h) \
	$(SRC)/include/uapi/linux/blamer.h
KMOD_FILES := $(KMOD_SRCS:$(SRC)/%=%)

# $(call kmod_kdir,KVER): KDIR if given, else the Debian headers for KVER.
kmod_kdir = $(or $(KDIR),$(shell $(SRC)/scripts/kernel-path --headers $(1)))

# $(call kmod_sync,KVER): refresh the copy, keeping mtimes for kbuild.
define kmod_sync
	@mkdir -p $(BUILD)/kmod-$(1)/src
	@cd $(SRC) && cp -p --parents $(KMOD_FILES) $(BUILD)/kmod-$(1)/src/
endef

.PHONY: modules modules-all
all: modules
modules: $(BUILD)/kmod-$(KVER)/blamer.ko
modules-all: $(foreach k,$(KMOD_KVERS),$(BUILD)/kmod-$(k)/blamer.ko)

$(BUILD)/kmod-%/blamer.ko: $(KMOD_SRCS)
	$(call kmod_sync,$*)
	$(MAKE) --no-print-directory -C $(call kmod_kdir,$*) \
		M=$(BUILD)/kmod-$*/src modules
	cp $(BUILD)/kmod-$*/src/module/blamer.ko $@

# ---- test suites ----------------------------------------------------------
CHECKPATCH_DIR := $(BUILD)/kernel-scripts
KSRC_TARBALL := $(firstword $(wildcard /usr/src/linux-source-6.1.tar.xz))

# checkpatch.pl and its data files, extracted from Debian's kernel source.
$(CHECKPATCH_DIR)/checkpatch.pl:
	@mkdir -p $(CHECKPATCH_DIR)
	tar -xJf $(KSRC_TARBALL) -C $(CHECKPATCH_DIR) --strip-components=2 \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	@touch $@

CHECK_SUITES += module-build module-sparse module-checkpatch
.PHONY: module-build module-sparse module-checkpatch
module-build:
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/module/check-build build \
		$(BUILD) $(foreach k,$(KMOD_KVERS),$(k)=$(call kmod_kdir,$(k)))
module-sparse:
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/module/check-build sparse \
		$(BUILD) $(foreach k,$(KMOD_KVERS),$(k)=$(call kmod_kdir,$(k)))
module-checkpatch: $(CHECKPATCH_DIR)/checkpatch.pl
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/module/check-checkpatch \
		$(CHECKPATCH_DIR)/checkpatch.pl $(addprefix $(SRC)/,$(KMOD_FILES))
