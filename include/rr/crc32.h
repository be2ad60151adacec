/* CRC-32 as zip uses it (ISO-HDLC: reflected polynomial 0xEDB88320, init and final xor
 * 0xFFFFFFFF). */
#ifndef RR_CRC32_H
#define RR_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continues crc (0 to start) over len bytes; returns the new CRC. */
uint32_t rr_crc32(uint32_t crc, const void *data, size_t len);

/* The CRC of A followed by B from crc1 (A's), crc2 (B's) and B's length. */
uint32_t rr_crc32_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);

/* For tests: on, the tables even where the CPU has PCLMULQDQ; returns what rr_crc32 uses
 * now, "pclmul" or "table". */
const char *rr_crc32_force_table(int on);

#endif
