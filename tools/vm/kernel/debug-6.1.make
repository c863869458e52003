# Make variables of the 6.1 debug kernel's build (scripts/debug-kernel).
#
# The PVH entry code runs before KASAN's shadow exists, so it must not be
# instrumented: 6.12's arch/x86/platform/pvh/Makefile says KASAN_SANITIZE
# := n, 6.1's does not, and its KASAN build triple-faults in
# xen_prepare_pvh() before the first console line. A variable on make's
# command line reaches every directory; the only other enlighten.o
# (arch/x86/xen/, CONFIG_XEN) is not built.
KASAN_SANITIZE_enlighten.o=n
#
# For the same reason lib/string.o (memcmp() is called there, from
# hypervisor_cpuid_base()): 6.1 leaves it uninstrumented only with
# CONFIG_AMD_MEM_ENCRYPT, 6.12 never calls it that early. Other string.o
# files (the decompressor's, EFI's stub) are not instrumented or not built.
KASAN_SANITIZE_string.o=n
