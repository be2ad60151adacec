#include <ctype.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rr/log.h"

static int s_json;
static enum rr_log_level s_min = RR_LOG_INFO;
/* A live progress line is on screen without newline. The persister thread and the event
 * loop both log, so it is atomic (a line may still land mid-progress-line: cosmetic). */
static atomic_int s_live_pending;

void rr_log_init(int json, enum rr_log_level min_level)
{
	s_json = json;
	s_min = min_level;
}

static const char *s_level_name(enum rr_log_level level)
{
	static const char *const names[] = { "debug", "info", "warn", "error" };
	return names[level];
}

/* Appends src to dst as a JSON string body (no quotes), within cap. */
static size_t s_json_escape(char *dst, size_t cap, const char *src)
{
	size_t n = 0;
	for (; *src && n + 7 < cap; src++) {
		unsigned char c = (unsigned char)*src;
		if (c == '"' || c == '\\') {
			dst[n++] = '\\';
			dst[n++] = (char)c;
		} else if (c < 0x20) {
			n += (size_t)snprintf(dst + n, cap - n, "\\u%04x", c);
		} else {
			dst[n++] = (char)c;
		}
	}
	dst[n] = '\0';
	return n;
}

static void s_emit(enum rr_log_level level, int live, const char *msg)
{
	char line[4096 + 64];
	int n;

	if (s_json) {
		char esc[4096];
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		s_json_escape(esc, sizeof(esc), msg);
		n = snprintf(line, sizeof(line),
			     "{\"ts\":%lld.%03ld,\"level\":\"%s\",\"msg\":\"%s\"}\n",
			     (long long)ts.tv_sec, ts.tv_nsec / 1000000, s_level_name(level), esc);
	} else if (live) {
		n = snprintf(line, sizeof(line), "\r\033[Kresume-run: %s", msg);
	} else {
		const char *prefix = level == RR_LOG_WARN ? "warning: " :
				     level == RR_LOG_ERROR ? "error: " : "";
		n = snprintf(line, sizeof(line), "%sresume-run: %s%s\n",
			     s_live_pending ? "\n" : "", prefix, msg);
	}
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	s_live_pending = live && !s_json;
	/* One write per line keeps lines whole when threads log at once. */
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
}

void rr_log(enum rr_log_level level, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	if (level < s_min)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s_emit(level, 0, msg);
}

void rr_log_progress(int live, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	if (RR_LOG_INFO < s_min)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s_emit(RR_LOG_INFO, live && !s_json, msg);
}

int rr_log_same_gist(const char *a, const char *b)
{
	while (*a && *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			while (isdigit((unsigned char)*a))
				a++;
			while (isdigit((unsigned char)*b))
				b++;
		} else if (*a++ != *b++) {
			return 0;
		}
	}
	return *a == *b;
}
