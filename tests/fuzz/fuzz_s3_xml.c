/* Fuzz target: every S3 XML parser reads what an S3 endpoint (or anything between us and
 * it) sends. Any bytes must give a known code; text handed out must be NUL-terminated and
 * inside its field; a refused listing must not have called back; a small buffer refuses a
 * value a big one accepts, never cuts it; the parsers must agree with each other about the
 * root; and text we escape must read back the same. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/s3_xml.h"
#include "rr/timefmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                       \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "fuzz_s3_xml: %s (%s)\n", what, #cond);   \
			__builtin_trap();                                         \
		}                                                                 \
	} while (0)

#define S_TERMINATED(field) (memchr((field), '\0', sizeof(field)) != NULL)

static int s_known(int rc)
{
	return rc == RR_ECORRUPT || rc == RR_ENOMEM || rc == RR_ETOOBIG;
}

static void s_check_error(const struct rr_s3_error *e)
{
	S_CHECK(S_TERMINATED(e->code) && S_TERMINATED(e->message) &&
			S_TERMINATED(e->request_id) && S_TERMINATED(e->server_time),
		"an error field is not terminated");
}

static int s_empty_error(const struct rr_s3_error *e)
{
	return !e->code[0] && !e->message[0] && !e->request_id[0] && !e->server_time[0];
}

struct s_seen {
	size_t n;
	int stop_at;
};

static int s_object(const struct rr_s3_object *o, void *ud)
{
	struct s_seen *s = ud;

	S_CHECK(o->key != NULL && memchr(o->key, '\0', 1025) != NULL, "key longer than 1024");
	S_CHECK(o->key[0] != '\0', "empty key");
	s->n++;
	return (int)s->n == s->stop_at ? 1234 : 0;
}

static void s_fuzz_error(const uint8_t *data, size_t size)
{
	struct rr_s3_error e, c;
	int rc = rr_s3_xml_parse_error(data, size, &e), rc2;

	s_check_error(&e);
	S_CHECK(rc == 0 || rc == RR_ENOENT || s_known(rc), "parse_error: unexpected code");
	if (rc)
		S_CHECK(s_empty_error(&e), "parse_error: refused but fields left behind");
	/* complete: EIO exactly for an <Error> root, with the same fields */
	rc2 = rr_s3_xml_parse_complete(data, size, &c);
	s_check_error(&c);
	S_CHECK(rc2 == 0 || rc2 == RR_EIO || s_known(rc2), "parse_complete: unexpected code");
	S_CHECK((rc2 == RR_EIO) == (rc == 0), "complete and error disagree about <Error>");
	if (rc2 == RR_EIO)
		S_CHECK(strcmp(e.code, c.code) == 0 && strcmp(e.message, c.message) == 0 &&
				strcmp(e.request_id, c.request_id) == 0,
			"complete and error read different fields");
	else
		S_CHECK(s_empty_error(&c), "parse_complete: fields without an <Error>");
	if (rc2 == 0)
		S_CHECK(rc == RR_ENOENT, "a complete result is an <Error> too");
}

static void s_fuzz_initiate(const uint8_t *data, size_t size)
{
	char id[512], small[8];
	int rc = rr_s3_xml_parse_initiate(data, size, id, sizeof(id)), rc2;

	S_CHECK(rc == 0 || s_known(rc), "parse_initiate: unexpected code");
	S_CHECK(S_TERMINATED(id), "upload id not terminated");
	S_CHECK(rc ? id[0] == '\0' : id[0] != '\0', "upload id and code disagree");
	rc2 = rr_s3_xml_parse_initiate(data, size, small, sizeof(small));
	S_CHECK(S_TERMINATED(small), "small upload id not terminated");
	if (rc == 0 && strlen(id) < sizeof(small))
		S_CHECK(rc2 == 0 && strcmp(id, small) == 0, "a short upload id was refused");
	else if (rc == 0)
		S_CHECK(rc2 == RR_ECORRUPT && !small[0], "a long upload id was cut, not refused");
}

static void s_fuzz_list(const uint8_t *data, size_t size)
{
	struct s_seen seen = { 0, 0 }, stop = { 0, 1 };
	char token[1024];
	int truncated = -1, rc;

	rc = rr_s3_xml_parse_list(data, size, s_object, &seen, &truncated, token, sizeof(token));
	S_CHECK(rc == 0 || s_known(rc), "parse_list: unexpected code");
	S_CHECK(S_TERMINATED(token), "token not terminated");
	S_CHECK(truncated == 0 || truncated == 1, "truncated is not a boolean");
	if (rc) {
		S_CHECK(seen.n == 0, "a refused listing called back");
		S_CHECK(!truncated && !token[0], "a refused listing left a token");
		return;
	}
	if (truncated)
		S_CHECK(token[0] != '\0', "a truncated page without a token");
	/* the same page again, stopped at the first entry */
	rc = rr_s3_xml_parse_list(data, size, s_object, &stop, &truncated, token, sizeof(token));
	S_CHECK(rc == (seen.n ? 1234 : 0), "the callback's stop value was not returned");
	S_CHECK(stop.n == (seen.n ? 1u : 0u), "the listing went on after a stop");
}

