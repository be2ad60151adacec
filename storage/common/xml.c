/* The XML engine every reader of outside XML uses (include/rr/xml.h): expat with namespace
 * processing, no DOCTYPE, bounded fields named by their path from the root. */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <expat.h>

#include "rr/buf.h"
#include "rr/error.h"
#include "rr/xml.h"

#define S_NS_SEP '|' /* expat reports "uri|local"; '|' is not a name character */

/* --- the engine ---------------------------------------------------------------------- */

void rr_xml_fields_reset(struct rr_xml_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		f[i].seen = 0;
		f[i].buf[0] = '\0';
	}
}

void rr_xml_doc_init(struct rr_xml_doc *d, struct rr_xml_field *fields, size_t nfields,
		     rr_xml_element_fn on_element, void *ud)
{
	memset(d, 0, sizeof(*d));
	d->fields = fields;
	d->nfields = nfields;
	d->on_element = on_element;
	d->ud = ud;
	rr_xml_fields_reset(fields, nfields);
}

static void s_stop(struct rr_xml_doc *d, int rc)
{
	if (!d->rc) {
		d->rc = rc;
		XML_StopParser((XML_Parser)d->xp, XML_FALSE);
	}
}

static const char *s_local(const XML_Char *name)
{
	const char *sep = strrchr(name, S_NS_SEP);
	return sep ? sep + 1 : name;
}

/* Starts reading the text of the field on the path just entered, if there is one. */
static int s_match(struct rr_xml_doc *d)
{
	for (size_t i = 0; i < d->nfields; i++) {
		struct rr_xml_field *f = &d->fields[i];

		if (strcmp(f->path, d->path) != 0)
			continue;
		if (f->seen)
			return RR_ECORRUPT; /* two values for one field */
		f->seen = 1;
		f->buf[0] = '\0';
		d->cur = f;
		d->cur_len = 0;
		return 0;
	}
	return 0;
}

/* Appends the element's local name to the path; 0 when it did not fit (the element and
 * everything inside it then stay untracked: no path of ours is that long). */
static int s_push(struct rr_xml_doc *d, const char *local)
{
	size_t n = strlen(local), sep = d->tracked ? 1 : 0;

	if (n >= RR_XML_PATH_CAP || d->path_len + sep + n >= RR_XML_PATH_CAP)
		return 0;
	d->plen[d->tracked++] = d->path_len;
	if (sep)
		d->path[d->path_len++] = '/';
	memcpy(d->path + d->path_len, local, n + 1);
	d->path_len += n;
	return 1;
}

static void XMLCALL s_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
	struct rr_xml_doc *d = ud;
	const char *local = s_local(name);
	int rc;

	(void)atts;
	if (d->rc)
		return;
	if (d->cur || d->depth == RR_XML_MAX_DEPTH) {
		/* markup inside a text value, or nesting none of ours has */
		s_stop(d, RR_ECORRUPT);
		return;
	}
	if (d->depth++ == 0 && strlen(local) < sizeof(d->root))
		memcpy(d->root, local, strlen(local) + 1);
	if (d->tracked + 1 != d->depth || !s_push(d, local))
		return;
	rc = d->on_element ? d->on_element(d, 1) : 0;
	if (!rc)
		rc = s_match(d);
	if (rc)
		s_stop(d, rc);
}

static void XMLCALL s_end(void *ud, const XML_Char *name)
{
	struct rr_xml_doc *d = ud;
	int rc;

	(void)name;
	if (d->rc)
		return;
	if (d->depth-- > d->tracked)
		return;
	d->cur = NULL;
	rc = d->on_element ? d->on_element(d, 0) : 0;
	if (rc) {
		s_stop(d, rc);
		return;
	}
	d->path_len = d->plen[--d->tracked];
	d->path[d->path_len] = '\0';
}

static void XMLCALL s_text(void *ud, const XML_Char *s, int len)
{
	struct rr_xml_doc *d = ud;
	struct rr_xml_field *f = d->cur;

	if (d->rc || !f || len <= 0)
		return;
	if ((size_t)len >= f->cap - d->cur_len) {
		s_stop(d, RR_ECORRUPT); /* longer than its field: refused, never cut */
		return;
	}
	memcpy(f->buf + d->cur_len, s, (size_t)len);
	d->cur_len += (size_t)len;
	f->buf[d->cur_len] = '\0';
}

