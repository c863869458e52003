#!/bin/sh
# The module's benchmarks (make bench-module), as root in the VM: the
# limits raised by module parameter so that 100,000 slabs of one page fit
# (bench/module_bench.c), then the reader on the device
# (bench/dev_reader_bench.c). Figures in Documentation/performance.rst.
insmod /blamer.ko max_user_bytes=2147483648 max_total_bytes=2147483648 \
	max_user_orphans=4096 || exit 1
echo "# kernel $(uname -r), $(nproc) CPUs, $(sed -n 's/^MemTotal: *//p' /proc/meminfo) memory"
module_bench "${1:-100000}" || exit 1
dev_reader_bench "${2:-100}" || exit 1
