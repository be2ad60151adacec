/* Slicing-by-8: eight table lookups per 8 bytes, about 1-2 GB/s, so recomputing the CRC of
 * a restored zip entry costs less than writing it. */
#include <pthread.h>

#include "rr/crc32.h"

static uint32_t s_table[8][256];
static pthread_once_t s_once = PTHREAD_ONCE_INIT;

static void s_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		s_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			s_table[t][i] = (s_table[t - 1][i] >> 8) ^ s_table[0][s_table[t - 1][i] & 0xff];
}

uint32_t rr_crc32(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;

	pthread_once(&s_once, s_init);
	crc = ~crc;
	while (len >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
			      (uint32_t)p[7] << 24;
		crc = s_table[7][lo & 0xff] ^ s_table[6][(lo >> 8) & 0xff] ^
		      s_table[5][(lo >> 16) & 0xff] ^ s_table[4][lo >> 24] ^
		      s_table[3][hi & 0xff] ^ s_table[2][(hi >> 8) & 0xff] ^
		      s_table[1][(hi >> 16) & 0xff] ^ s_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = s_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}
