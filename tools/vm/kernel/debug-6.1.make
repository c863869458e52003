# Make variables of the 6.1 debug kernel's build (scripts/debug-kernel).
#
# The PVH entry code runs before KASAN's shadow exists, so it must not be
# instrumented: 6.12's arch/x86/platform/pvh/Makefile says KASAN_SANITIZE
# := n, 6.1's does not, and its KASAN build triple-faults in
# xen_prepare_pvh() before the first console line. A variable on make's
# command line reaches every directory; the only other enlighten.o
# (arch/x86/xen/, CONFIG_XEN) is not built.
KASAN_SANITIZE_enlighten.o=n
