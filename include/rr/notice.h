/* A notice that the machine is going away (or should checkpoint now), and the JSON file
 * the trainer sees while it is active (docs/trainer-contract.md, "The trainer contract",
 * RESUME_RUN_NOTICE_FILE). */
#ifndef RR_NOTICE_H
#define RR_NOTICE_H

#include <stddef.h>
#include <stdint.h>

#include "rr/buf.h"

enum rr_notice_kind { RR_NOTICE_PREEMPT, RR_NOTICE_REBALANCE, RR_NOTICE_MAINTENANCE,
		      RR_NOTICE_TERMINATE };
enum rr_notice_source { RR_SOURCE_AWS, RR_SOURCE_GCP, RR_SOURCE_AZURE, RR_SOURCE_SIGNAL,
			RR_SOURCE_FILE, RR_SOURCE_NODE /* another node's agent (multi-node) */ };

#define RR_NOTICE_FILE_MAX 65536 /* ceiling on a --notice-file we read */

struct rr_notice {
	enum rr_notice_kind kind;
	enum rr_notice_source source;
	int64_t deadline_unix;   /* seconds; 0 when there is none */
	int64_t received_unix;
	uint64_t seq;            /* the cloud watcher's number for it, from 1 (0: not from it) */
};

const char *rr_notice_kind_name(enum rr_notice_kind k);
const char *rr_notice_source_name(enum rr_notice_source s);

/* Serialises the notice as the trainer's notice file (appending to out). */
int rr_notice_to_json(const struct rr_notice *n, struct rr_buf *out);

/* Reads the contents of a --notice-file. An empty or non-JSON file is a plain preemption
 * notice; a JSON object may set "kind" (preempt|rebalance|maintenance|terminate) and
 * "deadline_unix" (integer seconds) or "deadline_in" (seconds from now). Fields other than
 * those are ignored; a known field with a bad value is refused (RR_EINVAL, reason in why)
 * so a typo in a drill is not silently a different drill. n->source and received_unix are
 * set by the caller. RR_ETOOBIG past RR_NOTICE_FILE_MAX. */
int rr_notice_parse_file(const char *text, size_t len, int64_t now_unix, struct rr_notice *n,
			 char *why, size_t why_len);

#endif
