/* Error codes shared by every module: 0 is success, failures are negative. */
#ifndef RR_ERROR_H
#define RR_ERROR_H

#include <stdarg.h>
#include <stddef.h>

enum rr_error {
	RR_OK = 0,
	RR_ENOMEM = -1,     /* out of memory */
	RR_EIO = -2,        /* I/O error (errno kept by the caller's log line) */
	RR_ENOENT = -3,     /* object or file does not exist */
	RR_EEXIST = -4,     /* create-only write found the object already there */
	RR_EPRECOND = -5,   /* compare-and-swap lost: the object changed since read */
	RR_EINVAL = -6,     /* bad argument or option */
	RR_ECORRUPT = -7,   /* stored data failed a hash or format check */
	RR_ENOSPC = -8,     /* no space left on the device */
	RR_EPATH = -9,      /* a path would leave its target directory */
	RR_ETOOBIG = -10,   /* input larger than its ceiling */
	RR_ECANCELED = -11, /* work abandoned on request */
	RR_EUNSUPPORTED = -12, /* not available in this build */
	RR_EACCES = -13,    /* permission denied */
	RR_EKEY = -14,      /* encrypted with another key, or key and store disagree on
			     * whether objects are encrypted */
};

/* Returns a static, human-readable description of an rr_error code. */
const char *rr_strerror(int err);

/* Writes a one-line reason into why (why_len bytes; nothing when why is NULL or why_len is
 * 0) and returns rc: `return rr_fail(why, why_len, RR_EIO, "cannot reach %s", url);` */
int rr_fail(char *why, size_t why_len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The same with a va_list, for modules whose own failure helper keeps why in a struct. */
int rr_vfail(char *why, size_t why_len, int rc, const char *fmt, va_list ap);

/* Writes a one-line reason into why like rr_fail, where the caller goes on (a retry, a
 * fallback) instead of returning a code: `rr_why(why, cap, "GET %s: %s", url, e);`. */
void rr_why(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Maps an errno value to the closest rr_error code. */
int rr_error_from_errno(int errnum);

#endif
