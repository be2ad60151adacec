/* XXH3-128 compiled for AVX2 (CMakeLists.txt gives this file alone -mavx2): xxHash's own
 * header-only form, every function of it static to this file, so no AVX2 code is reached but
 * through rr_xxh3_128_avx2, which hash.c calls only on a CPU with AVX2. This is what xxHash's
 * xxh_x86dispatch.c does; Debian ships the library without it. */
#include "xxh3_avx2.h"

#if RR_HAVE_XXH3_AVX2
#ifndef __AVX2__
#error "xxh3_avx2.c is built without -mavx2 (CMakeLists.txt)"
#endif
#define XXH_INLINE_ALL
#include <xxhash.h>

void rr_xxh3_128_avx2(const void *data, size_t len, uint64_t *low, uint64_t *high)
{
	XXH128_hash_t h = XXH3_128bits(data, len);
	*low = h.low64;
	*high = h.high64;
}
#else
typedef int rr_xxh3_avx2_unused; /* keeps this a non-empty translation unit */
#endif
