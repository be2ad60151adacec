/* The JSON answers of IMDS about notices (the EC2 user guide: "Spot Instance interruption
 * notices", "Rebalance recommendations", "Scheduled events"), parsed apart from the polling
 * in cloud/aws.c so that a fuzz target can reach them (tests/fuzz/fuzz_aws_notices.c).
 *
 * Members not read are ignored: AWS adds members to these answers (AWS's own metadata mock
 * sends "NotBeforeDeadline" in scheduled events, which the guide does not list), and what
 * is not read cannot mislead. A member that is read must be there as its type, once. */
#ifndef RR_AWS_NOTICES_H
#define RR_AWS_NOTICES_H

#include <stddef.h>
#include <stdint.h>

#define RR_AWS_ANSWER_MAX (64u << 10) /* ceiling on an answer's bytes */
#define RR_AWS_SPOT_KEY_MAX 160       /* "action@time", cut to fit */

/* spot/instance-action, {"action": "terminate|stop|hibernate", "time": RFC 3339}: 0 with
 * *deadline_ms and key ("action@time": the same notice again has the same key), or
 * RR_ECORRUPT / RR_ENOMEM with a one-line reason in why. */
int rr_aws_parse_spot(const char *text, size_t len, int64_t *deadline_ms,
		      char key[RR_AWS_SPOT_KEY_MAX], char *why, size_t why_len);

/* events/recommendations/rebalance, {"noticeTime": RFC 3339}: 0, or RR_ECORRUPT /
 * RR_ENOMEM with why. The time is not read (see cloud/aws.c). */
int rr_aws_parse_rebalance(const char *text, size_t len, char *why, size_t why_len);

/* Called for each scheduled event that has an EventId and is neither canceled nor
 * completed, with its NotBefore in unix seconds (0 when absent or not a date). Returns 0 to
 * go on, anything else to stop the parse with that result. */
typedef int (*rr_aws_event_cb)(void *ud, const char *event_id, int64_t not_before_unix);

/* events/maintenance/scheduled, an array of {"EventId", "State", "NotBefore", "Code",
 * "Description", "NotAfter"}: the whole answer is checked before the first callback.
 * Returns 0, the callback's result, or RR_ECORRUPT / RR_ENOMEM with why. */
int rr_aws_parse_maintenance(const char *text, size_t len, rr_aws_event_cb cb, void *ud,
			     char *why, size_t why_len);

#endif
