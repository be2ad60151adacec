#!/usr/bin/env bash
# Installs the ML frameworks the real-framework tests use (tests/frameworks/requirements.txt,
# every version pinned) from PyPI into a venv of Debian's Python kept in a cache outside the
# checkout: ${XDG_CACHE_HOME:-$HOME/.cache}/resume-run/venv-frameworks-KEY, KEY a hash of the
# requirements file and the Python version, so a change of either makes a new venv (and the
# old one is removed) and a second run installs nothing. PyPI's torch for Linux x86_64 is a
# CUDA build: the first install downloads about 4 GB (it runs on the CPU). Prints the
# venv's path with --path; the tests set TORCH_EXTENSIONS_DIR to its torch_extensions/.
# Usage: scripts/install-frameworks.sh          install if needed
#        scripts/install-frameworks.sh --path   print the venv's path
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
req="$root/tests/frameworks/requirements.txt"
py=/usr/bin/python3
cache="${XDG_CACHE_HOME:-$HOME/.cache}/resume-run"
key=$({ cat "$req"; "$py" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
venv="$cache/venv-frameworks-$key"
if [ "${1:-}" = --path ]; then
	echo "$venv"
	exit 0
fi
[ -f "$venv/.complete" ] && exit 0
mkdir -p "$cache"
for old in "$cache"/venv-frameworks-*; do
	[ -e "$old" ] && [ "$old" != "$venv" ] && { echo "removing $old (other requirements)"; rm -rf "$old"; }
done
rm -rf "$venv"
echo "installing the frameworks of $req into $venv"
start=$SECONDS
"$py" -m venv "$venv"
"$venv/bin/pip" install --quiet --progress-bar off --no-input -r "$req"
# DeepSpeed's CPU accelerator compiles a communication op (C++, with ninja) the first time an
# engine starts: build it now, into the venv, so that the tests do not pay for it.
DS_ACCELERATOR=cpu TORCH_EXTENSIONS_DIR="$venv/torch_extensions" "$venv/bin/python" -c \
	'from deepspeed.ops.op_builder.cpu import ShareMemCommBuilder; ShareMemCommBuilder().load()' > /dev/null
touch "$venv/.complete" # last: a venv cut short is made again on the next run
echo "frameworks installed in $((SECONDS - start)) s"
