/* Loopback hosts by their spelling alone (include/rr/loopback.h): no resolver involved,
 * so the answer cannot be steered by DNS. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>

#include "rr/loopback.h"

#define S_HOST_MAX 256

int rr_url_host_is_loopback(const char *url)
{
	const char *p, *end;
	char host[S_HOST_MAX];
	struct in_addr a4;
	struct in6_addr a6;
	size_t n, suffix = sizeof(".localhost") - 1;

	if (!url)
		return 0;
	p = strstr(url, "://");
	p = p ? p + 3 : url;
	/* user@ would make everything before it not the host. */
	end = p + strcspn(p, "/?#");
	for (const char *at = p; at < end; at++)
		if (*at == '@')
			p = at + 1;
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));
		if (!close)
			return 0;
		n = (size_t)(close - p - 1);
		if (n >= sizeof(host))
			return 0;
		memcpy(host, p + 1, n);
		host[n] = '\0';
		return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	n = strcspn(p, ":/?#");
	if (n == 0 || n >= sizeof(host))
		return 0;
	memcpy(host, p, n);
	host[n] = '\0';
	if (n > 0 && host[n - 1] == '.')
		host[--n] = '\0'; /* "localhost." is the same name */
	if (strcasecmp(host, "localhost") == 0 ||
	    (n > suffix && strcasecmp(host + n - suffix, ".localhost") == 0))
		return 1;
	/* inet_pton takes only the dotted quad: "127.1" or "0x7f.1" are not loopback here. */
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return 0;
}
