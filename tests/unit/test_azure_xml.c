/* Azure Blob Storage's XML: List Blobs pages, error documents, the Put Block List body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "azure_xml.h"
#include "cunit_main.h"
#include "rr/buf.h"
#include "rr/error.h"

/* The shape of "List Blobs" (learn.microsoft.com/rest/api/storageservices/list-blobs). */
static const char s_page[] =
	"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"utf-8\"?>"
	"<EnumerationResults ServiceEndpoint=\"http://127.0.0.1:10000/devstoreaccount1\" "
	"ContainerName=\"ckpt\"><Prefix>runs/</Prefix><MaxResults>2</MaxResults><Blobs>"
	"<Blob><Name>runs/a &amp; b</Name><Properties><Creation-Time>Mon, 02 Nov 2026 10:00:00 GMT"
	"</Creation-Time><Last-Modified>Mon, 02 Nov 2026 10:00:01 GMT</Last-Modified>"
	"<Etag>0x8DC</Etag><Content-Length>12</Content-Length><BlobType>BlockBlob</BlobType>"
	"</Properties><OrMetadata /></Blob>"
	"<Blob><Name>runs/c</Name><Properties><Last-Modified>Thu, 01 Jan 1970 00:00:00 GMT"
	"</Last-Modified><Content-Length>0</Content-Length></Properties></Blob>"
	"</Blobs><NextMarker>2!84!MDAw</NextMarker></EnumerationResults>";

struct s_seen {
	int n;
	char names[4][64];
	unsigned long long sizes[4];
	long long mtimes[4];
};

static int s_collect(const struct rr_azure_blob *b, void *ud)
{
	struct s_seen *s = ud;

	if (s->n == 4)
		return 99;
	snprintf(s->names[s->n], sizeof(s->names[0]), "%s", b->name);
	s->sizes[s->n] = b->size;
	s->mtimes[s->n] = b->mtime_unix_ms;
	s->n++;
	return 0;
}

static void test_list_page_reads_blobs_and_next_marker(void)
{
	struct s_seen s = { 0 };
	char marker[64];

	CU_ASSERT_EQUAL(rr_azure_xml_parse_list(s_page, strlen(s_page), s_collect, &s, marker,
						sizeof(marker)), 0);
	CU_ASSERT_EQUAL(s.n, 2);
	CU_ASSERT_STRING_EQUAL(s.names[0], "runs/a & b");
	CU_ASSERT_EQUAL(s.sizes[0], 12);
	CU_ASSERT_EQUAL(s.mtimes[0], 1793613601000LL);
	CU_ASSERT_STRING_EQUAL(s.names[1], "runs/c");
	CU_ASSERT_EQUAL(s.mtimes[1], 0);
	CU_ASSERT_STRING_EQUAL(marker, "2!84!MDAw");
}

/* A cut page, an entry without its size, and a bad date: nothing is reported at all. */
static void test_list_page_refuses_cut_or_incomplete_pages_before_any_callback(void)
{
	const char *nosize = "<EnumerationResults><Blobs><Blob><Name>a</Name><Properties>"
			     "<Last-Modified>Mon, 02 Nov 2026 10:00:01 GMT</Last-Modified>"
			     "</Properties></Blob></Blobs><NextMarker/></EnumerationResults>";
	const char *baddate = "<EnumerationResults><Blobs><Blob><Name>a</Name><Properties>"
			      "<Last-Modified>yesterday</Last-Modified><Content-Length>1"
			      "</Content-Length></Properties></Blob></Blobs></EnumerationResults>";
	struct s_seen s = { 0 };
	char marker[64];

	CU_ASSERT_EQUAL(rr_azure_xml_parse_list(s_page, strlen(s_page) - 30, s_collect, &s,
						marker, sizeof(marker)), RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_azure_xml_parse_list(nosize, strlen(nosize), s_collect, &s, marker,
						sizeof(marker)), RR_ECORRUPT);
	CU_ASSERT_EQUAL(rr_azure_xml_parse_list(baddate, strlen(baddate), s_collect, &s, marker,
						sizeof(marker)), RR_ECORRUPT);
	CU_ASSERT_EQUAL(s.n, 0);
	CU_ASSERT_EQUAL(marker[0], '\0');
	/* a marker longer than the caller's buffer is refused, never cut */
	CU_ASSERT_EQUAL(rr_azure_xml_parse_list(s_page, strlen(s_page), NULL, NULL, marker, 4),
			RR_ECORRUPT);
}

static void test_error_document_reads_code_and_message(void)
{
	const char *doc = "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ServerBusy"
			  "</Code><Message>Ingress is over the account limit.\nRequestId:1\n"
			  "</Message></Error>";
	struct rr_azure_error e;

	CU_ASSERT_EQUAL(rr_azure_xml_parse_error(doc, strlen(doc), &e), 0);
	CU_ASSERT_STRING_EQUAL(e.code, "ServerBusy");
	CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "Ingress"));
	CU_ASSERT_EQUAL(rr_azure_xml_parse_error("<html>busy</html>", 17, &e), RR_ENOENT);
	CU_ASSERT_EQUAL(e.code[0], '\0');
	CU_ASSERT_EQUAL(rr_azure_xml_parse_error("not xml", 7, &e), RR_ECORRUPT);
}

static void test_block_list_body_lists_ids_in_order(void)
{
	const char *ids[] = { "QUFB", "QkJC" };
	struct rr_buf b;

	rr_buf_init(&b, 4096);
	CU_ASSERT_EQUAL(rr_azure_xml_block_list(&b, ids, 2), 0);
	CU_ASSERT_STRING_EQUAL((const char *)b.data,
			       "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>"
			       "<Latest>QUFB</Latest><Latest>QkJC</Latest></BlockList>");
	CU_ASSERT_EQUAL(rr_azure_xml_block_list(&b, ids, 0), RR_EINVAL);
	rr_buf_free(&b);
}

static CU_TestInfo s_tests[] = {
	{ "test_list_page_reads_blobs_and_next_marker",
	  test_list_page_reads_blobs_and_next_marker },
	{ "test_list_page_refuses_cut_or_incomplete_pages_before_any_callback",
	  test_list_page_refuses_cut_or_incomplete_pages_before_any_callback },
	{ "test_error_document_reads_code_and_message",
	  test_error_document_reads_code_and_message },
	{ "test_block_list_body_lists_ids_in_order", test_block_list_body_lists_ids_in_order },
	CU_TEST_INFO_NULL,
};

RR_CUNIT_MAIN("azure_xml", s_tests)
