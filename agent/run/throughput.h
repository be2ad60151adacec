/* Deadline awareness: the recent persist throughput of one store, and whether the next
 * checkpoint can be durable before a notice's deadline. Pure arithmetic on what persists
 * report (no clock, no I/O), so the estimate and its message are tested for given
 * histories. Not thread-safe: the persister updates its copy under its own lock. */
#ifndef RR_THROUGHPUT_H
#define RR_THROUGHPUT_H

#include <stddef.h>
#include <stdint.h>

/* Before the first persist the rate is a guess, kept low so that the first notice errs on
 * the side of predicting a miss: a remote store (s3://, gs://) and a file store. */
#define RR_THROUGHPUT_SEED_REMOTE_BPS (20.0 * 1000 * 1000)
#define RR_THROUGHPUT_SEED_FILE_BPS (200.0 * 1000 * 1000)

/* Persists that changed fewer bytes than this say more about request latency than about
 * the link: they move the checkpoint history but not the rate. */
#define RR_THROUGHPUT_MIN_SAMPLE_BYTES (256u * 1024)

struct rr_throughput {
	double bps;        /* original bytes of changed segments to durable, per second */
	unsigned samples;  /* persists that moved the rate; 0: bps is still the seed */
	/* the newest persisted checkpoint: the estimate's model of the next one */
	char last_name[256];
	uint64_t last_bytes;       /* its original bytes */
	double last_new_fraction;  /* of its stored bytes, the share this persist wrote */
	int64_t last_durable_ms;   /* wall clock; 0: unknown (found in the store at start) */
};

/* Seeds the rate for the store at url (its scheme decides which seed). */
void rr_throughput_init(struct rr_throughput *t, const char *url);

/* Names the checkpoint already in the store at start (restore's baseline): durable, of
 * bytes original bytes, time unknown. The next one is assumed to be written in full. */
void rr_throughput_baseline(struct rr_throughput *t, const char *name, uint64_t bytes);

/* One finished persist: bytes original, stored_bytes it occupies in the store, new_bytes
 * of those written by it, in elapsed_ms; durable at durable_ms (wall clock). The rate is an
 * exponentially weighted average (half weight on the newest sample); the first sample
 * replaces the seed. */
void rr_throughput_observe(struct rr_throughput *t, const char *name, uint64_t bytes,
			   uint64_t stored_bytes, uint64_t new_bytes, int64_t elapsed_ms,
			   int64_t durable_ms);

struct rr_deadline_estimate {
	uint64_t expect_bytes;  /* the next checkpoint's original bytes (like the last one) */
	uint64_t expect_work;   /* of those, the bytes expected to change */
	int64_t need_ms;        /* at the current rate */
	int64_t left_ms;        /* until the deadline */
	int fits;               /* need_ms <= left_ms */
};

/* The estimate for a notice whose deadline is left_ms away. */
void rr_throughput_estimate(const struct rr_throughput *t, int64_t left_ms,
			    struct rr_deadline_estimate *e);

/* The notice's log line (without the "notice: " prefix) into out: the deadline, the rate,
 * the expected checkpoint and the verdict; on a miss, by how much, and which checkpoint a
 * new machine would restore (durable how long before now_ms, wall clock). Returns out. */
const char *rr_throughput_describe(const struct rr_throughput *t,
				   const struct rr_deadline_estimate *e, int64_t now_ms,
				   char *out, size_t size);

#endif
