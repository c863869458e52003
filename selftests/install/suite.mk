# selftests/install: installing blamer on a machine, as an administrator
# would (Documentation/admin-guide.rst, "Install on your machine").
#
#   dkms             make install-dkms install-system, dkms install for
#                    Debian's 6.1, modprobe's view, uninstall (the package
#                    test below builds through DKMS for 6.1 and 6.12)
#   deb-packages     dpkg-buildpackage -us -uc and lintian
#   deb-install      dpkg -i of the packages (postinst: groups, modprobe.d,
#                    DKMS for both kernels), the installed files, purge
#   vm-install-6.12  the installed module, rule and tool on a booted 6.12:
#                    blamer load through modprobe, udevd, who may do what
#
# dkms and deb-install change nothing on this machine: they work
# in a throwaway overlay of its root (selftests/install/in-overlay), which
# needs root; without it they report a skip. deb-install uses
# deb-packages' packages and vm-install what deb-install installed, so they run in that
# order (a failure of one is reported by the next, not hidden: the
# prerequisites' recipes ignore errors).

INST_KVERS := 6.1 6.12
INST_DIR   := $(BUILD)/install-tests
inst_release = $(shell $(SRC)/scripts/kernel-path --release $(1) 2>/dev/null)

CHECK_SUITES += dkms deb-packages deb-install vm-install-6.12
.PHONY: dkms deb-packages deb-install vm-install-6.12

dkms:
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/install/dkms-test $(SRC) $(VERSION) \
		$(INST_DIR)/dkms $(call inst_release,6.1)

deb-packages:
	-@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/install/deb-test $(SRC) $(VERSION) \
		$(INST_DIR)/deb

deb-install: deb-packages
	-@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/install/deb-install-test $(SRC) \
		$(VERSION) $(INST_DIR)/deb $(INST_DIR)/deb-install $(call inst_release,6.12) \
		$(foreach k,$(INST_KVERS),$(call inst_release,$(k)))

vm-install-6.12: deb-install
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/selftests/install/vm-install $(SRC) \
		$(INST_DIR)/deb-install/guest 6.12
