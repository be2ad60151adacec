/* Blob Batch: the multipart/mixed body of Delete Blob sub-requests and the reading of the
 * answer (the shapes of Microsoft's "Blob Batch" page and of Azurite 3.37's answers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azure_batch.h"
#include "cunit_main.h"
#include "rr/buf.h"
#include "rr/error.h"

static void test_body_has_one_part_per_sub_request(void)
{
	struct rr_azure_batch_sub subs[2] = {
		{ "/acct/c/a%20b", "Mon, 02 Nov 2026 10:00:00 GMT", "SharedKey acct:c2ln" },
		{ "/acct/c/d?sv=1&sig=x", "Mon, 02 Nov 2026 10:00:00 GMT", NULL },
	};
	struct rr_buf b;

	rr_buf_init(&b, 1 << 16);
	CU_ASSERT_EQUAL_FATAL(rr_azure_batch_body(&b, "batch_x1", subs, 2), 0);
	CU_ASSERT_STRING_EQUAL((const char *)b.data,
			       "--batch_x1\r\nContent-Type: application/http\r\n"
			       "Content-Transfer-Encoding: binary\r\nContent-ID: 0\r\n\r\n"
			       "DELETE /acct/c/a%20b HTTP/1.1\r\n"
			       "x-ms-date: Mon, 02 Nov 2026 10:00:00 GMT\r\n"
			       "Authorization: SharedKey acct:c2ln\r\nContent-Length: 0\r\n\r\n"
			       "--batch_x1\r\nContent-Type: application/http\r\n"
			       "Content-Transfer-Encoding: binary\r\nContent-ID: 1\r\n\r\n"
			       "DELETE /acct/c/d?sv=1&sig=x HTTP/1.1\r\n"
			       "x-ms-date: Mon, 02 Nov 2026 10:00:00 GMT\r\n"
			       "Content-Length: 0\r\n\r\n--batch_x1--\r\n");
	/* No line break may reach a header; no empty or oversized batch. */
	subs[0].auth = "SharedKey a:b\r\nx-evil: 1";
	CU_ASSERT_EQUAL(rr_azure_batch_body(&b, "batch_x1", subs, 2), RR_EINVAL);
	subs[0].auth = NULL;
	subs[0].target = "relative";
	CU_ASSERT_EQUAL(rr_azure_batch_body(&b, "batch_x1", subs, 1), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_azure_batch_body(&b, "batch_x1", subs, 0), RR_EINVAL);
	CU_ASSERT_EQUAL(rr_azure_batch_body(&b, "batch_x1", subs, RR_AZURE_BATCH_MAX + 1),
			RR_EINVAL);
	rr_buf_free(&b);
}

static void test_boundary_from_content_type(void)
{
	char b[RR_AZURE_BOUNDARY_MAX + 1];

	CU_ASSERT_EQUAL(rr_azure_batch_boundary("multipart/mixed; boundary=batchresponse_66925647-"
						"d0cb-4109-b6d3-28efe3e1e5ed", b, sizeof(b)), 0);
	CU_ASSERT_STRING_EQUAL(b, "batchresponse_66925647-d0cb-4109-b6d3-28efe3e1e5ed");
	CU_ASSERT_EQUAL(rr_azure_batch_boundary("Multipart/Mixed;charset=x; BOUNDARY=\"a_b\"", b,
						sizeof(b)), 0);
	CU_ASSERT_STRING_EQUAL(b, "a_b");
	CU_ASSERT_EQUAL(rr_azure_batch_boundary("application/xml", b, sizeof(b)), RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_azure_batch_boundary("multipart/mixed", b, sizeof(b)), RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_azure_batch_boundary("multipart/mixed; boundary=", b, sizeof(b)),
			RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_azure_batch_boundary("multipart/mixed; boundary=\"open", b, sizeof(b)),
			RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_azure_batch_boundary("multipart/mixed; boundary=a<b", b, sizeof(b)),
			RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_azure_batch_boundary("multipart/mixed; boundary=aaaaaaaaaaaaaaaaaaaa"
						"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
						"aaaaaaaaa", b, sizeof(b)), RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_azure_batch_boundary(NULL, b, sizeof(b)), RR_ECORRUPT);
}

/* Azurite's answer to three deletes: the first gone, the second not found, the third refused
 * with an XML body (which holds the delimiter's dashes but not the delimiter). */
