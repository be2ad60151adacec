/* Whether a URL's host is this machine's loopback interface: where a credential may travel
 * over plain http (a local emulator or test server), and nowhere else. */
#ifndef RR_LOOPBACK_H
#define RR_LOOPBACK_H

/* 1 when url ("http://host[:port]/...", or "host[:port]" alone) names a loopback host:
 * 127.0.0.0/8, [::1], "localhost" or a name under ".localhost" (RFC 6761 keeps those on
 * the machine). 0 for anything else, including names that merely resolve to loopback
 * today (DNS can change its answer). */
int rr_url_host_is_loopback(const char *url);

#endif
