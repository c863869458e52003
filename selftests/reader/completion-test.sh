#!/bin/bash
# cli-completion: the bash completion (tools/blamer/blamer.bash-completion)
# offers what `blamer help` lists, driven as bash-completion drives it.
#   completion-test.sh BLAMER MKHEAP
set -u
B=$1 MK=$2
HERE=$(cd "$(dirname "$0")" && pwd)
COMPL=$HERE/../../tools/blamer/blamer.bash-completion
BC=/usr/share/bash-completion/bash_completion
D=$(mktemp -d /tmp/blamer-compl.XXXXXX)
trap 'rm -rf "$D"' EXIT
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }

echo "TAP version 13"
echo "1..7"
[ -r "$BC" ] || { echo "not ok 1 - bash-completion is not installed ($BC)"; exit 1; }

# the tool is called `blamer` and found on PATH, as when installed
mkdir "$D/bin" && ln -s "$B" "$D/bin/blamer"
export PATH=$D/bin:$PATH

# comp LINE: what completing at the end of LINE offers, one per line, sorted
comp() {
	bash --norc --noprofile -c '
		source "$1" && source "$2" || exit 1
		line=$3
		COMP_LINE=$line COMP_POINT=${#line}
		read -r -a COMP_WORDS <<<"$line"
		[[ $line == *" " ]] && COMP_WORDS+=("")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMPREPLY=()
		_blamer blamer "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		[ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort -u' \
		_ "$BC" "$COMPL" "$1"
}

bash -n "$COMPL" && ok "it parses" || nok "it parses"

commands=$(blamer --help | sed -n '/^commands:/,/^$/s/^  \([a-z]\+\) .*/\1/p' | sort)
[ -n "$commands" ] && [ "$(comp 'blamer ' | grep -v '^-')" = "$commands" ] &&
	ok "every command of blamer --help, and no other" || nok "commands: $(comp 'blamer ' | tr '\n' ' ')"

# every option `blamer help X` shows is offered after `blamer X -`
missing=
for c in $commands; do
	offered=$(comp "blamer $c -")
	for o in $(blamer help "$c" | grep -o -- '^  -[-a-z]*\(, --[a-z]*\)\?' | tr -d ','); do
		[ "$c" = help ] && break	# help takes a command, not options
		grep -qx -- "$o" <<<"$offered" || missing="$missing $c:$o"
	done
done
[ -z "$missing" ] && ok "every option of every command's help" || nok "options not offered:$missing"

[ "$(comp 'blamer help to')" = top ] && [ "$(comp 'blamer he')" = help ] &&
	ok "blamer help completes a command" || nok "help COMMAND"
[ "$(comp 'blamer --backend ' | tr '\n' ' ')" = "device dir " ] &&
	[ "$(comp 'blamer blame --unit ' | tr '\n' ' ')" = "bytes count cpu " ] &&
	ok "option values: backends, units" || nok "option values"

# PIDs: those of the heaps in the directory the line names
chmod 700 "$D"
"$MK" "$D" dead 3999001 5 1 && "$MK" "$D" dead 3999002 6 2 || nok "fixtures"
[ "$(comp "blamer --dir $D postmortem " | tr '\n' ' ')" = "3999001 3999002 " ] &&
	[ "$(BLAMER_DIR=$D comp 'blamer release 39990' | tr '\n' ' ')" = "3999001 3999002 " ] &&
	ok "dump, blame, postmortem, release complete the PIDs of the heaps there" || nok "PIDs"
[ -z "$(comp 'blamer --dir /nonexistent dump ')" ] &&
	ok "no heaps, nothing offered (and no error shown)" || nok "no heaps"

[ "$fails" -eq 0 ]
