#!/usr/bin/env bash
for n in $(seq 6); do
	mkdir -p "$RESUME_RUN_CHECKPOINT_DIR/.step-$n.tmp"
	head -c 300000 /dev/urandom > "$RESUME_RUN_CHECKPOINT_DIR/.step-$n.tmp/w.bin"
	mv "$RESUME_RUN_CHECKPOINT_DIR/.step-$n.tmp" "$RESUME_RUN_CHECKPOINT_DIR/step-$n"
	sleep 0.8
done
sleep 1
