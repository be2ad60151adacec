/* XML answers from outside (object stores, token services), read with expat and never by
 * searching strings (storage/common/xml.c). One engine for every reader: namespace
 * processing, so an element is known by its local name whatever prefix or xmlns the server
 * used; no DOCTYPE, so no entity can be declared or expanded; a nesting limit; a size
 * ceiling; and the path of local names from the root ("ListBucketResult/Contents/Key"), so
 * that a name means something only where the document's shape puts it.
 *
 * A reader lists the paths whose text it wants (struct rr_xml_field), each with a bounded
 * buffer: a text that does not fit is refused (RR_ECORRUPT), never cut, and a field that
 * appears twice where one is expected is refused too, since the two copies could mean
 * different things to different readers. Repeated entries (a listing's objects) are read
 * with an element callback that resets their fields at each start and takes them at each
 * end. */
#ifndef RR_XML_H
#define RR_XML_H

#include <stddef.h>
#include <stdint.h>

#include "rr/buf.h"

#define RR_XML_MAX (16u << 20) /* ceiling on any XML document read */
#define RR_XML_PATH_CAP 256    /* longer paths are none of ours */
#define RR_XML_MAX_DEPTH 32
#define RR_XML_ROOT_CAP 64

struct rr_xml_field {
	const char *path; /* local names from the root, '/'-separated */
	char *buf;        /* the text, NUL-terminated */
	size_t cap;       /* bytes of buf, NUL included */
	int seen;
};

struct rr_xml_doc;
/* Called when an element on a tracked path starts (start = 1) and ends (0), with d->path
 * naming it; a nonzero return stops the parse and is its result. */
typedef int (*rr_xml_element_fn)(struct rr_xml_doc *d, int start);

/* The state of one parse. Readers use path, root, fields and ud; the rest is the engine's. */
struct rr_xml_doc {
	void *xp; /* the expat parser while it runs */
	char path[RR_XML_PATH_CAP];
	size_t path_len;
	size_t plen[RR_XML_MAX_DEPTH]; /* path_len before each tracked element */
	unsigned depth;                /* open elements */
	unsigned tracked;              /* how many of them path names (the outermost ones) */
	char root[RR_XML_ROOT_CAP];    /* local name of the root element, "" when too long */
	struct rr_xml_field *fields;
	size_t nfields;
	struct rr_xml_field *cur; /* the field whose text is being read */
	size_t cur_len;
	rr_xml_element_fn on_element;
	void *ud;
	int rc; /* why the parse was stopped, 0 while it runs */
};

/* Prepares d to read into fields (emptied here); on_element may be NULL. */
void rr_xml_doc_init(struct rr_xml_doc *d, struct rr_xml_field *fields, size_t nfields,
		     rr_xml_element_fn on_element, void *ud);

/* Empties n fields (for an element callback, at the start of a repeated entry). */
void rr_xml_fields_reset(struct rr_xml_field *f, size_t n);

/* Parses one whole document of len bytes into d. Leading white space is skipped (S3 pads
 * a CompleteMultipartUpload answer with it while it works, ahead of the XML declaration,
 * which expat accepts only as the very first bytes). Returns 0, RR_ETOOBIG past
 * RR_XML_MAX, RR_ECORRUPT for anything not well-formed or refused, RR_ENOMEM, or what an
 * element callback returned. The caller checks d->root. */
int rr_xml_parse(struct rr_xml_doc *d, const void *xml, size_t len);

/* A decimal without sign, leading zeros or overflow: 0 or RR_ECORRUPT. */
int rr_xml_parse_u64(const char *s, uint64_t *out);

/* "true" or "false": 0 or RR_ECORRUPT. */
int rr_xml_parse_bool(const char *s, int *out);

/* Appends text to out with &, <, >, ", ' and control bytes escaped (control bytes other
 * than tab as &#xNN;, CR and LF as references, since a parser would turn a literal CR into
 * LF). Returns 0, RR_EINVAL, RR_ENOMEM or RR_ETOOBIG; out is unchanged on failure. */
int rr_xml_escape(struct rr_buf *out, const char *text, size_t len);

#endif
