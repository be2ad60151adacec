#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "rr/error.h"

const char *rr_strerror(int err)
{
	switch (err) {
	case RR_OK: return "success";
	case RR_ENOMEM: return "out of memory";
	case RR_EIO: return "input/output error";
	case RR_ENOENT: return "not found";
	case RR_EEXIST: return "already exists";
	case RR_EPRECOND: return "changed by someone else since it was read";
	case RR_EINVAL: return "invalid argument";
	case RR_ECORRUPT: return "data is corrupt";
	case RR_ENOSPC: return "no space left on device";
	case RR_EPATH: return "path leaves its target directory";
	case RR_ETOOBIG: return "too large";
	case RR_ECANCELED: return "canceled";
	case RR_EUNSUPPORTED: return "not supported in this build";
	case RR_EACCES: return "permission denied";
	case RR_EKEY: return "wrong or missing encryption key";
	}
	return "unknown error";
}

int rr_error_from_errno(int errnum)
{
	switch (errnum) {
	case 0: return RR_OK;
	case ENOMEM: return RR_ENOMEM;
	case ENOENT: case ENOTDIR: return RR_ENOENT;
	case EEXIST: case ENOTEMPTY: return RR_EEXIST;
	case ENOSPC: case EDQUOT: return RR_ENOSPC;
	case EACCES: case EPERM: case EROFS: return RR_EACCES;
	case EFBIG: case ENAMETOOLONG: return RR_ETOOBIG;
	case EINVAL: return RR_EINVAL;
	}
	return RR_EIO;
}

int rr_vfail(char *why, size_t why_len, int rc, const char *fmt, va_list ap)
{
	if (why && why_len)
		vsnprintf(why, why_len, fmt, ap);
	return rc;
}

void rr_why(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rr_vfail(why, why_len, 0, fmt, ap);
	va_end(ap);
}

int rr_fail(char *why, size_t why_len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rr_vfail(why, why_len, rc, fmt, ap);
	va_end(ap);
	return rc;
}
