/* CUnit suite "cloud_detect": rr_cloud_detect (cloud/detect.c). The DMI strings come from a
 * temporary directory laid out like /sys/class/dmi/id; the metadata services are played by
 * the in-process HTTP server (http_fixture.h), which every probe reaches through
 * opts.endpoint: the IMDSv2 token PUT (AWS), GET /computeMetadata/v1/instance/id answered
 * with Metadata-Flavor: Google (GCP), and the instance document (Azure). Whatever the
 * server is not playing gets a 404. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rr/clock.h"
#include "rr/cloud.h"
#include "rr/error.h"
#include "rr/http.h"

#include "cunit_main.h"
#include "http_fixture.h"

#define S_AZURE_TAG "7783-7084-3265-9085-8269-3286-77"

static const char *const s_dmi_files[] = { "sys_vendor", "bios_vendor", "product_name",
					   "product_version", "chassis_asset_tag" };
#define S_NDMI (sizeof(s_dmi_files) / sizeof(s_dmi_files[0]))

/* What the fixture plays. Set before the probes run, read by the server's threads. */
enum s_role { S_NOTHING, S_AWS, S_GCP, S_GCP_NO_FLAVOR, S_AZURE, S_HANG };

static void s_handler(const struct fx_request *req, struct fx_response *resp, void *ud)
{
	const enum s_role *role = ud;
	const char *h;

	switch (*role) {
	case S_AWS:
		if (strcmp(req->method, "PUT") == 0 &&
		    strcmp(req->target, "/latest/api/token") == 0 &&
		    fx_header(req, "X-aws-ec2-metadata-token-ttl-seconds")) {
			fx_resp_text(resp, 200, "AQAEAKbJ-token==");
			return;
		}
		break;
	case S_GCP:
	case S_GCP_NO_FLAVOR:
		h = fx_header(req, "Metadata-Flavor");
		if (strcmp(req->method, "GET") == 0 &&
		    strcmp(req->target, "/computeMetadata/v1/instance/id") == 0 && h &&
		    strcmp(h, "Google") == 0) {
			if (*role == S_GCP)
				fx_resp_header(resp, "Metadata-Flavor", "Google");
			fx_resp_text(resp, 200, "4520031799277581759");
			return;
		}
		break;
	case S_AZURE:
		h = fx_header(req, "Metadata");
		if (strcmp(req->method, "GET") == 0 &&
		    strncmp(req->target, "/metadata/instance?api-version=", 31) == 0 && h &&
		    strcmp(h, "true") == 0) {
			fx_resp_text(resp, 200, "{\"compute\":{\"vmId\":\"02aab8a4\","
						"\"vmSize\":\"Standard_D2s_v3\"},\"network\":{}}");
			return;
		}
		break;
	case S_HANG:
		resp->delay_ms = 30000; /* cut short by fx_server_stop */
		return;
	case S_NOTHING:
		break;
	}
	fx_resp_text(resp, 404, "");
}

struct s_env {
	enum s_role role;
	struct fx_server srv;
	struct rr_http *http;
	struct rr_cloud_opts o;
	char dmi[64];
	char why[512];
};

/* A DMI directory with the given strings (NULL: no such file), each ending in a newline as
 * the kernel writes them. */
