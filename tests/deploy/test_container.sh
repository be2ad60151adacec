#!/usr/bin/env bash
# The Dockerfile, built and run with podman: the image's --version, that its runtime stage
# holds only the runtime libraries, the agent as the container's PID 1 (`podman stop` ->
# SIGTERM -> checkpoint -> exit 75; the next container restores), and COPY --from into an
# image of one's own.
#
# On this machine kind two things need help, both said in the output: Docker Hub is not
# reachable, so debian:bookworm and debian:bookworm-slim are made locally with debootstrap
# (--variant=minbase, from the Debian mirror) and imported under those names; and crun
# refuses the VM's hybrid cgroup layout and podman's default rlimits, so the test runs in a
# private mount namespace without the cgroup2 mount, with cgroups disabled and lower
# rlimits (containers.conf, for this test only). Build steps use the host network.
if [ -z "${RR_IN_UNSHARE:-}" ] && [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
	exec unshare -m --propagation private env RR_IN_UNSHARE=1 bash "$0" "$@"
fi
. "$(dirname "$0")/../integration/lib.sh"
[ "$(id -u)" = 0 ] || fail "needs root (podman with the host's storage)"
command -v podman > /dev/null || fail "podman not installed (scripts/install-deps.sh test)"
if [ -n "${RR_IN_UNSHARE:-}" ]; then
	umount /sys/fs/cgroup/unified || fail "cannot hide the cgroup2 mount in the private namespace"
	echo "note: cgroup2 mount hidden in a private mount namespace (crun: hybrid mode unsupported)"
fi
cat > containers.conf <<'CONF'
[containers]
cgroups = "disabled"
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
netns = "host"
CONF
export CONTAINERS_CONF="$W/containers.conf"
IMG=localhost/resume-run-test:latest

# --- base images ---
base_image() { # NAME: pulled if the registry answers, else debootstrap'd and imported
	local name=$1 cache=/var/tmp/resume-run-debootstrap/bookworm
	podman image exists "docker.io/library/$name" && return 0
	if timeout 60 podman pull -q "docker.io/library/$name" > /dev/null 2>&1; then
		return 0
	fi
	if [ ! -x "$cache/bin/sh" ]; then
		command -v debootstrap > /dev/null || fail "no registry and no debootstrap"
		rm -rf "$cache.tmp"
		# The mirror this machine's apt already uses (the first URIs: line that is not -security).
		mirror=$(sed -nE 's/^URIs: *([^ ]+).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v -- -security | head -n 1)
		[ -n "$mirror" ] || mirror=$(sed -nE 's/^deb +(\[[^]]*\] +)?([^ ]+) +bookworm .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n 1)
		[ -n "$mirror" ] || fail "no Debian mirror found in apt's sources for debootstrap"
		debootstrap --variant=minbase bookworm "$cache.tmp" "$mirror" > debootstrap.log 2>&1 ||
			fail "debootstrap: $(tail -n 5 debootstrap.log)"
		mv "$cache.tmp" "$cache"
	fi
	# Without the downloaded .debs and package lists, as the official images are.
	tar -C "$cache" --exclude='./var/cache/apt/archives/*.deb' --exclude='./var/lib/apt/lists/*' \
		-c . | podman import -q - "docker.io/library/$name" > /dev/null ||
		fail "podman import of $name"
	echo "note: docker.io/library/$name made with debootstrap --variant=minbase (registry unreachable)"
}
base_image debian:bookworm
base_image debian:bookworm-slim

# --- build ---
commit=$(git -C "$RR_SRC" rev-parse --short=12 HEAD 2>/dev/null || true)
podman build --network host --build-arg RR_GIT_COMMIT="$commit" -t "$IMG" "$RR_SRC" > build.log 2>&1 ||
	fail "podman build: $(tail -n 30 build.log)"
# The build stage tagged too (from the layers just made), so that the prune at the end keeps
# its layers and the next run's build reuses the one that installs the build dependencies.
podman build --network host --build-arg RR_GIT_COMMIT="$commit" --target build \
	-t localhost/resume-run-test-build:latest "$RR_SRC" >> build.log 2>&1 ||
	fail "podman build --target build: $(tail -n 30 build.log)"
version=$(sed -nE 's/^project\(resume-run VERSION ([0-9.]+).*/\1/p' "$RR_SRC/CMakeLists.txt")
got=$(podman run --rm --network none --entrypoint resume-run "$IMG" --version)
expect_eq "$got" "resume-run $version${commit:+ (git $commit)}" "--version in the image"
expect_eq "$(podman image inspect -f '{{json .Config.Entrypoint}}' "$IMG")" '["resume-run","--"]' "ENTRYPOINT"
ok "podman build: $got; ENTRYPOINT [\"resume-run\", \"--\"]"

# The runtime stage: no compiler, no headers, every library the binary needs present.
podman run --rm --network none --entrypoint sh "$IMG" -c \
	'dpkg-query -W -f "\${Package}\n"; echo ---; ldd /usr/bin/resume-run' > runtime.txt
# (gcc-12-base is libgcc's base package, not a compiler)
expect_no_grep '(-dev|^(gcc|gcc-[0-9]+|cpp|cmake|make|build-essential))(:amd64)?$' runtime.txt "build tools in the runtime image"
expect_no_grep 'not found' runtime.txt "a library missing in the runtime image"
for p in libcurl4 libssl3 libzstd1 libcjson1 libxxhash0 libexpat1; do
	expect_grep "^$p(:amd64)?$" runtime.txt "$p in the runtime image"
done
size=$(podman image inspect -f '{{.Size}}' "$IMG")
ok "runtime image: runtime libraries only, ldd complete, $((size / 1000000)) MB"

# --- the agent as PID 1: podman stop is a notice ---
mkdir store
cat > trainer.sh <<'SH'
# A trainer in sh: on the checkpoint signal, commit step-N (rename) and leave; started with
# a restored checkpoint, report it and finish.
if [ -n "${RESUME_RUN_RESTORE_DIR:-}" ]; then
	echo "restored: $(cat "$RESUME_RUN_RESTORE_DIR/state.txt")"
	exit 0
fi
n=0
trap 'mkdir -p "$RESUME_RUN_CHECKPOINT_DIR/.step-$n.tmp" &&
      echo "step $n" > "$RESUME_RUN_CHECKPOINT_DIR/.step-$n.tmp/state.txt" &&
      mv "$RESUME_RUN_CHECKPOINT_DIR/.step-$n.tmp" "$RESUME_RUN_CHECKPOINT_DIR/step-$n" &&
      echo "checkpointed step $n"; exit 0' USR1
echo "training"
while :; do n=$((n + 1)); sleep 0.1; done
SH
run_args=(--network none -v "$W/store:/store" -v "$W/trainer.sh:/trainer.sh:ro"
	-e RESUME_RUN_STORE=file:///store -e RESUME_RUN_CLOUD=none -e RESUME_RUN_CHECKPOINT_DIR=/ckpt)
podman run -d --name rr-test-pid1 "${run_args[@]}" "$IMG" sh /trainer.sh > /dev/null
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'c_rc=$?; podman rm -f rr-test-pid1 > /dev/null 2>&1; cleanup $c_rc' EXIT
wait_for 60 sh -c 'podman logs rr-test-pid1 2>&1 | grep -q "^training"' || fail "the trainer did not start: $(podman logs rr-test-pid1 2>&1)"
podman stop -t 30 rr-test-pid1 > /dev/null
podman logs rr-test-pid1 > pid1.log 2>&1
expect_eq "$(podman inspect -f '{{.State.ExitCode}}' rr-test-pid1)" 75 "exit status after podman stop"
expect_grep 'notice: terminate from signal' pid1.log "SIGTERM to PID 1 is a notice"
expect_grep 'checkpointed step [0-9]+' pid1.log "the trainer checkpointed"
expect_grep 'checkpoint step-[0-9]+ is durable in the store' pid1.log "durable before the container stopped"
expect_grep 'leaving with status 75' pid1.log "exit 75"
saved=$(sed -nE 's/^checkpointed step ([0-9]+)$/\1/p' pid1.log)
podman rm rr-test-pid1 > /dev/null
out=$(podman run --rm "${run_args[@]}" "$IMG" sh /trainer.sh 2>&1) || fail "second container: $out"
echo "$out" | grep -q "^restored: step $saved$" || fail "the second container did not restore step $saved: $out"
ok "PID 1: podman stop -> checkpoint step-$saved durable -> exit 75; a new container restored it and exited 0"

# --- COPY --from into an image of one's own ---
mkdir user
cat > user/Containerfile <<CF
FROM docker.io/library/debian:bookworm-slim
RUN apt-get update -q && apt-get install -y -q --no-install-recommends libcurl4 libssl3 \\
    libzstd1 libcjson1 libxxhash0 libexpat1 python3 && rm -rf /var/lib/apt/lists/*
COPY --from=$IMG /usr/bin/resume-run /usr/bin/resume-run
COPY --from=$IMG /usr/lib/python3/dist-packages/resume_run /usr/lib/python3/dist-packages/resume_run
ENTRYPOINT ["resume-run", "--"]
CF
podman build --network host -t localhost/resume-run-user-test:latest user > user-build.log 2>&1 ||
	fail "user image build: $(tail -n 20 user-build.log)"
got=$(podman run --rm --network none localhost/resume-run-user-test:latest python3 -c \
	'import os, resume_run, resume_run.training, subprocess; print(resume_run.__file__); print(" ".join(sorted(f for f in os.listdir(os.path.dirname(resume_run.__file__)) if f.endswith(".py")))); subprocess.run(["resume-run", "--version"], check=True)')
echo "$got" | grep -q '^/usr/lib/python3/dist-packages/resume_run/__init__.py$' || fail "import resume_run: $got"
# The same module as the wheel's and the .deb's: every file of python/resume_run.
echo "$got" | grep -qxF "$(cd "$RR_SRC/python/resume_run" && ls -- *.py | sort | tr '\n' ' ' | sed 's/ $//')" ||
	fail "the image's resume_run is not python/resume_run: $got"
echo "$got" | grep -q "^resume-run $version" || fail "resume-run in the user image: $got"
ok "COPY --from into a bookworm-slim image of one's own: resume-run runs, import resume_run works"
# (The image stays tagged: the next run's build reuses its apt-get layer.)

# --- the .deb on a bare bookworm-slim: apt resolves its Depends, and it runs ---
BUILD=$(dirname "$RR_BIN")
mkdir deb
(cd "$BUILD" && cpack -G DEB -B "$W/deb") > cpack.log 2>&1 || fail "cpack: $(tail -n 20 cpack.log)"
cp deb/resume-run_*.deb deb/resume-run.deb
cat > deb/Containerfile <<'CF'
FROM docker.io/library/debian:bookworm-slim
COPY resume-run.deb /tmp/
RUN apt-get update -q && apt-get install -y -q --no-install-recommends /tmp/resume-run.deb
CF
podman build --network host -t localhost/resume-run-deb-test:latest deb > deb-build.log 2>&1 ||
	fail "installing the .deb with apt: $(tail -n 20 deb-build.log)"
got=$(podman run --rm --network none localhost/resume-run-deb-test:latest resume-run --version)
echo "$got" | grep -q "^resume-run $version" || fail "resume-run from the .deb: $got"
ok "the .deb on bare bookworm-slim: apt-get install pulled its Depends; $got"
podman rmi localhost/resume-run-deb-test:latest > /dev/null 2>&1 || true
podman image prune -f > /dev/null 2>&1 || true # the previous builds' untagged layers
finish
