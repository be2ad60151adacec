/* Dates as the outside world writes them, each parsed once for every caller: ISO 8601 (S3
 * listings and errors, STS and container credentials, the EC2 spot and rebalance notices)
 * and RFC 1123 (HTTP dates; Azure's NotBefore). Strict: a date is read exactly or refused. */
#include <stdint.h>
#include <string.h>

#include "rr/error.h"
#include "rr/timefmt.h"

/* Exactly n decimal digits (stops at the NUL, so never reads past a short string). */
static int s_digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

static int s_is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int s_days_in_month(int y, int m)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	return m == 2 && s_is_leap(y) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
 * days_from_civil), without the time zone games timegm needs. */
static int64_t s_days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int rr_iso8601_to_unix_ms(const char *s, int64_t *out)
{
	int y, mo, d, h, mi, sec, ms = 0, nfrac = 0;
	const char *p;

	if (!s || !out)
		return RR_EINVAL;
	/* each test runs only when the ones before it passed, so s[i] is inside the string */
	if (s_digits(s, 4, &y) || s[4] != '-' || s_digits(s + 5, 2, &mo) || s[7] != '-' ||
	    s_digits(s + 8, 2, &d) || s[10] != 'T' || s_digits(s + 11, 2, &h) || s[13] != ':' ||
	    s_digits(s + 14, 2, &mi) || s[16] != ':' || s_digits(s + 17, 2, &sec))
		return RR_EINVAL;
	p = s + 19;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, nfrac++)
			if (nfrac < 3)
				ms = ms * 10 + (*p - '0');
		if (nfrac == 0)
			return RR_EINVAL;
		for (int k = nfrac; k < 3; k++)
			ms *= 10;
	}
	if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0)
		return RR_EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > s_days_in_month(y, mo) || h > 23 || mi > 59 ||
	    sec > 59)
		return RR_EINVAL;
	*out = ((s_days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 * 1000 +
	       (int64_t)sec * 1000 + ms;
	return 0;
}

int rr_rfc1123_to_unix(const char *s, int64_t *out)
{
	/* 1970-01-01 was a Thursday. */
	static const char wdays[7][4] = { "Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed" };
	static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	int wd = -1, mon = -1, d, y, h, mi, se, last;
	int64_t days;

	/* "Mon, 19 Sep 2016 18:29:47 GMT": 29 characters at fixed places. */
	if (!s || !out || strnlen(s, 30) != 29)
		return RR_EINVAL;
	if (s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
	    s[19] != ':' || s[22] != ':' || s[25] != ' ' || memcmp(s + 26, "GMT", 3) != 0)
		return RR_EINVAL;
	for (int i = 0; i < 7; i++)
		if (memcmp(s, wdays[i], 3) == 0)
			wd = i;
	for (int i = 0; i < 12; i++)
		if (memcmp(s + 8, months[i], 3) == 0)
			mon = i;
	if (wd < 0 || mon < 0 || s_digits(s + 5, 2, &d) || s_digits(s + 12, 4, &y) ||
	    s_digits(s + 17, 2, &h) || s_digits(s + 20, 2, &mi) || s_digits(s + 23, 2, &se))
		return RR_EINVAL;
	last = s_days_in_month(y, mon + 1);
	if (y < 1970 || d < 1 || d > last || h > 23 || mi > 59 || se > 59)
		return RR_EINVAL;
	days = s_days_from_civil(y, mon + 1, d);
	if (days % 7 != wd)
		return RR_EINVAL;
	*out = days * 86400 + h * 3600 + mi * 60 + se;
	return 0;
}
