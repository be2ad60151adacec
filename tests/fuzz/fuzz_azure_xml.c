/* Fuzz target: Azure's List Blobs pages and error documents come from the network. Any
 * bytes must be refused or read into bounded fields: every name reported is NUL-terminated
 * within RR_AZURE_NAME_MAX, the marker fits its buffer, and a refused page reports nothing
 * (the page is checked whole before the first callback). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "azure_xml.h"
#include "rr/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                      \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_azure_xml: %s (%s)\n", what, #cond); \
			__builtin_trap();                                        \
		}                                                                \
	} while (0)

static int s_count(const struct rr_azure_blob *b, void *ud)
{
	S_CHECK(strlen(b->name) <= RR_AZURE_NAME_MAX, "a name longer than Azure allows");
	(*(int *)ud)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char marker[RR_AZURE_MARKER_MAX];
	struct rr_azure_error e;
	int n = 0, rc;

	rc = rr_azure_xml_parse_list(data, size, s_count, &n, marker, sizeof(marker));
	S_CHECK(rc == 0 || n == 0, "a refused page reported entries");
	S_CHECK(rc != 0 || memchr(marker, '\0', sizeof(marker)), "an unterminated marker");
	if (rc)
		S_CHECK(marker[0] == '\0', "a refused page left a marker");
	rc = rr_azure_xml_parse_error(data, size, &e);
	S_CHECK(memchr(e.code, '\0', sizeof(e.code)) && memchr(e.message, '\0', sizeof(e.message)),
		"an unterminated error field");
	if (rc)
		S_CHECK(e.code[0] == '\0', "a refused error document left a code");
	return 0;
}
