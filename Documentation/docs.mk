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