static void s_setup_dmi(struct s_env *e, const char *vendor, const char *bios,
			const char *product, const char *version, const char *tag)
{
	const char *values[S_NDMI] = { vendor, bios, product, version, tag };

	memset(e, 0, sizeof(*e));
	snprintf(e->dmi, sizeof(e->dmi), "/tmp/rr_test_dmi_XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(e->dmi));
	for (size_t i = 0; i < S_NDMI; i++) {
		char path[128];
		FILE *f;
		if (!values[i])
			continue;
		snprintf(path, sizeof(path), "%s/%s", e->dmi, s_dmi_files[i]);
		f = fopen(path, "w");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fprintf(f, "%s\n", values[i]);
		fclose(f);
	}
	CU_ASSERT_EQUAL_FATAL(fx_server_start(&e->srv, s_handler, &e->role), 0);
	CU_ASSERT_EQUAL_FATAL(rr_http_new(NULL, &e->http), 0);
	e->o.http = e->http;
	e->o.endpoint = e->srv.url;
}

/* An empty DMI directory and a server playing role. */
static void s_setup(struct s_env *e, enum s_role role)
{
	s_setup_dmi(e, NULL, NULL, NULL, NULL, NULL);
	e->role = role;
}

static void s_teardown(struct s_env *e)
{
	rr_http_destroy(e->http);
	fx_server_stop(&e->srv);
	for (size_t i = 0; i < S_NDMI; i++) {
		char path[128];
		snprintf(path, sizeof(path), "%s/%s", e->dmi, s_dmi_files[i]);
		unlink(path);
	}
	rmdir(e->dmi);
}

static enum rr_cloud s_detect(struct s_env *e)
{
	e->why[0] = '\0';
	return rr_cloud_detect(&e->o, e->dmi, e->why, sizeof(e->why));
}

static void test_detect_dmi_amazon_ec2_is_aws_without_a_request(void)
{
	struct s_env e;

	s_setup_dmi(&e, "Amazon EC2", "Amazon EC2", "m5.large", NULL, NULL);
	e.role = S_GCP; /* the server would say otherwise, if it were asked */
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_AWS);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "DMI"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_detect_dmi_google_is_gcp_without_a_request(void)
{
	struct s_env e;

	s_setup_dmi(&e, "Google", "Google", "Google Compute Engine", NULL, NULL);
	e.role = S_AWS;
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_GCP);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "DMI"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_detect_dmi_azure_asset_tag_is_azure_without_a_request(void)
{
	struct s_env e;

	s_setup_dmi(&e, "Microsoft Corporation", "Microsoft Corporation", "Virtual Machine",
		    "7.0", S_AZURE_TAG);
	e.role = S_AWS;
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_AZURE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "DMI"));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 0);
	s_teardown(&e);
}

static void test_detect_imdsv2_token_answer_is_aws(void)
{
	struct s_env e;

	s_setup(&e, S_AWS);
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_AWS);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "IMDSv2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, e.srv.url));
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "PUT", "/latest/api/token"), 1);
	s_teardown(&e);
}

static void test_detect_metadata_flavor_google_answer_is_gcp(void)
{
	struct s_env e;

	s_setup(&e, S_GCP);
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_GCP);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "GCP"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, e.srv.url));
	s_teardown(&e);
}

/* Without an endpoint: GCP is asked by address (GCE_METADATA_IP), as google-auth pings it,
 * never through the name metadata.google.internal, whose lookup a machine elsewhere with a
 * silent DNS server waits 10 s for; GCE_METADATA_HOST, when set, is asked instead. */
static void test_detect_asks_gcp_by_address_unless_gce_metadata_host_is_set(void)
{
	struct s_env e;
	const char *hostport;

	s_setup(&e, S_GCP);
	hostport = e.srv.url + strlen("http://");
	e.o.endpoint = NULL;
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", e.srv.url, 1); /* not the real address */
	unsetenv("GCE_METADATA_HOST");
	setenv("GCE_METADATA_IP", hostport, 1);
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_GCP);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, e.srv.url));
	/* GCE_METADATA_HOST wins over the address (here a closed port). */
	setenv("GCE_METADATA_HOST", hostport, 1);
	setenv("GCE_METADATA_IP", "127.0.0.1:1", 1);
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_GCP);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, e.srv.url));
	unsetenv("GCE_METADATA_HOST");
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_NONE);
	unsetenv("GCE_METADATA_IP");
	unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	s_teardown(&e);
}

