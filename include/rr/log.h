/* Log lines on stderr: "resume-run: message" (text) or one JSON object per line.
 * Thread-safe: each line is written with a single write(2). */
#ifndef RR_LOG_H
#define RR_LOG_H

enum rr_log_level { RR_LOG_DEBUG, RR_LOG_INFO, RR_LOG_WARN, RR_LOG_ERROR };

/* json: 0 for text, 1 for JSON lines. Lines below min_level are dropped. */
void rr_log_init(int json, enum rr_log_level min_level);

void rr_log(enum rr_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define rr_debug(...) rr_log(RR_LOG_DEBUG, __VA_ARGS__)
#define rr_info(...) rr_log(RR_LOG_INFO, __VA_ARGS__)
#define rr_warn(...) rr_log(RR_LOG_WARN, __VA_ARGS__)
#define rr_error(...) rr_log(RR_LOG_ERROR, __VA_ARGS__)

/* Writes a progress line: on a terminal it replaces the current line (no newline);
 * elsewhere it is an ordinary info line. */
void rr_log_progress(int live, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 when two messages are the same but for their numbers: a retry loop that logs once per
 * change of state compares its failures so, since curl's "Failed to connect to HOST port P
 * after N ms" differs in N from one attempt to the next. */
int rr_log_same_gist(const char *a, const char *b);

#endif
