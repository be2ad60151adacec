/* The AWS shared configuration files, read the way the AWS CLI and SDKs read them.
 *
 * Files: the credentials file (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials) and
 * the config file (AWS_CONFIG_FILE, else ~/.aws/config). In the credentials file a
 * profile's section is "[name]"; in the config file it is "[profile name]", except
 * "[default]" (and "[profile default]" is also accepted). For a key set in both, the
 * credentials file wins. Lines starting with '#' or ';' are comments; "key = value" pairs,
 * keys compared without regard to case; an indented line under "key =" with an empty value
 * is a sub-property and is stored as "key.subkey" (e.g. "s3.addressing_style"). Missing
 * files are not an error. */
#ifndef RR_AWS_PROFILE_H
#define RR_AWS_PROFILE_H

#include <stddef.h>

#define RR_AWS_PROFILE_MAX_FILE (1u << 20) /* bigger shared files are refused */

/* Called for every key/value pair of every section of an INI text: section is the text
 * between the brackets, trimmed (e.g. "profile dev"); key is lowercased; sub-properties come
 * as "parent.sub". Return nonzero to stop (that value is returned by rr_ini_parse). */
typedef int (*rr_ini_cb)(const char *section, const char *key, const char *value, void *ud);

/* Parses len bytes of INI text (need not be NUL-terminated). Returns 0, RR_ECORRUPT for a
 * line that is none of section/pair/comment/blank/continuation (line number in `why`),
 * RR_ETOOBIG past RR_AWS_PROFILE_MAX_FILE or an over-long line (4096 bytes), or cb's
 * nonzero value. why (why_len bytes, may be NULL) gets a one-line reason. */
int rr_ini_parse(const char *text, size_t len, rr_ini_cb cb, void *ud, char *why,
		 size_t why_len);

struct rr_aws_profile;

/* Loads one profile from both files. name NULL means AWS_PROFILE, else "default". A profile
 * that appears in neither file is not an error (every lookup then returns NULL), unless
 * the user named it explicitly (name or AWS_PROFILE): then RR_ENOENT with the reason in why.
 * Returns 0, RR_ENOENT, RR_ECORRUPT (a malformed file, path and line in why), RR_ENOMEM,
 * RR_EIO. */
int rr_aws_profile_load(const char *name, struct rr_aws_profile **out, char *why,
			size_t why_len);
/* The profile's value for key (case-insensitive), or NULL. Valid until the profile is freed. */
const char *rr_aws_profile_get(const struct rr_aws_profile *p, const char *key);
/* The profile's name ("default" when none was named). */
const char *rr_aws_profile_name(const struct rr_aws_profile *p);
/* Frees the profile, wiping the values (they may hold secrets). NULL is fine. */
void rr_aws_profile_free(struct rr_aws_profile *p);

#endif
