/* replay.c: runs a harness on files and directories of inputs without libFuzzer, so that a
 * plain build replays the committed corpus (and every crash once found, kept there) in
 * make check. Usage: replay-HARNESS FILE|DIR... */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path) {
        FILE *f = fopen(path, "re");
        if (!f) {
                perror(path);
                return -1;
        }
        size_t cap = 4096, n = 0, k;
        uint8_t *buf = malloc(cap);
        if (!buf) {
                fclose(f);
                return -1;
        }
        while ((k = fread(buf + n, 1, cap - n, f)) > 0) {
                n += k;
                if (n == cap) {
                        uint8_t *b = realloc(buf, cap * 2);
                        if (!b) {
                                free(buf);
                                fclose(f);
                                return -1;
                        }
                        buf = b;
                        cap *= 2;
                }
        }
        fclose(f);
        /* An exact-size copy, so that ASan sees a read past the input. */
        uint8_t *input = malloc(n ? n : 1);
        if (!input) {
                free(buf);
                return -1;
        }
        memcpy(input, buf, n);
        free(buf);
        LLVMFuzzerTestOneInput(input, n);
        free(input);
        return 0;
}

int main(int argc, char **argv) {
        unsigned files = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        perror(argv[i]);
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (replay_file(argv[i]) < 0)
                                return 1;
                        files++;
                        continue;
                }
                struct dirent **entries;
                int n = scandir(argv[i], &entries, NULL, alphasort);
                if (n < 0) {
                        perror(argv[i]);
                        return 1;
                }
                for (int k = 0; k < n; k++) {
                        if (entries[k]->d_name[0] != '.') {
                                char path[4096];
                                snprintf(path, sizeof path, "%s/%s", argv[i], entries[k]->d_name);
                                if (replay_file(path) < 0)
                                        return 1;
                                files++;
                        }
                        free(entries[k]);
                }
                free(entries);
        }
        printf("%s: %u input(s) replayed\n", argv[0], files);
        return 0;
}
