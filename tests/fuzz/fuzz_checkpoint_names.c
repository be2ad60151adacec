/* Fuzz target: checkpoint names come from the trainer (directory and file names, the
 * DeepSpeed pointer's content) and --commit from the user. Any bytes: the step number, if
 * found, is one the name spells after a known key; the order is antisymmetric; a commit
 * rule is refused or names a plain file; dot-names are always temporary. */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rr/ckpt_order.h"
#include "rr/commit_rule.h"
#include "rr/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define S_CHECK(cond, what)                                                           \
	do {                                                                          \
		if (!(cond)) {                                                        \
			fprintf(stderr, "fuzz_checkpoint_names: %s (%s)\n", what, #cond); \
			__builtin_trap();                                             \
		}                                                                     \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char a[300], digits[32];
	const char *b;
	struct rr_commit_rule rule;
	uint64_t step = 7;
	size_t n = size < sizeof(a) - 1 ? size : sizeof(a) - 1;
	int ca, cb;

	memcpy(a, data, n);
	a[n] = '\0';
	if (rr_checkpoint_step(a, &step)) {
		snprintf(digits, sizeof(digits), "%" PRIu64, step);
		S_CHECK(strstr(a, "step") || strstr(a, "checkpoint-") || strstr(a, "checkpoint_") ||
				strstr(a, "iter_"),
			"a step without a key");
		S_CHECK(step == 0 || strstr(a, digits), "a step number the name does not spell");
	} else {
		S_CHECK(step == 7, "a refused name changed the step");
	}
	/* the second half of the input as another name, to compare with */
	b = a + strlen(a) / 2;
	ca = rr_checkpoint_compare(a, 1000, b, 2000);
	cb = rr_checkpoint_compare(b, 2000, a, 1000);
	S_CHECK((ca > 0) == (cb < 0) && (ca == 0) == (cb == 0), "the order is not antisymmetric");

	if (rr_commit_rule_parse(a, &rule) == 0 &&
	    (rule.kind == RR_COMMIT_MARKER || rule.kind == RR_COMMIT_POINTER))
		S_CHECK(rule.name[0] && !strchr(rule.name, '/') && strcmp(rule.name, "..") != 0,
			"a rule names something other than a plain file");
	if (a[0] == '.' || a[0] == '\0')
		S_CHECK(rr_commit_is_temp_name(a), "a dot-name is not temporary");
	return 0;
}
