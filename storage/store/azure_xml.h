/* Azure Blob Storage's XML (storage/store/azure_xml.c), private to storage/store: List Blobs
 * pages and error documents read with the engine of rr/xml.h (bounded fields named by
 * their path, no DOCTYPE, a size ceiling), and the Put Block List body written with its
 * escaping. Over-long values are RR_ECORRUPT, never cut. */
#ifndef RR_AZURE_XML_H
#define RR_AZURE_XML_H

#include <stddef.h>
#include <stdint.h>

#include "rr/buf.h"

#define RR_AZURE_NAME_MAX 1024   /* a blob name, in bytes */
#define RR_AZURE_MARKER_MAX 2048

struct rr_azure_error {
	char code[64];     /* e.g. "AuthenticationFailed", "ServerBusy", "BlobNotFound" */
	char message[512];
};

/* An <Error> document: 0 with the fields filled, RR_ENOENT when the root is something
 * else, RR_ECORRUPT when it is not well-formed XML. */
int rr_azure_xml_parse_error(const void *xml, size_t len, struct rr_azure_error *out);

struct rr_azure_blob {
	const char *name;       /* valid only during the callback */
	uint64_t size;          /* Properties/Content-Length */
	int64_t mtime_unix_ms;  /* Properties/Last-Modified (RFC 1123) */
};
typedef int (*rr_azure_blob_cb)(const struct rr_azure_blob *b, void *ud);

/* One <EnumerationResults> page of List Blobs: cb for each Blobs/Blob in order (the whole
 * page is checked before the first callback); next_marker (cap bytes) from NextMarker, ""
 * on the last page. Returns 0, RR_ECORRUPT, RR_ETOOBIG, or cb's nonzero value. */
int rr_azure_xml_parse_list(const void *xml, size_t len, rr_azure_blob_cb cb, void *ud,
			    char *next_marker, size_t cap);

/* <BlockList><Latest>id</Latest>...</BlockList> for n block ids. Replaces out's contents. */
int rr_azure_xml_block_list(struct rr_buf *out, const char *const *ids, size_t n);

#endif