static const char s_answer[] =
	"--batchresponse_1\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\n"
	"HTTP/1.1 404 The specified blob does not exist.\r\nx-ms-error-code: BlobNotFound\r\n"
	"x-ms-request-id: r2\r\n\r\n"
	"--batchresponse_1\r\nContent-Type: application/http\r\nContent-ID: 0\r\n\r\n"
	"HTTP/1.1 202 Accepted\r\nx-ms-delete-type-permanent: true\r\nx-ms-request-id: r1\r\n"
	"x-ms-version: 2021-08-06\r\n\r\n"
	"--batchresponse_1\r\nContent-Type: application/http\r\nContent-ID: 2\r\n\r\n"
	"HTTP/1.1 403 This request is not authorized.\r\n"
	"x-ms-error-code: AuthorizationPermissionMismatch\r\nContent-Type: application/xml\r\n\r\n"
	"<?xml version=\"1.0\"?><Error><Code>--batchresponse</Code></Error>\r\n\r\n"
	"--batchresponse_1--";

static void test_answer_gives_each_sub_request_its_status(void)
{
	int st[3] = { 0, 0, 0 };
	char code[3][64] = { "", "", "" };

	CU_ASSERT_EQUAL(rr_azure_batch_parse(s_answer, strlen(s_answer), "batchresponse_1", st,
					     code, 3), 3);
	CU_ASSERT_EQUAL(st[0], 202);
	CU_ASSERT_EQUAL(st[1], 404);
	CU_ASSERT_EQUAL(st[2], 403);
	CU_ASSERT_STRING_EQUAL(code[0], "");
	CU_ASSERT_STRING_EQUAL(code[1], "BlobNotFound");
	CU_ASSERT_STRING_EQUAL(code[2], "AuthorizationPermissionMismatch");
	/* Fewer sub-requests than parts: a Content-ID beyond them is not anyone's. */
	memset(st, 0, sizeof(st));
	CU_ASSERT_EQUAL(rr_azure_batch_parse(s_answer, strlen(s_answer), "batchresponse_1", st,
					     NULL, 2), 2);
	CU_ASSERT_EQUAL(st[2], 0);
}

static void test_answer_parts_that_cannot_be_attributed_stay_unknown(void)
{
	/* Azurite's answer to a batch it could not parse: one part, no Content-ID. */
	const char *whole = "--b\r\nContent-Type: application/http\r\n\r\n"
			    "HTTP/1.1 400 One of the request inputs is not valid.\r\n"
			    "x-ms-error-code: InvalidInput\r\n\r\n--b--";
	/* The same Content-ID twice, a bad one, a part cut before its status line. */
	const char *odd = "--b\r\nContent-ID: 0\r\n\r\nHTTP/1.1 202 Accepted\r\n\r\n"
			  "--b\r\nContent-ID: 0\r\n\r\nHTTP/1.1 500 Busy\r\n\r\n"
			  "--b\r\nContent-ID: 1x\r\n\r\nHTTP/1.1 202 Accepted\r\n\r\n"
			  "--b\r\nContent-ID: 00001\r\n\r\nHTTP/1.1 2x2 Accepted\r\n\r\n"
			  "--b\r\nContent-ID: 2\r\n\r\nHTTP/1.1 202\r\n\r\n"
			  "--b\r\nContent-ID: 3\r\n\r\nHTTP/1.1";
	int st[4] = { 0, 0, 0, 0 };

	CU_ASSERT_EQUAL(rr_azure_batch_parse(whole, strlen(whole), "b", st, NULL, 4), 0);
	CU_ASSERT_EQUAL(st[0] | st[1] | st[2] | st[3], 0);
	CU_ASSERT_EQUAL(rr_azure_batch_parse(odd, strlen(odd), "b", st, NULL, 4), 1);
	CU_ASSERT_EQUAL(st[0], 0); /* two answers: neither counts */
	CU_ASSERT_EQUAL(st[1], 0);
	CU_ASSERT_EQUAL(st[2], 202); /* a status line without a reason phrase */
	CU_ASSERT_EQUAL(st[3], 0);
	/* No delimiter at all (an error document instead), or another boundary. */
	CU_ASSERT_EQUAL(rr_azure_batch_parse("<Error/>", 8, "b", st, NULL, 4), RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_azure_batch_parse(s_answer, strlen(s_answer), "batchresponse_2", st,
					     NULL, 3), RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_azure_batch_parse(s_answer, strlen(s_answer), "", st, NULL, 3),
			RR_ECORRUPT);
}

static CU_TestInfo s_tests[] = {
	{ "test_body_has_one_part_per_sub_request", test_body_has_one_part_per_sub_request },
	{ "test_boundary_from_content_type", test_boundary_from_content_type },
	{ "test_answer_gives_each_sub_request_its_status",
	  test_answer_gives_each_sub_request_its_status },
	{ "test_answer_parts_that_cannot_be_attributed_stay_unknown",
	  test_answer_parts_that_cannot_be_attributed_stay_unknown },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("azure_batch", s_tests)
