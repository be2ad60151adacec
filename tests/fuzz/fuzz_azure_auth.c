/* Fuzz target: a connection string comes from the user's environment and a token answer
 * from the network. Any bytes must be refused (fields wiped) or read into bounded,
 * NUL-terminated fields; a token read is non-empty, fits its buffer and holds only bytes an
 * Authorization header can carry. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rr/azure_auth.h"
#include "rr/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                       \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "fuzz_azure_auth: %s (%s)\n", what, #cond); \
			__builtin_trap();                                         \
		}                                                                 \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rr_azure_conn c;
	char token[256], why[512];
	int64_t exp = 0;
	int rc;

	rc = rr_azure_conn_parse((const char *)data, size, &c, why, sizeof(why));
	S_CHECK(memchr(c.account, '\0', sizeof(c.account)) && memchr(c.key, '\0', sizeof(c.key)) &&
			memchr(c.sas, '\0', sizeof(c.sas)) &&
			memchr(c.blob_endpoint, '\0', sizeof(c.blob_endpoint)),
		"an unterminated field");
	if (rc)
		S_CHECK(!c.key[0] && !c.sas[0], "a refused string left a secret");
	rr_azure_conn_wipe(&c);
	rc = rr_azure_token_parse("fuzz", data, size, 1700000000, token, sizeof(token), &exp, why,
				  sizeof(why));
	if (rc == 0) {
		size_t n = strlen(token);
		S_CHECK(n > 0 && n < sizeof(token), "a token of no or too much length");
		for (size_t i = 0; i < n; i++)
			S_CHECK((unsigned char)token[i] > 0x20 && (unsigned char)token[i] < 0x7f,
				"a token byte a header cannot carry");
		S_CHECK(exp > 1700000000, "a token already expired");
	} else {
		S_CHECK(token[0] == '\0', "a refused answer left a token");
	}
	return 0;
}
