/* libcurl, loaded with dlopen when the first HTTP client is made rather than when the agent
 * starts: a run on a file:// store that watches no cloud never uses the network, and
 * libcurl's dependency tree (about 30 shared objects: GnuTLS, Kerberos, LDAP, SSH, ...)
 * was a third of such a run's time (BENCHMARKS.md, "Speed on real-shaped checkpoints").
 * Each member has the type of the libcurl function it stands for, taken from curl.h, so the
 * compiler checks every call as it would a direct one. */
#ifndef RR_CURL_API_H
#define RR_CURL_API_H

#include <curl/curl.h>

#define RR_CURL_FUNCTIONS(X)                                                              \
	X(global_init) X(easy_init) X(easy_setopt) X(easy_getinfo) X(easy_perform)        \
	X(easy_reset) X(easy_cleanup) X(easy_strerror) X(share_init) X(share_setopt)      \
	X(share_cleanup) X(multi_init) X(multi_setopt) X(multi_add_handle)                \
	X(multi_remove_handle) X(multi_perform) X(multi_poll) X(multi_info_read)          \
	X(multi_cleanup) X(slist_append) X(slist_free_all)

struct rr_curl_api {
#define RR_CURL_MEMBER(name) __typeof__(curl_##name) *name;
	RR_CURL_FUNCTIONS(RR_CURL_MEMBER)
#undef RR_CURL_MEMBER
};

/* Filled by rr_curl_load; read only after it returned 0. */
extern struct rr_curl_api rr_curl;

/* Loads libcurl.so.4 and runs curl_global_init, once per process (thread-safe). 0, or
 * RR_EIO after logging why (the library missing, or older than the functions we call). */
int rr_curl_load(void);

#endif
