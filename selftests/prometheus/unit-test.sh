#!/bin/bash
# systemd-unit: systemd/blamer-exporter.service.in, filled in as make
# install fills it, passes `systemd-analyze verify`, and its sandbox is
# what admin-guide.rst promises (checked by `systemd-analyze security`).
#   unit-test.sh UNIT_IN BLAMER
set -u
IN=$1 B=$2
echo "TAP version 13"
echo "1..2"
if ! command -v systemd-analyze >/dev/null; then
	echo "ok 1 # SKIP systemd-analyze not installed"
	echo "ok 2 # SKIP systemd-analyze not installed"
	exit 0
fi
D=$(mktemp -d /tmp/blamer-unit.XXXXXX)
trap 'rm -rf "$D"' EXIT
# the binary must exist for verify: the one just built
sed "s|@BINDIR@|$(dirname "$B")|g" "$IN" >"$D/blamer-exporter.service"
if systemd-analyze verify --man=no "$D/blamer-exporter.service" >"$D/out" 2>&1 && [ ! -s "$D/out" ]; then
	echo "ok 1 - systemd-analyze verify: the unit is clean"
else
	echo "not ok 1 - systemd-analyze verify"; sed 's/^/#   /' "$D/out"
fi
# the options that make the sandbox, each as the unit must have it
systemd-analyze security --offline=yes "$D/blamer-exporter.service" >"$D/sec" 2>&1
level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$D/sec")
missing=
for o in DynamicUser=yes ProtectSystem=strict ProtectHome=yes NoNewPrivileges=yes \
	 PrivateTmp=yes DevicePolicy=closed 'CapabilityBoundingSet=$' \
	 'RestrictAddressFamilies=AF_INET AF_INET6'; do
	grep -q "^$o" "$D/blamer-exporter.service" || missing="$missing $o"
done
if [ -z "$missing" ] && [ -n "$level" ] && awk -v l="$level" 'BEGIN { exit !(l <= 2.5) }'; then
	echo "ok 2 - sandboxed: exposure level $level (<= 2.5)"
else
	echo "not ok 2 - sandbox: exposure level '${level}', missing:${missing}"
fi
