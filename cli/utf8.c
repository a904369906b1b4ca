/* utf8.c: UTF-8 text from the network made safe and measurable for a terminal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "utf8.h"

/* Decodes one UTF-8 sequence at s. Returns its length and the code point, or 0 when the
 * bytes are not well-formed UTF-8 (overlong forms and surrogates included). */
static size_t utf8_decode(const unsigned char *s, uint32_t *ret_cp) {
        uint32_t cp;
        size_t n;

        if (s[0] < 0x80) {
                *ret_cp = s[0];
                return 1;
        } else if ((s[0] & 0xe0) == 0xc0) {
                cp = s[0] & 0x1f;
                n = 2;
        } else if ((s[0] & 0xf0) == 0xe0) {
                cp = s[0] & 0x0f;
                n = 3;
        } else if ((s[0] & 0xf8) == 0xf0) {
                cp = s[0] & 0x07;
                n = 4;
        } else
                return 0;

        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        static const uint32_t min_cp[] = { 0, 0, 0x80, 0x800, 0x10000 };
        if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        *ret_cp = cp;
        return n;
}

static bool codepoint_is_control(uint32_t cp) {
        return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
}

size_t utf8_display_width(const char *s) {
        const unsigned char *p = (const unsigned char *) s;
        size_t width = 0;

        while (*p) {
                uint32_t cp;
                size_t n = utf8_decode(p, &cp);
                if (n == 0) {
                        width++;
                        p++;
                        continue;
                }
                /* wcwidth() knows wide characters only in a UTF-8 locale; elsewhere it says -1
                 * and one column is the best guess. */
                int w = wcwidth((wchar_t) cp);
                width += w < 0 ? 1 : (size_t) w;
                p += n;
        }
        return width;
}

/* Writes text sanitized to out, which may be text itself: what is written is never longer than
 * what is read. */
static void sanitize_into(char *out, const char *text) {
        const unsigned char *p = (const unsigned char *) text;
        char *o = out;

        while (*p) {
                uint32_t cp;
                size_t n = utf8_decode(p, &cp);
                if (n == 0 || codepoint_is_control(cp)) {
                        *o++ = '?';
                        p += n == 0 ? 1 : n;
                        continue;
                }
                memmove(o, p, n);
                o += n;
                p += n;
        }
        *o = '\0';
}

char *utf8_sanitize(const char *text) {
        char *out = malloc(strlen(text) + 1);
        if (out)
                sanitize_into(out, text);
        return out;
}

char *utf8_sanitize_in_place(char *text) {
        sanitize_into(text, text);
        return text;
}
