# Documentation checks: every reStructuredText file parses without a
# docutils warning (a malformed table renders as an error block, and a
# heap-format table that does not render is a contract nobody can read),
# every man page formats without a groff warning, and every function of
# the public header has a section 3 page (Documentation/man3/man-names).

CHECK_SUITES += docs
.PHONY: docs
docs:
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/Documentation/check-docs $(SRC)/Documentation \
		$(SRC)/include/blamer.h

# make install: blamer(1), the libblamer(3) pages, and for every other
# name a section 3 page documents a one-line page sourcing it (`man
# blamer_pop` opens blamer_push(3)), as man-db expects of such names.
MANDIR ?= $(PREFIX)/share/man
MAN3_PAGES := $(wildcard $(SRC)/Documentation/man3/*.3)
INSTALL_TARGETS += install-man
.PHONY: install-man
install-man:
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3
	install -m 0644 $(SRC)/Documentation/blamer.1 $(DESTDIR)$(MANDIR)/man1/blamer.1
	install -m 0644 $(MAN3_PAGES) $(DESTDIR)$(MANDIR)/man3/
	@set -e; $(SRC)/Documentation/man3/man-names $(MAN3_PAGES) | \
	while read -r name page; do \
		echo ".so man3/$$page.3" >$(DESTDIR)$(MANDIR)/man3/$$name.3; \
		chmod 0644 $(DESTDIR)$(MANDIR)/man3/$$name.3; \
	done
