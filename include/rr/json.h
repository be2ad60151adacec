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

/* Every cJSON parse call writes cJSON's process-wide error position (the static
 * global_error behind cJSON_GetErrorPtr), on success too, so two threads parsing at once
 * (the cloud watcher, the persister, the persist pool, the event loop) race on it. All
 * parsing goes through this function, which holds one lock around
 * cJSON_ParseWithLengthOpts; nothing reads cJSON_GetErrorPtr. end (may be NULL) receives
 * where this call's parsing stopped. Returns the tree (cJSON_Delete) or NULL. */
cJSON *rr_json_parse(const char *text, size_t len, const char **end);

/* cJSON_PrintUnformatted(j), byte for byte, in a fraction of its time: a number that holds
 * an integer below 10^15 in magnitude is printed here as its decimal digits, which is what
 * every cJSON version prints for it ("%1.15g", or "%d" where it fits an int), instead of
 * through cJSON's snprintf and sscanf round trip (most of the cost of printing a
 * manifest). j is changed while it is printed and restored before this returns. Returns
 * the text (free()) or NULL when out of memory. */
char *rr_json_print(cJSON *j);

/* Zeroes every string of a parsed document (it held a key or a token), then frees it.
 * NULL is fine. */
void rr_json_wipe_delete(cJSON *j);

#endif