static void test_detect_gcp_answer_without_metadata_flavor_is_none(void)
{
	struct s_env e;

	s_setup(&e, S_GCP_NO_FLAVOR);
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_NONE);
	CU_ASSERT_EQUAL(fx_server_count(&e.srv, "GET", "/computeMetadata/v1/instance/id"), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "no metadata service answered"));
	s_teardown(&e);
}

static void test_detect_azure_instance_document_is_azure(void)
{
	struct s_env e;

	s_setup(&e, S_AZURE);
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_AZURE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "Azure"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, e.srv.url));
	s_teardown(&e);
}

static void test_detect_nothing_answering_is_none_with_why(void)
{
	struct s_env e;

	s_setup(&e, S_NOTHING);
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_NONE);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "no cloud in DMI"));
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, e.srv.url));
	CU_ASSERT_EQUAL(fx_server_nrequests(&e.srv), 3); /* one probe per cloud */
	s_teardown(&e);
}

static void test_detect_closed_port_is_none_quickly(void)
{
	struct s_env e;
	char url[64];
	int64_t t0;
	int port = fx_closed_port();

	CU_ASSERT_FATAL(port > 0);
	s_setup(&e, S_NOTHING);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	e.o.endpoint = url;
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_NONE);
	CU_ASSERT(rr_mono_ms() - t0 < 5000);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, url));
	s_teardown(&e);
}

static void test_detect_hanging_server_is_none_within_the_probe_timeout(void)
{
	struct s_env e;
	int64_t t0;

	s_setup(&e, S_HANG);
	t0 = rr_mono_ms();
	CU_ASSERT_EQUAL(s_detect(&e), RR_CLOUD_NONE);
	CU_ASSERT(rr_mono_ms() - t0 < 5000);
	CU_ASSERT_PTR_NOT_NULL(strstr(e.why, "no metadata service answered"));
	s_teardown(&e);
}

static void test_detect_why_may_be_null(void)
{
	struct s_env e;

	s_setup_dmi(&e, "Amazon EC2", NULL, NULL, NULL, NULL);
	CU_ASSERT_EQUAL(rr_cloud_detect(&e.o, e.dmi, NULL, 0), RR_CLOUD_AWS);
	s_teardown(&e);
	s_setup(&e, S_NOTHING);
	CU_ASSERT_EQUAL(rr_cloud_detect(&e.o, e.dmi, NULL, 0), RR_CLOUD_NONE);
	s_teardown(&e);
}

static CU_TestInfo s_tests[] = {
	{ "detect_dmi_amazon_ec2_is_aws_without_a_request",
	  test_detect_dmi_amazon_ec2_is_aws_without_a_request },
	{ "detect_dmi_google_is_gcp_without_a_request",
	  test_detect_dmi_google_is_gcp_without_a_request },
	{ "detect_dmi_azure_asset_tag_is_azure_without_a_request",
	  test_detect_dmi_azure_asset_tag_is_azure_without_a_request },
	{ "detect_imdsv2_token_answer_is_aws", test_detect_imdsv2_token_answer_is_aws },
	{ "detect_metadata_flavor_google_answer_is_gcp",
	  test_detect_metadata_flavor_google_answer_is_gcp },
	{ "detect_asks_gcp_by_address_unless_gce_metadata_host_is_set",
	  test_detect_asks_gcp_by_address_unless_gce_metadata_host_is_set },
	{ "detect_gcp_answer_without_metadata_flavor_is_none",
	  test_detect_gcp_answer_without_metadata_flavor_is_none },
	{ "detect_azure_instance_document_is_azure", test_detect_azure_instance_document_is_azure },
	{ "detect_nothing_answering_is_none_with_why",
	  test_detect_nothing_answering_is_none_with_why },
	{ "detect_closed_port_is_none_quickly", test_detect_closed_port_is_none_quickly },
	{ "detect_hanging_server_is_none_within_the_probe_timeout",
	  test_detect_hanging_server_is_none_within_the_probe_timeout },
	{ "detect_why_may_be_null", test_detect_why_may_be_null },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("cloud_detect", s_tests)
