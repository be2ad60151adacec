/* Cloud preemption notices (docs/how-it-works.md, "How it works", the clouds' metadata
 * documentation (EC2 IMDSv2, GCE metadata, Azure Scheduled Events)): one provider per cloud
 * behind a small interface (cloud/aws.c, cloud/gcp.c, cloud/azure.c), detection
 * (cloud/detect.c), and a watcher thread (cloud/watch.c) that runs the provider away from the
 * agent's event loop, so a metadata service that hangs, throttles or fails never holds the
 * agent up. Notices reach the event loop through an eventfd. */
#ifndef RR_CLOUD_H
#define RR_CLOUD_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rr/http.h"
#include "rr/notice.h"

enum rr_cloud { RR_CLOUD_AUTO, RR_CLOUD_NONE, RR_CLOUD_AWS, RR_CLOUD_GCP, RR_CLOUD_AZURE };

/* "auto", "none", "aws", "gcp", "azure" */
const char *rr_cloud_name(enum rr_cloud c);
/* Parses a --cloud value. Returns 0 or RR_EINVAL. */
int rr_cloud_parse(const char *s, enum rr_cloud *out);

/* Where the run is, for the events ledger. Empty strings when unknown. */
struct rr_cloud_identity {
	char cloud[8];           /* "aws", "gcp", "azure" */
	char instance_id[128];
	char instance_type[128]; /* AWS instance type, GCP machine type, Azure vmSize */
	char zone[128];          /* availability zone, GCP zone, Azure location/zone */
	char lifecycle[16];      /* "spot" or "on-demand" ("" when unknown) */
};

struct rr_cloud_opts {
	struct rr_http *http;         /* borrowed; thread-safe */
	/* Base URL of the metadata service (--metadata-endpoint), e.g. "http://127.0.0.1:1338";
	 * NULL: the provider's own (AWS: AWS_EC2_METADATA_SERVICE_ENDPOINT or
	 * http://169.254.169.254; GCP: http://$GCE_METADATA_HOST or
	 * http://metadata.google.internal; Azure: http://169.254.169.254). */
	const char *endpoint;
	int64_t poll_interval_ms;     /* 0: the provider's default (AWS 2000, Azure 1000) */
	int azure_ack;                /* Azure: approve the event once the checkpoint is durable */
	const atomic_int *stop;     /* nonzero: return from wait as soon as possible */
};

/* What every provider implements. A provider is used by one thread (the watcher's). */
struct rr_cloud_provider {
	const char *name;             /* "aws", ... */
	enum rr_notice_source source;
	/* Creates the provider's state. Returns 0, RR_ENOMEM, RR_EINVAL. */
	int (*create)(const struct rr_cloud_opts *o, void **state);
	/* Best effort: fills what it can of *id. Returns 0 or an error (with why). */
	int (*identity)(void *state, struct rr_cloud_identity *id, char *why, size_t why_len);
	/* Waits for the next notice for about one poll interval (AWS, Azure) or one hanging
	 * GET (GCP, at most ~60 s; sooner when *o->stop becomes nonzero). Returns 1 with *n
	 * filled (kind, source, deadline_unix, received_unix) for a notice not reported before,
	 * 0 when there is nothing new, or a negative rr_error with a one-line reason in why when
	 * the metadata service failed (the watcher backs off and calls again). A notice is
	 * reported once: the same spot action, rebalance time, maintenance event or Azure
	 * EventId is not reported twice. */
	int (*wait)(void *state, struct rr_notice *n, char *why, size_t why_len);
	/* The checkpoint asked for by the last notice is durable (Azure: acknowledge it when
	 * azure_ack is set). May be NULL. */
	void (*durable)(void *state);
	void (*destroy)(void *state);
};

extern const struct rr_cloud_provider rr_cloud_aws;
extern const struct rr_cloud_provider rr_cloud_gcp;
extern const struct rr_cloud_provider rr_cloud_azure;

/* Decides which cloud this machine runs on: the DMI strings under dmi_dir (NULL:
 * /sys/class/dmi/id; "Amazon EC2", "Google", Azure's chassis asset tag
 * 7783-7084-3265-9085-8269-3286-77) first, then short parallel probes of the three metadata
 * services at o->endpoint (or their own addresses): an IMDSv2 token, GCP's
 * Metadata-Flavor: Google answer, Azure's instance document. Nothing conclusive: none.
 * why (may be NULL) says what decided. */
enum rr_cloud rr_cloud_detect(const struct rr_cloud_opts *o, const char *dmi_dir, char *why,
			      size_t why_len);

/* ---- the watcher: a thread that detects, fetches the identity, and waits for notices ---- */

struct rr_cloud_watch;

/* Starts watching: with RR_CLOUD_AUTO it detects first (on the thread, so start-up does
 * not wait); with RR_CLOUD_NONE there is no thread and no notice ever comes. The opts'
 * strings must outlive the watcher. Returns 0 or RR_ENOMEM. */
int rr_cloud_watch_start(enum rr_cloud cloud, const struct rr_cloud_opts *o,
			 struct rr_cloud_watch **out);
/* The eventfd that becomes readable when a notice is queued (-1 when none will come). */
int rr_cloud_watch_fd(const struct rr_cloud_watch *w);
/* Takes the next queued notice (reading the eventfd). Returns 1 with *n filled, or 0. */
int rr_cloud_watch_next(struct rr_cloud_watch *w, struct rr_notice *n);
/* Copies the identity once known; returns 1, or 0 while it is not (yet) known. */
int rr_cloud_watch_identity(struct rr_cloud_watch *w, struct rr_cloud_identity *id);
/* 1 once detection is over and the identity was asked for (so ledger events written now
 * carry it when it can be had), or when no cloud is watched. */
int rr_cloud_watch_settled(struct rr_cloud_watch *w);
/* The cloud watched: the one given, or once detection decided (RR_CLOUD_NONE for none, or
 * for a NULL w); RR_CLOUD_AUTO while it has not yet. */
enum rr_cloud rr_cloud_watch_cloud(struct rr_cloud_watch *w);
/* The checkpoint asked for by notice seq (its rr_notice.seq) is durable. The provider is
 * told (Azure: the event is approved) only while seq is the newest notice the watcher has
 * reported: a durable checkpoint answers no notice that came after it. */
void rr_cloud_watch_durable(struct rr_cloud_watch *w, uint64_t seq);
/* Stops the thread (promptly, also in the middle of a hanging GET) and frees. NULL ok. */
void rr_cloud_watch_stop(struct rr_cloud_watch *w);

#endif
