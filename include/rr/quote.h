/* Outside text quoted for a one-line reason or log line: escaped, shortened, never cut
 * inside a UTF-8 character, so that a hostile name cannot break the line it ends up in. */
#ifndef RR_QUOTE_H
#define RR_QUOTE_H

#include <stddef.h>
#include <string.h>

#define RR_QUOTE_SRC 64                     /* bytes of outside text shown */
#define RR_QUOTE_CAP (RR_QUOTE_SRC * 6 + 8) /* room for the quoted result */

/* Writes src[0..n) into dst as "..." with '"' and '\' backslash-escaped, C0 controls, DEL,
 * C1 controls (U+0080..U+009F) and U+2028/U+2029 as \uXXXX, and "..." after the closing
 * quote when it had to shorten. Returns dst. */
const char *rr_quote(char dst[RR_QUOTE_CAP], const char *src, size_t n);

static inline const char *rr_quote_str(char dst[RR_QUOTE_CAP], const char *s)
{
	return rr_quote(dst, s, strlen(s));
}

#endif
