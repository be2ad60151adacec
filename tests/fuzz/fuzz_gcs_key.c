/* Fuzz target: a service-account key file comes from the user's disk (and often from a
 * secret store nobody reads twice) and is turned into a signed JWT by rr_gcs_jwt. Any bytes
 * must be refused with a reason that shows no key text, or give three non-empty base64url
 * parts joined by two dots whose header and claims decode to JSON objects. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/gcs_auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                        \
	do {                                                                       \
		if (!(cond)) {                                                     \
			fprintf(stderr, "fuzz_gcs_key: %s (%s)\n", what, #cond);   \
			__builtin_trap();                                          \
		}                                                                  \
	} while (0)

static int s_b64url_char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/* Decodes the unpadded base64url part p[0..n) and parses it as a JSON object. */
static int s_part_is_json_object(const unsigned char *p, size_t n)
{
	static const char tbl[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	char *text = malloc(n * 3 / 4 + 2);
	uint32_t acc = 0;
	size_t len = 0;
	int bits = 0, ok;
	cJSON *j;

	S_CHECK(text != NULL, "out of memory in the harness");
	for (size_t i = 0; i < n; i++) {
		acc = acc << 6 | (uint32_t)(strchr(tbl, p[i]) - tbl);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			text[len++] = (char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	text[len] = '\0';
	j = cJSON_ParseWithLength(text, len);
	ok = cJSON_IsObject(j);
	cJSON_Delete(j);
	free(text);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t parts[3], nparts = 0, start = 0;
	struct rr_buf out;
	char why[512];
	int rc;

	rr_buf_init(&out, 1u << 20);
	rc = rr_gcs_jwt((const char *)data, size, 1700000000, RR_GCS_SCOPE, &out, why,
			sizeof(why));
	if (rc != 0) {
		S_CHECK(rc == RR_EINVAL || rc == RR_ENOMEM || rc == RR_EIO,
			"unexpected error code");
		S_CHECK(rc == RR_ENOMEM || why[0] != '\0', "a refusal without a reason");
		S_CHECK(strstr(why, "-----") == NULL, "the reason shows PEM text");
		S_CHECK(strchr(why, '\n') == NULL, "the reason is more than one line");
		S_CHECK(out.len == 0, "a refused key left output behind");
		rr_buf_free(&out);
		return 0;
	}
	S_CHECK(out.data != NULL && out.len > 0, "an empty JWT");
	S_CHECK(strlen((const char *)out.data) == out.len, "a NUL inside the JWT");
	for (size_t i = 0; i <= out.len; i++) {
		if (i < out.len && out.data[i] != '.') {
			S_CHECK(s_b64url_char(out.data[i]), "a byte outside base64url");
			continue;
		}
		S_CHECK(nparts < 3, "more than three parts");
		S_CHECK(i > start, "an empty part");
		S_CHECK((i - start) % 4 != 1, "a part of impossible base64url length");
		parts[nparts++] = start;
		start = i + 1;
	}
	S_CHECK(nparts == 3, "fewer than three parts");
	S_CHECK(s_part_is_json_object(out.data, parts[1] - 1), "the header is not JSON");
	S_CHECK(s_part_is_json_object(out.data + parts[1], parts[2] - parts[1] - 1),
		"the claims are not JSON");
	rr_buf_free(&out);
	return 0;
}
