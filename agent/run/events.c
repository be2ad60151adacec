#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rr/clock.h"
#include "rr/error.h"
#include "events.h"
#include "rr/layout.h"

const char *rr_hostname(void)
{
	static char name[256];
	if (!name[0] && gethostname(name, sizeof(name) - 1) != 0)
		strcpy(name, "unknown");
	return name;
}

cJSON *rr_event_exit(const char *how, int exit_status, int trainer_status, unsigned restarts,
		     const char *checkpoint, int64_t started_unix_ms)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "how", how);
	cJSON_AddNumberToObject(o, "exit_status", exit_status);
	cJSON_AddNumberToObject(o, "trainer_exit_status", trainer_status);
	cJSON_AddNumberToObject(o, "restarts", restarts);
	if (checkpoint && checkpoint[0])
		cJSON_AddStringToObject(o, "checkpoint", checkpoint);
	cJSON_AddNumberToObject(o, "started_unix_ms", (double)started_unix_ms);
	return o;
}

int rr_event_record(struct rr_store *s, const char *run_id, const char *kind, cJSON *fields)
{
	cJSON *o = fields ? fields : cJSON_CreateObject();
	int64_t ms = rr_wall_ms();
	char key[RR_KEY_MAX];
	char *text = NULL;
	int rc = RR_ENOMEM;

	if (!o)
		return RR_ENOMEM;
	if (!cJSON_AddStringToObject(o, "kind", kind) ||
	    !cJSON_AddNumberToObject(o, "unix_ms", (double)ms) ||
	    !cJSON_AddStringToObject(o, "run_id", run_id) ||
	    !cJSON_AddStringToObject(o, "host", rr_hostname()) ||
	    !cJSON_AddNumberToObject(o, "pid", (double)getpid()))
		goto out;
	text = cJSON_PrintUnformatted(o);
	if (!text)
		goto out;
	/* Two events of one kind in the same millisecond: the later takes the next one. */
	for (int tries = 0; tries < 16; tries++, ms++) {
		rc = rr_key_event(key, run_id, ms, kind);
		if (!rc)
			rc = rr_store_put(s, key, text, strlen(text),
					  &(struct rr_put_opts){ .if_none_match = 1 }, NULL);
		if (rc != RR_EEXIST)
			break;
	}
out:
	free(text);
	cJSON_Delete(o);
	return rc;
}
