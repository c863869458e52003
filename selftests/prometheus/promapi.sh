# SPDX-License-Identifier: MIT
# Sourced by the tests that run Debian's Prometheus (bash): a free port,
# a bounded wait, and queries of its HTTP API. The caller sets PY (a
# python3 with json) and PP (Prometheus's port) before it queries.

# free_port: a TCP port of 127.0.0.1 nobody listens on (now)
free_port() {
	$PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# wait_for SECONDS CMD...: true once CMD succeeds
wait_for() {
	local end=$((SECONDS + $1))
	shift
	while [ $SECONDS -lt $end ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.3
	done
	return 1
}
# q PROMQL: the API's result as JSON
q() {
	curl -sf -m 5 --get --data-urlencode "query=$1" "http://127.0.0.1:$PP/api/v1/query"
}
# qv PROMQL: the one value of a scalar-like answer ("" if none)
qv() {
	q "$1" | $PY -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
