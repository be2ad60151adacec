/* What the CPU offers the SIMD kernels (fp16, shuffle, SHA-256, CRC-32), probed once. */
#ifndef RR_CPU_H
#define RR_CPU_H

enum rr_cpu_feature {
	RR_CPU_AVX2 = 1, /* AVX2, and the OS saves YMM state */
	RR_CPU_F16C = 2,
	RR_CPU_SHA = 4,    /* the SHA extensions, with SSSE3 and SSE4.1 */
	RR_CPU_PCLMUL = 8, /* carry-less multiplication (PCLMULQDQ), with SSE4.1 */
};

/* The set of rr_cpu_feature bits present; 0 off x86. Thread-safe. */
unsigned rr_cpu_features(void);

#endif
