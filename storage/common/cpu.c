#include <stdatomic.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define S_HAVE_X86 1
#else
#define S_HAVE_X86 0
#endif

#include "rr/cpu.h"

/* 0: not probed yet; else the features plus a "probed" bit. Two threads probing at once
 * get the same answer, so relaxed ordering is enough. */
#define S_PROBED 0x80000000u
static atomic_uint s_features;

unsigned rr_cpu_features(void)
{
	unsigned f = atomic_load_explicit(&s_features, memory_order_relaxed);

	if (!f) {
		f = S_PROBED;
#if S_HAVE_X86
		unsigned eax, ebx, ecx = 0, edx;
		/* __builtin_cpu_supports("avx2") also checks that the OS saves YMM state; clang
		 * has no "f16c" there, so F16C comes from CPUID leaf 1 directly. */
		__builtin_cpu_init();
		if (__builtin_cpu_supports("avx2"))
			f |= RR_CPU_AVX2;
		if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
			ecx = 0;
		if (ecx & bit_F16C)
			f |= RR_CPU_F16C;
		if ((ecx & bit_PCLMUL) && (ecx & bit_SSE4_1))
			f |= RR_CPU_PCLMUL;
		if ((ecx & bit_SSSE3) && (ecx & bit_SSE4_1) &&
		    __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ebx & bit_SHA))
			f |= RR_CPU_SHA;
#endif
		atomic_store_explicit(&s_features, f, memory_order_relaxed);
	}
	return f & ~S_PROBED;
}
