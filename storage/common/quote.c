#include "rr/quote.h"

const char *rr_quote(char dst[RR_QUOTE_CAP], const char *src, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t shown = n, o = 0;

	if (shown > RR_QUOTE_SRC) {
		shown = RR_QUOTE_SRC;
		while (shown > 0 && ((unsigned char)src[shown] & 0xc0) == 0x80)
			shown--;
	}
	dst[o++] = '"';
	for (size_t i = 0; i < shown; i++) {
		unsigned char ch = (unsigned char)src[i];
		unsigned cp = 0;
		size_t skip = 0;

		if (ch == '"' || ch == '\\') {
			dst[o++] = '\\';
			dst[o++] = (char)ch;
			continue;
		}
		if (ch < 0x20 || ch == 0x7f) {
			cp = ch;
		} else if (ch == 0xc2 && i + 1 < shown && (unsigned char)src[i + 1] >= 0x80 &&
			   (unsigned char)src[i + 1] <= 0x9f) {
			cp = (unsigned char)src[i + 1];
			skip = 1;
		} else if (ch == 0xe2 && i + 2 < shown && (unsigned char)src[i + 1] == 0x80 &&
			   ((unsigned char)src[i + 2] == 0xa8 || (unsigned char)src[i + 2] == 0xa9)) {
			cp = (unsigned char)src[i + 2] == 0xa8 ? 0x2028 : 0x2029;
			skip = 2;
		} else {
			dst[o++] = (char)ch;
			continue;
		}
		dst[o++] = '\\';
		dst[o++] = 'u';
		dst[o++] = hex[(cp >> 12) & 15];
		dst[o++] = hex[(cp >> 8) & 15];
		dst[o++] = hex[(cp >> 4) & 15];
		dst[o++] = hex[cp & 15];
		i += skip;
	}
	dst[o++] = '"';
	if (shown < n) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o] = '\0';
	return dst;
}
