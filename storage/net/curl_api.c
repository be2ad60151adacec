/* libcurl on first use: dlopen by its soname (libcurl.so.4 since 2006, on every Linux
 * distribution), each function looked up by name, then curl_global_init. RTLD_LAZY, as the
 * dynamic linker binds a linked library: RTLD_NOW would bind every function of its thirty
 * dependencies at once, where most are never called. */
#include <dlfcn.h>
#include <pthread.h>

#include "rr/error.h"
#include "rr/log.h"

#include "curl_api.h"

#define S_SONAME "libcurl.so.4"

struct rr_curl_api rr_curl;

static pthread_once_t s_once = PTHREAD_ONCE_INIT;
static int s_rc = RR_EIO;

static void s_load(void)
{
	void *lib = dlopen(S_SONAME, RTLD_LAZY | RTLD_LOCAL);
	CURLcode c;

	if (!lib) {
		rr_error("cannot load %s (%s): the network stores and the cloud notices need "
			 "libcurl (Debian and Ubuntu: apt-get install libcurl4)",
			 S_SONAME, dlerror());
		return;
	}
#define RR_CURL_LOOKUP(name)                                                               \
	rr_curl.name = (__typeof__(rr_curl.name))dlsym(lib, "curl_" #name);               \
	if (!rr_curl.name) {                                                               \
		rr_error("%s has no curl_" #name ": libcurl %s or later is needed", S_SONAME, \
			 LIBCURL_VERSION);                                                 \
		return;                                                                    \
	}
	RR_CURL_FUNCTIONS(RR_CURL_LOOKUP)
#undef RR_CURL_LOOKUP
	c = rr_curl.global_init(CURL_GLOBAL_DEFAULT);
	if (c != CURLE_OK) {
		rr_error("libcurl's global initialisation failed: %s", rr_curl.easy_strerror(c));
		return;
	}
	s_rc = 0;
}

int rr_curl_load(void)
{
	pthread_once(&s_once, s_load);
	return s_rc;
}
