# Documentation checks: every reStructuredText file parses without a
# docutils warning (a malformed table renders as an error block, and a
# heap-format table that does not render is a contract nobody can read),
# every man page formats without a groff warning, every function of the
# public header has a section 3 page (Documentation/man3/man-names), and
# every file a doc or a comment names is in the tree (scripts/check-paths).

CHECK_SUITES += docs
.PHONY: docs
docs:
	@$(SRC)/scripts/run-suite $@ -- $(SRC)/Documentation/check-docs $(SRC)/Documentation \
		$(SRC)/include/blamer.h $(SRC)
