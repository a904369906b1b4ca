/* suggest.h: "did you mean" for a mistyped command or option name. */
#pragma once

#include <stddef.h>

/* The candidate closest to word by edit distance (insertions, deletions, substitutions and
 * swaps of neighbours), if it is close enough to be what was meant: at most 1 edit for words of
 * up to 4 characters, 2 up to 8, 3 beyond; or word is a prefix of exactly one candidate. NULL
 * when none is, or when two are equally close. */
const char *suggest(const char *word, const char *const *candidates, size_t n);
