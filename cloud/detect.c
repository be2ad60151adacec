/* Which cloud is this? DMI strings first (no network, no delay), then one short round of
 * probes of the three metadata services in parallel. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rr/cloud.h"
#include "rr/env.h"
#include "rr/gce_metadata.h"

#define S_PROBE_TIMEOUT_MS 1000
#define S_AZURE_ASSET_TAG "7783-7084-3265-9085-8269-3286-77"

static void s_read_dmi(const char *dir, const char *name, char *out, size_t cap)
{
	char path[512];
	FILE *f;
	size_t n;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return;
	n = fread(out, 1, cap - 1, f);
	fclose(f);
	out[n] = '\0';
	while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = '\0';
}

static enum rr_cloud s_from_dmi(const char *dir, char *why, size_t why_len)
{
	char vendor[128], bios[128], product[128], version[128], tag[128];

	s_read_dmi(dir, "sys_vendor", vendor, sizeof(vendor));
	s_read_dmi(dir, "bios_vendor", bios, sizeof(bios));
	s_read_dmi(dir, "product_name", product, sizeof(product));
	s_read_dmi(dir, "product_version", version, sizeof(version));
	s_read_dmi(dir, "chassis_asset_tag", tag, sizeof(tag));
	if (strcmp(vendor, "Amazon EC2") == 0 || strcmp(bios, "Amazon EC2") == 0 ||
	    strcasestr(version, "amazon")) {
		snprintf(why, why_len, "DMI says Amazon EC2");
		return RR_CLOUD_AWS;
	}
	if (strcmp(vendor, "Google") == 0 || strcmp(product, "Google Compute Engine") == 0) {
		snprintf(why, why_len, "DMI says Google Compute Engine");
		return RR_CLOUD_GCP;
	}
	if (strcmp(tag, S_AZURE_ASSET_TAG) == 0) {
		snprintf(why, why_len, "DMI chassis asset tag is Azure's");
		return RR_CLOUD_AZURE;
	}
	return RR_CLOUD_NONE;
}

enum rr_cloud rr_cloud_detect(const struct rr_cloud_opts *o, const char *dmi_dir, char *why,
			      size_t why_len)
{
	static const struct rr_http_header aws_h[] = {
		{ "X-aws-ec2-metadata-token-ttl-seconds", "60" } };
	static const struct rr_http_header azure_h[] = { { "Metadata", "true" } };
	char scratch[1], urls[3][512], gcp_host[300];
	struct rr_http_request req[3];
	struct rr_http_response resp[3];
	struct rr_http_batch *b = NULL;
	enum rr_cloud found = RR_CLOUD_NONE;
	void *tag;
	int i;

	if (!why) {
		why = scratch;
		why_len = sizeof(scratch);
	}
	found = s_from_dmi(dmi_dir ? dmi_dir : "/sys/class/dmi/id", why, why_len);
	if (found != RR_CLOUD_NONE)
		return found;

	if (rr_gce_metadata_ping_base(gcp_host, sizeof(gcp_host)))
		snprintf(gcp_host, sizeof(gcp_host), "http://%s", RR_GCE_METADATA_IP);
	snprintf(urls[0], sizeof(urls[0]), "%s/latest/api/token",
		 o->endpoint ? o->endpoint
		 : rr_env("AWS_EC2_METADATA_SERVICE_ENDPOINT") ? rr_env("AWS_EC2_METADATA_SERVICE_ENDPOINT")
							      : "http://169.254.169.254");
	snprintf(urls[1], sizeof(urls[1]), "%s/computeMetadata/v1/instance/id",
		 o->endpoint ? o->endpoint : gcp_host);
	snprintf(urls[2], sizeof(urls[2]), "%s/metadata/instance?api-version=2021-02-01",
		 o->endpoint ? o->endpoint : "http://169.254.169.254");
	req[0] = (struct rr_http_request){ .method = "PUT", .url = urls[0], .headers = aws_h,
					   .nheaders = 1, .body = "", .body_len = 0 };
	req[1] = (struct rr_http_request){ .method = "GET", .url = urls[1],
					   .headers = &rr_gce_metadata_flavor,
					   .nheaders = 1 };
	req[2] = (struct rr_http_request){ .method = "GET", .url = urls[2], .headers = azure_h,
					   .nheaders = 1 };
	if (rr_http_batch_new(o->http, 3, &b) != 0) {
		snprintf(why, why_len, "out of memory for the probes");
		return RR_CLOUD_NONE;
	}
	for (i = 0; i < 3; i++) {
		req[i].timeout_ms = S_PROBE_TIMEOUT_MS;
		req[i].response_max = 64u << 10;
		req[i].cancel = o->stop;
		rr_http_response_init(&resp[i]);
		rr_http_batch_add(b, &req[i], &resp[i], &resp[i]);
	}
	while (rr_http_batch_wait(b, -1, &tag) == 1) {
		const struct rr_http_response *r = tag;
		if (found != RR_CLOUD_NONE || r->status != 200)
			continue;
		if (r == &resp[0] && r->body.len > 0) {
			found = RR_CLOUD_AWS;
			snprintf(why, why_len, "an IMDSv2 token came from %s", urls[0]);
		} else if (r == &resp[1] && rr_gce_metadata_answered(r)) {
			found = RR_CLOUD_GCP;
			snprintf(why, why_len, "the GCP metadata server answered at %s",
				 urls[1]);
		} else if (r == &resp[2] && r->body.data &&
			   strstr((const char *)r->body.data, "\"compute\"")) {
			found = RR_CLOUD_AZURE;
			snprintf(why, why_len,
				 "the Azure instance metadata service answered at %s",
				 urls[2]);
		}
	}
	rr_http_batch_destroy(b);
	for (i = 0; i < 3; i++)
		rr_http_response_free(&resp[i]);
	if (found == RR_CLOUD_NONE)
		snprintf(why, why_len, "no cloud in DMI and no metadata service answered%s%s",
			 o->endpoint ? " at " : "", o->endpoint ? o->endpoint : "");
	return found;
}
