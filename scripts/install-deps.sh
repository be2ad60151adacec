#!/usr/bin/env bash
# Installs what resume-run needs to build and test, from Debian's packages.
# Usage: scripts/install-deps.sh [build|test]   (test adds what the test suite uses)
set -euo pipefail
what=${1:-build}
pkgs=(build-essential cmake pkg-config libcurl4-openssl-dev libssl-dev libzstd-dev libcjson-dev
      libcunit1-dev libxxhash-dev libexpat1-dev python3)
if [ "$what" = test ]; then
	# clang + its runtime for the libFuzzer targets; zstd for comparisons; util-linux for
	# unshare (PID 1 and disk-full tests); python3-torch for the PyTorch helper tests.
	# awscli, python3-boto3 and rclone read back what the agent writes to S3.
	pkgs+=(clang libclang-rt-14-dev zstd util-linux python3-torch awscli python3-boto3 rclone time curl)
	# azure-cli (az storage blob list/download, generate-sas) reads back what the agent
	# writes to Azure Blob Storage (integration_azure_*); libfaketime sets Azurite's clock
	# back, the one way to age blobs there (test_azure_two_writers.sh).
	pkgs+=(azure-cli libfaketime)
	# The deployment tests (tests/deploy): cloud-init's schema check, ShellCheck, systemd-analyze
	# (systemd), dpkg-shlibdeps for the .deb's Depends (dpkg-dev), podman + debootstrap for
	# the Dockerfile, a single-node Slurm (slurm-wlm, munge) for the sbatch flow.
	pkgs+=(cloud-init shellcheck systemd dpkg-dev python3-yaml podman debootstrap slurm-wlm munge)
	# lintian checks the .deb (tests/deploy/test_deploy.sh: no errors).
	pkgs+=(lintian)
	# stunnel4 terminates TLS in front of the S3 and GCS test servers (tests/integration/test_tls.sh);
	# openssl makes the private CAs there and for Azurite's HTTPS (test_azure_entra.sh).
	pkgs+=(stunnel4 openssl)
	# python3-cryptography: service-account keys for the GCS tests (test_gcs_store,
	# test_encryption); it also made the fuzz_sealed seeds.
	pkgs+=(python3-cryptography)
	# python3-venv: the venvs of the real-framework tests (scripts/install-frameworks.sh, the
	# wheel's fresh venv); python3-dev: DeepSpeed's CPU op is compiled against Python.h.
	pkgs+=(python3-venv python3-dev)
	# prometheus brings promtool, which checks the --metrics-file output (test_report.sh).
	pkgs+=(prometheus)
	# python3-venv: the virtual environment of the clouds' SDKs (tests/thirdparty/install.sh).
	pkgs+=(python3-venv)
	# faketime (libfaketime) runs the agent with its clock 20 minutes off (test_clock_skew.sh).
	pkgs+=(faketime)
	# ccache: the test command builds the tree four times (normal, ASan, TSan, fuzz) and the
	# wheel once; with the compiler's output cached outside the checkout, a run after a
	# change recompiles only what changed (scripts/test.sh).
	pkgs+=(ccache)
	# Node.js runs the S3 test server; this machine kind ships it (NodeSource), Debian's
	# nodejs + npm are the fallback.
	command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
	command -v npm >/dev/null 2>&1 || pkgs+=(npm)
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "installing: ${missing[*]}"
	SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
	$SUDO apt-get update -q
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ "$what" = test ]; then
	# Four independent installers, side by side (each is a no-op once its cache is there; a
	# first run is bound by downloads and, for the Go servers, one CPU-bound build each).
	# Their output is prefixed with the installer's name; any failure fails the whole.
	here=$(dirname "$0")
	installers=(
		# The S3 test server (it verifies SigV4), from npm, into a cache outside the checkout.
		"s3rver:$here/../tests/s3/install-s3rver.sh"
		# Azurite, Microsoft's Azure Storage emulator (it verifies Shared Key and SAS), likewise.
		"azurite:$here/../tests/azure/install-azurite.sh"
		# The ML frameworks of tests/frameworks, from PyPI, into a venv cached outside the checkout.
		"frameworks:$here/install-frameworks.sh"
		# Servers and SDKs that others maintain, pinned, built once into a cache outside the
		# checkout: AWS's EC2 metadata mock, SeaweedFS and fake-gcs-server from the Go module
		# proxy (Go >= 1.26, which this machine kind ships), boto3 and google-cloud-storage
		# from PyPI.
		"thirdparty:$here/../tests/thirdparty/install.sh"
	)
	pids=()
	for i in "${installers[@]}"; do
		("${i#*:}" 2>&1 | sed -u "s/^/[${i%%:*}] /"; exit "${PIPESTATUS[0]}") &
		pids+=($!)
	done
	failed=()
	for n in "${!pids[@]}"; do
		wait "${pids[$n]}" || failed+=("${installers[$n]%%:*}")
	done
	if [ ${#failed[@]} -gt 0 ]; then
		echo "install-deps.sh: failed: ${failed[*]} (their output above says why)" >&2
		exit 1
	fi
fi
