/* task-output.h: where a task's standard output and error go — the --output/--error patterns of
 * a job (%j job id, %p phase index, %t task index, %u user, %% a '%'), checked where they are
 * accepted and expanded where the task runs, the node's default (a per-user directory the agent
 * makes), and base64 for the bytes a read of them carries through JSON. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A pattern: 1..TASK_OUTPUT_PATTERN_MAX bytes; expanded, at most TASK_OUTPUT_PATH_MAX. */
#define TASK_OUTPUT_PATTERN_MAX 1024
#define TASK_OUTPUT_PATH_MAX 4096
/* The default file of a task in its user's directory of the agent's --output-dir. */
#define TASK_OUTPUT_DEFAULT_NAME "%j.%p.%t.out"

/* Whether pattern is one: not empty, not over-long, printable (no control characters, which a
 * file name should never hold and which would garble every view of it), and every '%' one of
 * the escapes above. Paths are not judged: the task opens its files as its user, so a pattern
 * reaches only what that user could write anyway ("../" included). Returns 0, or -EINVAL and
 * a static reason ("must not be empty", "unknown %x: ...") in *ret_why. */
int task_output_pattern_check(const char *pattern, const char **ret_why);

typedef struct TaskOutputIds {
        uint64_t job;
        unsigned phase, task;
        const char *user;       /* the job's user; NULL: "%u" expands to "unknown" */
} TaskOutputIds;

/* The pattern with its escapes replaced, into buf. -EINVAL for a pattern that fails the check,
 * -ENAMETOOLONG when the result does not fit in size bytes (or TASK_OUTPUT_PATH_MAX). */
int task_output_expand(const char *pattern, const TaskOutputIds *ids, char *buf, size_t size);

/* The file a task's output goes to: pattern expanded (relative: to the task's working
 * directory), or with no pattern "DIR/USER/JOB.PHASE.TASK.out" under the agent's output_dir. */
int task_output_path(const char *pattern, const char *output_dir, const TaskOutputIds *ids, char *buf, size_t size);

/* RFC 4648 base64 with padding. The encoded text of n bytes is base64_encoded_len(n) bytes
 * (and a NUL). */
static inline size_t base64_encoded_len(size_t n) {
        return (n + 2) / 3 * 4;
}
/* Writes the text and its NUL into out (base64_encoded_len(n) + 1 bytes). */
void base64_encode(const void *data, size_t n, char *out);
/* Decodes len characters (padding required, no whitespace) into out (at least len / 4 * 3
 * bytes). Returns the number of bytes, or -EINVAL for anything that is no such text. */
long base64_decode(const char *text, size_t len, void *out);