/* A DTD could declare entities (billion laughs, external files): no service of ours sends one. */
static void XMLCALL s_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
			      const XML_Char *pubid, int has_internal_subset)
{
	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal_subset;
	s_stop(ud, RR_ECORRUPT);
}

static void XMLCALL s_entity(void *ud, const XML_Char *name, int is_parameter_entity,
			     const XML_Char *value, int value_length, const XML_Char *base,
			     const XML_Char *sysid, const XML_Char *pubid,
			     const XML_Char *notation)
{
	(void)name;
	(void)is_parameter_entity;
	(void)value;
	(void)value_length;
	(void)base;
	(void)sysid;
	(void)pubid;
	(void)notation;
	s_stop(ud, RR_ECORRUPT);
}

static int s_is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int rr_xml_parse(struct rr_xml_doc *d, const void *xml, size_t len)
{
	const char *p = xml;
	int rc;

	if (!xml && len)
		return RR_EINVAL;
	if (len > RR_XML_MAX)
		return RR_ETOOBIG;
	while (len && s_is_space((unsigned char)*p)) {
		p++;
		len--;
	}
	if (!len)
		return RR_ECORRUPT;
	d->xp = XML_ParserCreateNS(NULL, S_NS_SEP);
	if (!d->xp)
		return RR_ENOMEM;
	XML_SetUserData((XML_Parser)d->xp, d);
	XML_SetElementHandler((XML_Parser)d->xp, s_start, s_end);
	XML_SetCharacterDataHandler((XML_Parser)d->xp, s_text);
	XML_SetStartDoctypeDeclHandler((XML_Parser)d->xp, s_doctype);
	XML_SetEntityDeclHandler((XML_Parser)d->xp, s_entity);
	/* len <= RR_XML_MAX, so it fits an int */
	if (XML_Parse((XML_Parser)d->xp, p, (int)len, XML_TRUE) == XML_STATUS_OK)
		rc = d->rc;
	else if (d->rc)
		rc = d->rc;
	else if (XML_GetErrorCode((XML_Parser)d->xp) == XML_ERROR_NO_MEMORY)
		rc = RR_ENOMEM;
	else
		rc = RR_ECORRUPT;
	XML_ParserFree((XML_Parser)d->xp);
	d->xp = NULL;
	return rc;
}

/* --- values -------------------------------------------------------------------------- */

int rr_xml_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return RR_ECORRUPT;
	for (; *s; s++) {
		unsigned dig = (unsigned)(*s - '0');
		if (dig > 9 || v > (UINT64_MAX - dig) / 10)
			return RR_ECORRUPT;
		v = v * 10 + dig;
	}
	*out = v;
	return 0;
}

int rr_xml_parse_bool(const char *s, int *out)
{
	if (strcmp(s, "true") == 0)
		*out = 1;
	else if (strcmp(s, "false") == 0)
		*out = 0;
	else
		return RR_ECORRUPT;
	return 0;
}

/* --- writing ------------------------------------------------------------------------- */

/* The entity for byte c, or NULL when c stands for itself. CR and LF are written as
 * references too: a parser turns a literal CR (or CR LF) into LF, so a key holding one
 * would reach the server as another key. */
static const char *s_entity_for(unsigned char c, char tmp[8])
{
	switch (c) {
	case '&': return "&amp;";
	case '<': return "&lt;";
	case '>': return "&gt;";
	case '"': return "&quot;";
	case '\'': return "&apos;";
	case '\r': return "&#13;";
	case '\n': return "&#10;";
	case '\t': return NULL;
	}
	if (c < 0x20 || c == 0x7f) {
		snprintf(tmp, 8, "&#x%02X;", c);
		return tmp;
	}
	return NULL;
}

int rr_xml_escape(struct rr_buf *out, const char *text, size_t len)
{
	size_t start = out->len, run = 0;
	char tmp[8];
	int rc = 0;

	if (!out || (!text && len))
		return RR_EINVAL;
	if (!len)
		return 0;
	for (size_t i = 0; i < len && !rc; i++) {
		const char *ent = s_entity_for((unsigned char)text[i], tmp);

		if (!ent)
			continue;
		rc = rr_buf_append(out, text + run, i - run);
		if (!rc)
			rc = rr_buf_append(out, ent, strlen(ent));
		run = i + 1;
	}
	if (!rc)
		rc = rr_buf_append(out, text + run, len - run);
	if (rc) {
		out->len = start;
		if (out->data)
			out->data[start] = '\0';
	}
	return rc;
}
