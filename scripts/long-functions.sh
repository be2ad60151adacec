#!/usr/bin/env bash
# Lists the functions in agent/, cloud/ and storage/ longer than a limit (default 120 lines,
# from the line of the name to the closing brace): STYLE's "no function longer than ~120
# lines". A parser whose body is mostly one opcode switch may stay longer; say so at it.
# usage: scripts/long-functions.sh [LIMIT]
set -euo pipefail
cd "$(dirname "$0")/.."
limit=${1:-120}
# A definition starts in column 0 with "... name(" and no ';' at the end of the line, and
# ends at the first '}' in column 0.
find agent cloud storage -name '*.c' | sort | while read -r f; do
	awk -v f="$f" -v limit="$limit" '
		/^[a-z_][a-z0-9_ \t*]*[a-z_][a-z0-9_]*\(/ && !/;[ \t]*$/ && !start {
			match($0, /[a-z_][a-z0-9_]*\(/); name = substr($0, RSTART, RLENGTH - 1); start = NR
		}
		/^}/ && start { n = NR - start + 1; if (n > limit) printf "%5d %s:%d %s\n", n, f, start, name; start = 0 }
	' "$f"
done | sort -rn
