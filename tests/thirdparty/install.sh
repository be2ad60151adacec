#!/usr/bin/env bash
# Builds and installs the servers and SDKs that other people maintain, which the tests run
# against: from the Go module proxy, AWS's EC2 metadata mock (AEMM), SeaweedFS and
# fake-gcs-server; from PyPI, boto3 and google-cloud-storage in a virtual environment. All
# versions are pinned here; everything lands in a cache outside the checkout
# (RR_TOOLS_CACHE, default ${XDG_CACHE_HOME:-$HOME/.cache}/resume-run/thirdparty), once:
# a second run finds it there and prints nothing. scripts/install-deps.sh test runs it before
# the tests (a first build of SeaweedFS takes minutes, longer than one test may wait).
# usage: tests/thirdparty/install.sh [aemm|seaweedfs|fake-gcs|sdk]...   (none: all of them)
# With RR_TOOLS_PRINT=1 it prints the path of each thing asked for instead of building it.
set -euo pipefail
cache=${RR_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/resume-run/thirdparty}

# name  path of the main package  version (what `go install` takes)  binary  [its module, where
# that module must be built as the main module]
AEMM=(aemm github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock v1.13.0 ec2-metadata-mock)
# SeaweedFS (Apache-2.0): it has no tagged Go module release; its commit of 2026-11-09.
SEAWEEDFS=(seaweedfs github.com/seaweedfs/seaweedfs/weed v0.0.0-20261109003541-7506e5f91cd6 weed
	github.com/seaweedfs/seaweedfs)
FAKEGCS=(fake-gcs github.com/fsouza/fake-gcs-server v1.56.1 fake-gcs-server)
# The clouds' own Python SDKs, current on 2026-11-25.
SDK_PINS=(boto3==1.44.5 google-cloud-storage==3.17.1)

go_tool() { # NAME PACKAGE VERSION BINARY [MODULE]: builds it into $cache/bin/NAME@VERSION/BINARY
	local dir="$cache/bin/$1@$3"
	if [ "${RR_TOOLS_PRINT:-}" = 1 ]; then echo "$dir/$4"; return; fi
	[ -x "$dir/$4" ] && return 0
	local go src
	go=$(command -v go || echo /usr/local/go/bin/go) # (where this machine kind puts it)
	[ -x "$go" ] || { echo "install.sh: Go >= 1.26 is needed to build $1" >&2; exit 1; }
	echo "building $1 $3 ($2) into $dir"
	local start=$SECONDS
	# Its own module and build caches, so that a build here never touches the user's, and
	# rm -rf "$cache" starts again from nothing (-modcacherw: Go's module files are
	# read-only otherwise).
	local -x GOPATH="$cache/gopath" GOCACHE="$cache/gobuild" GOFLAGS="-buildvcs=false -modcacherw" \
		GOTOOLCHAIN=local CGO_ENABLED=0
	rm -rf "$dir.tmp"
	if [ -z "${5:-}" ]; then
		GOBIN="$dir.tmp" "$go" install -trimpath -ldflags='-s -w' "$2@$3"
	else
		# A module whose go.mod has replace directives, which 'go install PKG@VERSION'
		# refuses: built as the main module, in its own source from the module proxy.
		src=$("$go" mod download -json "$5@$3" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
		[ -d "$src" ] || { echo "install.sh: could not download $5@$3" >&2; exit 1; }
		(cd "$src" && "$go" build -trimpath -ldflags='-s -w' -o "$dir.tmp/$4" "./${2#"$5"/}")
	fi
	mv "$dir.tmp" "$dir"
	echo "built $1 in $((SECONDS - start)) s"
}

sdk() {
	local venv="$cache/venv-sdk" want
	want=$(printf '%s\n' "${SDK_PINS[@]}")
	if [ "${RR_TOOLS_PRINT:-}" = 1 ]; then echo "$venv/bin/python"; return; fi
	[ -x "$venv/bin/python" ] && [ "$(cat "$venv/pins" 2>/dev/null)" = "$want" ] && return 0
	echo "installing ${SDK_PINS[*]} into $venv"
	rm -rf "$venv"
	/usr/bin/python3 -m venv "$venv"
	"$venv/bin/pip" install -q --disable-pip-version-check "${SDK_PINS[@]}"
	echo "$want" > "$venv/pins"
}

[ $# -gt 0 ] || set -- aemm seaweedfs fake-gcs sdk
if [ "${RR_TOOLS_PRINT:-}" != 1 ]; then
	mkdir -p "$cache"
	# Tests run in parallel and each asks for what it needs: one builds, the others wait.
	exec 9> "$cache/.lock"
	flock 9
fi
one() {
	case $1 in
	aemm) go_tool "${AEMM[@]}" ;;
	seaweedfs) go_tool "${SEAWEEDFS[@]}" ;;
	fake-gcs) go_tool "${FAKEGCS[@]}" ;;
	sdk) sdk ;;
	*) echo "install.sh: unknown $1 (aemm, seaweedfs, fake-gcs, sdk)" >&2; exit 2 ;;
	esac
}
if [ "${RR_TOOLS_PRINT:-}" = 1 ]; then
	for what in "$@"; do one "$what"; done
	exit 0
fi
# Side by side: a first run downloads modules for one build while another compiles (Go's
# module and build caches take concurrent builds).
pids=()
for what in "$@"; do
	one "$what" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
# The binaries are all that is used: Go's module and build caches (3.9 GB after SeaweedFS) go.
rm -rf "$cache/gopath" "$cache/gobuild"
exit $rc
