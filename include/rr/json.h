/* Strict reading of JSON that comes from outside (the store, metadata services): one
 * object (or array), nothing but whitespace after it, and no NUL character (raw, or escaped
 * as \u0000), which would silently cut a cJSON string short; then its members, each checked
 * for its type and bounds, by the getters below. */
#ifndef RR_JSON_H
#define RR_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Parses len bytes of text (no NUL terminator needed) into *out (the caller frees it with
 * cJSON_Delete). Returns 0, RR_ECORRUPT with a one-line reason in why naming `what`
 * ("manifest", "LATEST", ...), or RR_ENOMEM. */
int rr_json_parse_object(const char *what, const char *text, size_t len, cJSON **out,
			 char *why, size_t why_len);

/* rr_json_parse_object for a document that is one array ("<what> is not a JSON array"). */
int rr_json_parse_array(const char *what, const char *text, size_t len, cJSON **out,
			char *why, size_t why_len);

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

/* ---- reading an object's members ----
 *
 * A reader of outside JSON names the members it knows, opens each object with them, then
 * reads them one by one with the getters below, so that it reads as the list of its fields.
 * Every failure writes one line into why, "<where>\"<key>\" <what is wrong>" ("file 0:
 * \"size\" is not a number"), and returns RR_ECORRUPT. A getter of a value (string, number,
 * true/false) changes *out only when the member is there and good, so an optional member's
 * default is what the caller put in *out; the getters of an item, array or object set *out
 * to NULL (and *n to 0) unless the member is there and good. */

/* One object being read, and where its reasons go. */
struct rr_json_obj {
	const cJSON *j;
	const char *where; /* put before every reason: "", "file 0: ", "Scheduled Events: " */
	char *why;
	size_t why_len;
};

#define RR_JSON_NAMES_MAX 64 /* names one object may list */

/* rr_json_open flags. A member not named is ignored by default: where the other side may
 * add members (a cloud's metadata, a newer agent's files) that is what keeps us working. */
#define RR_JSON_CLOSED 1u /* a member not named is refused */

/* Getter flags; a member is required unless RR_JSON_OPTIONAL. */
#define RR_JSON_OPTIONAL 1u /* absent is fine: 0, *out unchanged */
#define RR_JSON_NULLABLE 2u /* null reads as absent */

#define RR_JSON_NAMES(a) (a), (sizeof(a) / sizeof((a)[0]))

/* Fills *o for reading j, after checking that j is an object ("<where>is not an object")
 * and that no named member appears twice ("<where>\"<key>\" appears twice": cJSON reads
 * the first, other readers the last, and the two must not disagree). With RR_JSON_CLOSED a
 * member not among names is refused too. Returns 0, RR_ECORRUPT, or RR_EINVAL when more
 * than RR_JSON_NAMES_MAX names are given. */
int rr_json_open(struct rr_json_obj *o, const cJSON *j, const char *where,
		 const char *const *names, size_t nnames, unsigned flags, char *why,
		 size_t why_len);

/* 1 when the member is there (null included), 0 when not. */
int rr_json_has(const struct rr_json_obj *o, const char *key);

/* The member itself, of any type. */
int rr_json_get_item(const struct rr_json_obj *o, const char *key, unsigned flags,
		     const cJSON **out);

/* A string ("is not a string"); *out points into the parsed tree. */
int rr_json_get_string(const struct rr_json_obj *o, const char *key, unsigned flags,
		       const char **out);

/* A name that goes into log lines: a string of 1..max bytes without control characters
 * ("<where>\"<key>\" <quoted value> must be 1..<max> bytes without control characters"). */
int rr_json_get_label(const struct rr_json_obj *o, const char *key, unsigned flags,
		      size_t max, const char **out);

/* An integer in [min, max], checked before it leaves the double: "is not a number", "is
 * not a finite number", "is negative (-1)" or "is 5000, above the limit 4095" when min is
 * 0, "is 113, outside [-112, 112]" otherwise, "is not an integer (7.5)". -0 reads as 0.
 * min and max lie within +-2^53, the integers a double holds exactly (RR_EINVAL if not). */
int rr_json_get_int(const struct rr_json_obj *o, const char *key, unsigned flags,
		    int64_t min, int64_t max, int64_t *out);

/* rr_json_get_int in [0, max], max at most 2^53. */
int rr_json_get_uint(const struct rr_json_obj *o, const char *key, unsigned flags,
		     uint64_t max, uint64_t *out);

/* rr_json_get_int's checks on a value that is not a member of o (an array's element):
 * label names it in the reason, "\"shape\"[2]". */
int rr_json_read_int(const struct rr_json_obj *o, const cJSON *it, const char *label,
		     int64_t min, int64_t max, int64_t *out);

/* true or false, as 1 or 0 ("is not true or false"). */
int rr_json_get_bool(const struct rr_json_obj *o, const char *key, unsigned flags, int *out);

/* An array ("is not an array") and its length. */
int rr_json_get_array(const struct rr_json_obj *o, const char *key, unsigned flags,
		      const cJSON **out, size_t *n);

/* An object ("is not an object"), to rr_json_open in turn. */
int rr_json_get_object(const struct rr_json_obj *o, const char *key, unsigned flags,
		       const cJSON **out);

#endif
