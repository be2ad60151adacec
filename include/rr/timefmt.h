/* Dates as the outside world writes them (ISO 8601, RFC 1123) to unix time. */
#ifndef RR_TIMEFMT_H
#define RR_TIMEFMT_H

#include <stdint.h>

/* Parses an ISO 8601 UTC time "YYYY-MM-DDTHH:MM:SS[.fff]Z" (also "+00:00") into unix ms.
 * Returns 0 or RR_EINVAL. */
int rr_iso8601_to_unix_ms(const char *s, int64_t *out);

/* Parses an RFC 1123 date exactly as HTTP writes it ("Mon, 19 Sep 2016 18:29:47 GMT":
 * weekday, two-digit day, month, four-digit year 1970..9999, 24-hour time, "GMT"), checks
 * that the day exists and the weekday matches it, and stores the unix seconds in *out.
 * Returns 0, or RR_EINVAL (*out unchanged). */
int rr_rfc1123_to_unix(const char *s, int64_t *out);

#endif
