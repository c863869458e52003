# Installing blamer on a machine (Documentation/admin-guide.rst, "Install").
#
#   make install        the library (shared, static, blamer.pc), its header
#                       and the uapi header <linux/blamer.h>, the blamer
#                       tool, man pages blamer(1) and libblamer(3) (a page
#                       per call family, a .so page for every other name),
#                       bash completion, the systemd unit
#                       blamer-exporter.service (not enabled), the Python
#                       package blamer (bindings/python/python.mk,
#                       PYTHONDIR); ldconfig when DESTDIR is empty
#   make uninstall      removes exactly what make install installed (same
#                       PREFIX/LIBDIR/... as for the install)
#   make install-dkms   the module's sources and dkms.conf in
#                       $(DKMS_SRCDIR); then `dkms install blamer/$(VERSION)`
#   make install-system the udev rule (root:blamer 0660), modules-load.d
#                       entry, the groups blamer and blamer-readers, and
#                       /etc/modprobe.d/blamer.conf with their reader_gid
#                       (root; what the blamer-dkms package does)
#   make uninstall-dkms, uninstall-system: their reverse (groups and a
#                       modprobe.d file an administrator edited are kept)
#   make deb            the Debian packages (debian/) in $(BUILD)/deb:
#                       blamer-dkms, libblamer2, libblamer-dev, blamer
#
# Variables: DESTDIR (staging root), PREFIX=/usr/local, LIBDIR (default
# the compiler's multiarch directory, $(PREFIX)/lib/x86_64-linux-gnu on
# Debian, else $(PREFIX)/lib), INCLUDEDIR, BINDIR, MANDIR, PKGCONFIGDIR,
# BASHCOMPDIR, UDEVRULESDIR (default: udev's own, /lib/udev/rules.d on
# Debian 12), MODULESLOADDIR, SYSTEMDUNITDIR (default
# $(PREFIX)/lib/systemd/system, where systemd looks for /usr and
# /usr/local). The udev rule and modules-load.d entry
# ignore PREFIX: udev and systemd read nothing under /usr/local.

PREFIX       ?= /usr/local
MULTIARCH    := $(shell $(CC) -print-multiarch 2>/dev/null)
LIBDIR       ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
INCLUDEDIR   ?= $(PREFIX)/include
BINDIR       ?= $(PREFIX)/bin
MANDIR       ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR  ?= $(PREFIX)/share/bash-completion/completions
UDEVDIR      := $(shell pkg-config --variable=udevdir udev 2>/dev/null)
UDEVRULESDIR ?= $(or $(UDEVDIR),/usr/lib/udev)/rules.d
MODULESLOADDIR ?= /usr/lib/modules-load.d
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
DKMS_SRCDIR  ?= /usr/src/blamer-$(VERSION)
DESTDIR      ?=

# Every installed file, as SOURCE:DESTINATION (mode 0644 unless listed
# in INSTALL_EXEC); uninstall removes the destinations.
INSTALL_FILES = \
	$(SRC)/include/blamer.h:$(INCLUDEDIR)/blamer.h \
	$(SRC)/include/uapi/linux/blamer.h:$(INCLUDEDIR)/linux/blamer.h \
	$(LIB_A):$(LIBDIR)/libblamer.a \
	$(LIB_SO).$(LIB_SOVER):$(LIBDIR)/libblamer.so.$(LIB_SOVER) \
	$(BUILD)/install/blamer.pc:$(PKGCONFIGDIR)/blamer.pc \
	$(TOOLS_DIR)/blamer:$(BINDIR)/blamer \
	$(SRC)/Documentation/blamer.1:$(MANDIR)/man1/blamer.1 \
	$(foreach p,$(MAN3_PAGES),$(p):$(MANDIR)/man3/$(notdir $(p))) \
	$(SRC)/tools/blamer/blamer.bash-completion:$(BASHCOMPDIR)/blamer \
	$(BUILD)/install/blamer-exporter.service:$(SYSTEMDUNITDIR)/blamer-exporter.service
