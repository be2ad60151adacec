/* XXH3-128 on AVX2 (xxh3_avx2.c); only where rr_cpu_features() offers RR_CPU_AVX2. The
 * system's libxxhash is built for baseline x86_64 (SSE2), at about half the speed. */
#ifndef RR_XXH3_AVX2_H
#define RR_XXH3_AVX2_H

#include <stddef.h>
#include <stdint.h>

/* RR_XXH3_AVX2: CMakeLists.txt builds xxh3_avx2.c with -mavx2 (on x86_64 only). */
#if defined(RR_XXH3_AVX2) && defined(__x86_64__)
#define RR_HAVE_XXH3_AVX2 1
/* XXH3_128bits(data, len), the same hash: its low and high 64 bits. */
void rr_xxh3_128_avx2(const void *data, size_t len, uint64_t *low, uint64_t *high);
#else
#define RR_HAVE_XXH3_AVX2 0
#endif

#endif
