# Sourced by faultlib.sh and by the trainers it writes.
# commit_step DIR N [BIG]: the trainer's way to commit step-N: files of random bytes (no two
# steps share a chunk) written under .step-N.tmp, then renamed: three chunk PUTs, f1 in a
# pack (under 1 MiB stored), f2 and f3 objects of their own. BIG adds a 6 MB file (one
# chunk in two parts with RESUME_RUN_S3_PART_SIZE=5242880).
commit_step() {
	local d=$1 n=$2 i
	mkdir -p "$d/.step-$n.tmp"
	for i in 1 2 3; do head -c $((100000 * i + (i > 1) * 1000000)) /dev/urandom > "$d/.step-$n.tmp/f$i.bin"; done
	[ -z "${3:-}" ] || head -c 6000000 /dev/urandom > "$d/.step-$n.tmp/big.bin"
	mv "$d/.step-$n.tmp" "$d/step-$n"
}