INSTALL_EXEC = $(LIBDIR)/libblamer.so.$(LIB_SOVER) $(BINDIR)/blamer
# libblamer(3) is a page per call family; every other name a page gives
# gets a one-line page sourcing it (`man blamer_pop` opens blamer_push(3)),
# as man-db expects of such names. man-names lists "name page" pairs.
MAN3_PAGES := $(wildcard $(SRC)/Documentation/man3/*.3)
man3_names = $(SRC)/Documentation/man3/man-names $(MAN3_PAGES)
INSTALL_LINKS = $(LIBDIR)/libblamer.so

SYSTEM_FILES = \
	$(SRC)/system/60-blamer.rules:$(UDEVRULESDIR)/60-blamer.rules \
	$(SRC)/system/modules-load.conf:$(MODULESLOADDIR)/blamer.conf

# $(call install_files,SRC:DST pairs): install -D each, mode by INSTALL_EXEC.
define install_files
	@set -e; for f in $(1); do \
		s=$${f%%:*} d=$(DESTDIR)$${f#*:}; \
		case " $(INSTALL_EXEC) " in *" $${f#*:} "*) m=0755 ;; *) m=0644 ;; esac; \
		echo "  INSTALL $$d"; install -D -m $$m "$$s" "$$d"; \
	done
endef
define uninstall_files
	@for f in $(1); do d=$(DESTDIR)$${f#*:}; \
		if [ -e "$$d" ] || [ -L "$$d" ]; then echo "  RM      $$d"; rm -f "$$d"; fi; done
endef

.PHONY: install uninstall install-dkms uninstall-dkms install-system uninstall-system deb
install: lib tools python-install
	@mkdir -p $(BUILD)/install
	@$(call pc_file,$(BUILD)/install/blamer.pc)
	@sed 's|@BINDIR@|$(BINDIR)|g' $(SRC)/systemd/blamer-exporter.service.in \
		>$(BUILD)/install/blamer-exporter.service
	$(call install_files,$(INSTALL_FILES))
	@ln -sfn libblamer.so.$(LIB_SOVER) $(DESTDIR)$(LIBDIR)/libblamer.so
	@set -e; $(man3_names) | while read -r name page; do \
		d=$(DESTDIR)$(MANDIR)/man3/$$name.3; \
		echo ".so man3/$$page.3" >$$d; chmod 0644 $$d; done
	@$(if $(DESTDIR),:,ldconfig 2>/dev/null || :)

uninstall: python-uninstall
	$(call uninstall_files,$(INSTALL_FILES) $(addprefix :,$(INSTALL_LINKS)))
	@$(man3_names) | while read -r name page; do \
		rm -f $(DESTDIR)$(MANDIR)/man3/$$name.3; done
	@$(if $(DESTDIR),:,ldconfig 2>/dev/null || :)

# The module's sources as DKMS builds them: the top-level Kbuild (which
# descends into module/), module/ and the uapi header, and dkms.conf with
# its version filled in. debian/rules installs the same way.
install-dkms:
	@set -e; d=$(DESTDIR)$(DKMS_SRCDIR); \
	for f in $(KMOD_FILES); do install -D -m 0644 $(SRC)/$$f $$d/$$f; done; \
	sed 's/#MODULE_VERSION#/$(VERSION)/' $(SRC)/dkms.conf >$$d/dkms.conf; \
	chmod 0644 $$d/dkms.conf; echo "  INSTALL $$d"

uninstall-dkms:
	rm -rf $(DESTDIR)$(DKMS_SRCDIR)

# Groups and modprobe.d as the blamer-dkms postinst makes them
# (debian/blamer-dkms.postinst); an existing blamer.conf is left alone,
# and uninstall-system removes it only if it is still what was written.
# With a DESTDIR only the files are staged (a package makes the rest).
MODPROBE_CONF := /etc/modprobe.d/blamer.conf
modprobe_conf = sed "s/@READER_GID@/$$(getent group blamer-readers | cut -d: -f3)/" \
	$(SRC)/system/modprobe.conf.in

install-system:
	$(call install_files,$(SYSTEM_FILES))
	@set -e; [ -z "$(DESTDIR)" ] || exit 0; \
	getent group blamer >/dev/null || groupadd --system blamer; \
	getent group blamer-readers >/dev/null || groupadd --system blamer-readers; \
	if [ ! -e $(MODPROBE_CONF) ]; then \
		$(modprobe_conf) >$(MODPROBE_CONF); echo "  WRITE   $(MODPROBE_CONF)"; fi; \
	udevadm control --reload 2>/dev/null || :; \
	[ ! -e /sys/module/blamer ] || udevadm trigger --subsystem-match=misc --sysname-match=blamer

uninstall-system:
	$(call uninstall_files,$(SYSTEM_FILES))
	@[ -n "$(DESTDIR)" ] || ! $(modprobe_conf) | cmp -s - $(MODPROBE_CONF) || \
		{ rm -f $(MODPROBE_CONF); echo "  RM      $(MODPROBE_CONF)"; }

deb:
	$(SRC)/scripts/build-deb $(BUILD)/deb
	@ls $(BUILD)/deb/*.deb
