/* utf8.h: UTF-8 text from the network made safe and measurable for a terminal. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Display width in terminal columns: wide characters count 2 in a UTF-8 locale, each invalid
 * byte counts 1 (utf8_sanitize() shows it as one '?'). */
size_t utf8_display_width(const char *s);

/* A malloc'd copy with every control character (C0, DEL, C1: newlines, escape sequences) and
 * every byte that is not valid UTF-8 replaced by '?', so a job name or error message cannot
 * move the cursor or recolour the terminal. NULL when out of memory. */
char *utf8_sanitize(const char *text);
/* The same, in text itself (what it writes is never longer); returns text. */
char *utf8_sanitize_in_place(char *text);
