/* suggest.c: "did you mean" for cgorchctl (suggest.h). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "macro.h"
#include "suggest.h"

#define SUGGEST_MAX_LEN 64

/* Optimal string alignment distance (Levenshtein plus swaps of neighbours). */
static size_t distance(const char *a, const char *b) {
        size_t n = strlen(a), m = strlen(b);
        size_t d[SUGGEST_MAX_LEN + 1][SUGGEST_MAX_LEN + 1];

        if (n > SUGGEST_MAX_LEN || m > SUGGEST_MAX_LEN)
                return SIZE_MAX;
        for (size_t i = 0; i <= n; i++)
                d[i][0] = i;
        for (size_t j = 0; j <= m; j++)
                d[0][j] = j;
        for (size_t i = 1; i <= n; i++)
                for (size_t j = 1; j <= m; j++) {
                        size_t cost = a[i - 1] != b[j - 1];
                        size_t v = MIN(MIN(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                                v = MIN(v, d[i - 2][j - 2] + 1);
                        d[i][j] = v;
                }
        return d[n][m];
}

const char *suggest(const char *word, const char *const *candidates, size_t n) {
        size_t len = strlen(word), best = SIZE_MAX, limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
        const char *found = NULL, *prefix_of = NULL;
        bool tie = false;
        size_t prefixes = 0;

        if (len == 0)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                if (!candidates[i] || streq(candidates[i], word))
                        continue;
                if (strncmp(candidates[i], word, len) == 0) {
                        prefixes++;
                        prefix_of = candidates[i];
                }
                size_t d = distance(word, candidates[i]);
                if (d < best) {
                        best = d;
                        found = candidates[i];
                        tie = false;
                } else if (d == best)
                        tie = true;
        }
        if (best <= limit && !tie)
                return found;
        return prefixes == 1 ? prefix_of : NULL;
}
