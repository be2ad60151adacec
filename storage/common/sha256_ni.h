/* SHA-256 on the x86 SHA extensions (sha256_ni.c); only where rr_cpu_features() offers
 * RR_CPU_SHA. */
#ifndef RR_SHA256_NI_H
#define RR_SHA256_NI_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RR_HAVE_SHA_NI 1
/* One-shot digest of len bytes. */
void rr_sha256_ni(const void *data, size_t len, uint8_t out[32]);
#else
#define RR_HAVE_SHA_NI 0
typedef int rr_sha256_ni_unused; /* keeps sha256_ni.c a non-empty translation unit */
#endif

#endif
