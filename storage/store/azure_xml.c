/* Azure Blob Storage's XML (storage/store/azure_xml.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "azure_xml.h"
#include "rr/buf.h"
#include "rr/error.h"
#include "rr/timefmt.h"
#include "rr/xml.h"

#define S_NUM_CAP 24
#define S_TIME_CAP 64
#define S_MAX_BLOCKS 50000 /* Azure's limit on the blocks of one blob */

int rr_azure_xml_parse_error(const void *xml, size_t len, struct rr_azure_error *out)
{
	struct rr_xml_field f[2];
	struct rr_xml_doc d;
	int rc;

	if (!out)
		return RR_EINVAL;
	memset(out, 0, sizeof(*out));
	f[0] = (struct rr_xml_field){ "Error/Code", out->code, sizeof(out->code), 0 };
	f[1] = (struct rr_xml_field){ "Error/Message", out->message, sizeof(out->message), 0 };
	rr_xml_doc_init(&d, f, 2, NULL, NULL);
	rc = rr_xml_parse(&d, xml, len);
	if (!rc && strcmp(d.root, "Error") != 0)
		rc = RR_ENOENT;
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

#define S_BLOB "EnumerationResults/Blobs/Blob"

enum { S_L_MARKER, S_L_NAME, S_L_SIZE, S_L_MTIME, S_L_N };

struct s_list {
	rr_azure_blob_cb cb; /* NULL while checking the whole page first */
	void *ud;
	char name[RR_AZURE_NAME_MAX + 1];
	char size[S_NUM_CAP];
	char mtime[S_TIME_CAP];
};

static int s_list_element(struct rr_xml_doc *d, int start)
{
	struct s_list *l = d->ud;
	struct rr_xml_field *f = d->fields;
	struct rr_azure_blob b;
	int64_t s;

	if (strcmp(d->path, S_BLOB) != 0)
		return 0;
	if (start) {
		rr_xml_fields_reset(f + S_L_NAME, S_L_N - S_L_NAME);
		return 0;
	}
	/* an entry without its name, size or time would be a guess, not a listing */
	if (!l->name[0] || !f[S_L_SIZE].seen || !f[S_L_MTIME].seen)
		return RR_ECORRUPT;
	b.name = l->name;
	if (rr_xml_parse_u64(l->size, &b.size) || rr_rfc1123_to_unix(l->mtime, &s))
		return RR_ECORRUPT;
	b.mtime_unix_ms = s * 1000;
	return l->cb ? l->cb(&b, l->ud) : 0;
}

static int s_list_pass(struct s_list *l, const void *xml, size_t len, char *marker, size_t cap)
{
	struct rr_xml_field f[S_L_N] = {
		[S_L_MARKER] = { "EnumerationResults/NextMarker", marker, cap, 0 },
		[S_L_NAME] = { S_BLOB "/Name", l->name, sizeof(l->name), 0 },
		[S_L_SIZE] = { S_BLOB "/Properties/Content-Length", l->size, sizeof(l->size), 0 },
		[S_L_MTIME] = { S_BLOB "/Properties/Last-Modified", l->mtime, sizeof(l->mtime),
				0 },
	};
	struct rr_xml_doc d;
	int rc;

	rr_xml_doc_init(&d, f, S_L_N, s_list_element, l);
	rc = rr_xml_parse(&d, xml, len);
	if (!rc && strcmp(d.root, "EnumerationResults") != 0)
		rc = RR_ECORRUPT;
	return rc;
}

int rr_azure_xml_parse_list(const void *xml, size_t len, rr_azure_blob_cb cb, void *ud,
			    char *next_marker, size_t cap)
{
	struct s_list l;
	int rc;

	if (!next_marker || !cap)
		return RR_EINVAL;
	/* The whole page is checked before the first callback, so a caller never acts on
	 * the entries of a page that turns out cut or malformed further on. */
	memset(&l, 0, sizeof(l));
	rc = s_list_pass(&l, xml, len, next_marker, cap);
	if (!rc && cb) {
		l.cb = cb;
		l.ud = ud;
		rc = s_list_pass(&l, xml, len, next_marker, cap);
	}
	if (rc)
		next_marker[0] = '\0';
	return rc;
}

int rr_azure_xml_block_list(struct rr_buf *out, const char *const *ids, size_t n)
{
	int rc;

	if (!out || !ids || n == 0 || n > S_MAX_BLOCKS)
		return RR_EINVAL;
	rr_buf_reset(out);
	rc = rr_buf_printf(out, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
	for (size_t i = 0; i < n && !rc; i++) {
		if (!ids[i] || !ids[i][0])
			rc = RR_EINVAL;
		if (!rc)
			rc = rr_buf_printf(out, "<Latest>");
		if (!rc)
			rc = rr_xml_escape(out, ids[i], strlen(ids[i]));
		if (!rc)
			rc = rr_buf_printf(out, "</Latest>");
	}
	if (!rc)
		rc = rr_buf_printf(out, "</BlockList>");
	if (rc)
		rr_buf_reset(out);
	return rc;
}