static void s_fuzz_delete(const uint8_t *data, size_t size)
{
	struct rr_s3_error e;
	char key[1025];
	int rc = rr_s3_xml_parse_delete(data, size, key, sizeof(key), &e);

	s_check_error(&e);
	S_CHECK(S_TERMINATED(key), "first key not terminated");
	S_CHECK(rc >= 0 || s_known(rc), "parse_delete: unexpected code");
	if (rc <= 0)
		S_CHECK(!key[0] && s_empty_error(&e), "no error entry, yet a key or an error");
}

static void s_fuzz_sts(const uint8_t *data, size_t size)
{
	struct rr_s3_xml_credentials c;
	struct rr_s3_error e;
	int64_t ms;
	int rc = rr_s3_xml_parse_sts(data, size, &c, &e);

	s_check_error(&e);
	S_CHECK(rc == 0 || rc == RR_EACCES || s_known(rc), "parse_sts: unexpected code");
	if (rc == 0) {
		S_CHECK(S_TERMINATED(c.access_key_id) && S_TERMINATED(c.secret_access_key) &&
				S_TERMINATED(c.session_token) && S_TERMINATED(c.expiration),
			"a credential is not terminated");
		S_CHECK(c.access_key_id[0] && c.secret_access_key[0] && c.session_token[0],
			"accepted credentials with an empty part");
		S_CHECK(rr_iso8601_to_unix_ms(c.expiration, &ms) == 0, "accepted a bad expiration");
	} else {
		S_CHECK(!c.access_key_id[0] && !c.secret_access_key[0] && !c.session_token[0],
			"refused credentials left behind");
	}
	if (rc != RR_EACCES)
		S_CHECK(s_empty_error(&e), "an STS error without an ErrorResponse");
}

/* An accepted time must name the same calendar second as gmtime gives back. */
static void s_fuzz_time(const uint8_t *data, size_t size)
{
	char s[64], back[32];
	int64_t ms;
	time_t t;
	struct tm tm;

	if (size >= sizeof(s))
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	if (rr_iso8601_to_unix_ms(s, &ms) != 0)
		return;
	t = (time_t)(ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000));
	S_CHECK(gmtime_r(&t, &tm) != NULL, "gmtime_r failed");
	snprintf(back, sizeof(back), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	S_CHECK(strncmp(s, back, 19) == 0, "time does not come back as the same second");
}

static int s_plain(const uint8_t *data, size_t size)
{
	for (size_t i = 0; i < size; i++)
		if (!(data[i] >= 0x20 && data[i] < 0x7f) && data[i] != '\t' && data[i] != '\r' &&
		    data[i] != '\n')
			return 0;
	return 1;
}

static void s_listing_of(struct rr_buf *b, const uint8_t *key, size_t n)
{
	int rc = rr_buf_printf(b, "<ListBucketResult><IsTruncated>false</IsTruncated>"
				  "<Contents><Key>");
	if (!rc)
		rc = rr_s3_xml_escape(b, (const char *)key, n);
	if (!rc)
		rc = rr_buf_printf(b, "</Key><Size>1</Size><LastModified>2020-02-29T00:00:00Z"
				      "</LastModified></Contents></ListBucketResult>");
	S_CHECK(rc == 0, "escaping into a listing failed");
}

struct s_one {
	char key[1025];
	size_t n;
};

static int s_keep(const struct rr_s3_object *o, void *ud)
{
	struct s_one *one = ud;

	memcpy(one->key, o->key, strlen(o->key) + 1);
	one->n++;
	return 0;
}

/* Printable ASCII with tab, CR and LF, escaped into a listing, reads back byte for byte
 * (a CR written literally would come back as LF). */
static void s_fuzz_escape(const uint8_t *data, size_t size)
{
	struct s_one one = { "", 0 };
	struct rr_buf b;
	char token[8];
	int truncated, rc;

	if (size == 0 || size > 1024 || !s_plain(data, size))
		return;
	rr_buf_init(&b, 1u << 20);
	s_listing_of(&b, data, size);
	rc = rr_s3_xml_parse_list(b.data, b.len, s_keep, &one, &truncated, token, sizeof(token));
	S_CHECK(rc == 0 && one.n == 1, "an escaped key does not parse back");
	S_CHECK(strlen(one.key) == size && memcmp(one.key, data, size) == 0,
		"an escaped key reads back different");
	rr_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	s_fuzz_error(data, size);
	s_fuzz_initiate(data, size);
	s_fuzz_list(data, size);
	s_fuzz_delete(data, size);
	s_fuzz_sts(data, size);
	s_fuzz_time(data, size);
	s_fuzz_escape(data, size);
	return 0;
}
