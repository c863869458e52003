#!/bin/sh
# The scrape of N live workers on both backends (make bench-fleet-device),
# as root in the VM: fleet_bench live on /dev/blamer, then on the dir
# backend (/dev/shm), RUNS times in turn; each against prometheus_client
# in the same run (Debian's python3, the part of it the script uses:
# bench/vm-python-tree.py). The limits raised by module parameter (1,000
# heaps of 64 KiB slabs are at a user's default 64 MiB).
# Figures in Documentation/performance.rst.
n=${1:-1000} runs=${2:-3} python=${3:-/usr/bin/python3} blamer=${4:-/bin/blamer}
insmod /blamer.ko max_user_bytes=2147483648 max_total_bytes=2147483648 || exit 1
echo "# kernel $(uname -r), $(nproc) CPUs, $(sed -n 's/^MemTotal: *//p' /proc/meminfo) memory"
i=1
while [ "$i" -le "$runs" ]; do
	echo "# run $i of $runs"
	for backend in device dir; do
		fleet_bench live "$blamer" "$python" /bin/prom_mp_metrics.py "$n" "$backend" ||
			exit 1
	done
	i=$((i + 1))
done
