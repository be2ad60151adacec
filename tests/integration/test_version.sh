#!/usr/bin/env bash
# One version, from one place (issue 25): project() in CMakeLists.txt. `--version`, the
# metrics' build-info gauge, the newest CHANGELOG entry and pyproject.toml's source of the
# wheel's version all say the same. (The .deb's: tests/deploy/test_deploy.sh.)
. "$(dirname "$0")/lib.sh"
version=$(sed -nE 's/^project\(resume-run VERSION ([0-9.]+).*/\1/p' "$RR_SRC/CMakeLists.txt")
[ -n "$version" ] || fail "no VERSION in CMakeLists.txt's project()"

"$RR_BIN" --version > version.txt
expect_grep "^resume-run $version( \(git [0-9a-f]+\))?$" version.txt "--version"

changelog=$(sed -nE 's/^## ([0-9]+\.[0-9]+\.[0-9]+).*/\1/p' "$RR_SRC/CHANGELOG.md" | head -n 1)
expect_eq "$changelog" "$version" "the newest CHANGELOG.md entry"

# The wheel's version is read from project() (scikit-build-core's regex provider).
expect_grep '^input = "CMakeLists.txt"$' "$RR_SRC/pyproject.toml" "pyproject.toml reads the version from CMakeLists.txt"
regex=$(sed -nE "s/^regex = '(.*)'$/\1/p" "$RR_SRC/pyproject.toml")
got=$("$PY" -c 'import re, sys; print(re.search(sys.argv[1], open(sys.argv[2]).read()).group("value"))' \
	"$regex" "$RR_SRC/CMakeLists.txt")
expect_eq "$got" "$version" "the wheel's version"

# The metrics' build-info gauge: the same string as --version.
run_rr run.log --store "file://$W/store" --cloud none --metrics-file "$W/metrics.prom" -- true
expect_eq "$RC" 0 "a run with --metrics-file"
want=$(sed 's/^resume-run //' version.txt)
expect_grep "^resume_run_build_info\{version=\"$(printf '%s' "$want" | sed 's/[()]/\\&/g')\"" metrics.prom "the build-info gauge"
ok "one version, $version: --version ($(cat version.txt)), the metrics, CHANGELOG.md and the wheel"
finish
