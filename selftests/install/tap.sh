# selftests/install/tap.sh: TAP helpers the install suites source.
#   ok DESC / nok DESC      a result line (nok counts a failure)
#   t DESC CMD...           runs CMD (output to $LOG); its status decides,
#                           a failure shows the end of the output
#   show FILE [N]           the last N (20) lines of FILE as TAP comments
#   in_root CMD...          runs CMD chrooted in $ROOT (selftests/install/in-overlay)
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
show() { [ -f "$1" ] && tail -n "${2:-20}" "$1" | sed 's/^/#   /'; }
t() {
	local d=$1
	shift
	if "$@" >"$LOG" 2>&1; then
		ok "$d"
	else
		nok "$d"
		show "$LOG"
	fi
}
in_root() { chroot "$ROOT" "$@"; }
