/* Strict reading of JSON that comes from outside (the store, metadata services): one
 * object, nothing but whitespace after it, and no NUL character (raw, or escaped as
 * \u0000), which would silently cut a cJSON string short. */
#ifndef RR_JSON_H
#define RR_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Parses len bytes of text (no NUL terminator needed) into *out (the caller frees it with
 * cJSON_Delete). Returns 0, RR_ECORRUPT with a one-line reason in why naming `what`
 * ("manifest", "LATEST", ...), or RR_ENOMEM. */
int rr_json_parse_object(const char *what, const char *text, size_t len, cJSON **out,
			 char *why, size_t cap);

/* Zeroes every string of a parsed document (it held a key or a token), then frees it.
 * NULL is fine. */
void rr_json_wipe_delete(cJSON *j);

#endif
