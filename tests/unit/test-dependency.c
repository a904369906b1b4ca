/* test-dependency.c: job dependency specs (common/dependency.c) — parsed, refused with their
 * reason, written back — and what each type makes of a job's state. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dependency.h"
#include "macro.h"

static void assert_parses(const char *spec, const char *normal, size_t n_want) {
        Dependency *d = NULL;
        size_t n = 0;
        char *error = NULL;
        cr_assert_eq(dependency_parse(spec, &d, &n, &error), 0, "%s: %s", spec, error ?: "");
        cr_assert_eq(n, n_want, "%s: %zu dependencies", spec, n);
        char *text = dependency_format(d, n);
        cr_assert_str_eq(text, normal);
        free(text);
        free(d);
}

static void assert_refused(const char *spec, const char *message) {
        Dependency *d = NULL;
        size_t n = 0;
        char *error = NULL;
        cr_assert_eq(dependency_parse(spec, &d, &n, &error), -EINVAL, "%s: accepted", spec);
        cr_assert_null(d);
        cr_assert_str_eq(error, message);
        free(error);
}

Test(dependency, parses_and_writes_back) {
        assert_parses("afterok:12", "afterok:12", 1);
        assert_parses("afterok:12:13,afterany:14", "afterok:12:13,afterany:14", 3);
        /* Groups of one type written as one. */
        assert_parses("afterok:1,afterok:2,afternotok:3", "afterok:1:2,afternotok:3", 3);
        assert_parses("afternotok:9223372036854775807", "afternotok:9223372036854775807", 1);

        Dependency *d = NULL;
        size_t n = 0;
        cr_assert_eq(dependency_parse("afterany:5:6,afterok:7", &d, &n, NULL), 0);
        cr_assert_eq(d[0].type, DEPENDENCY_AFTERANY);
        cr_assert_eq(d[0].job, 5);
        cr_assert_eq(d[1].job, 6);
        cr_assert_eq(d[2].type, DEPENDENCY_AFTEROK);
        cr_assert_eq(d[2].job, 7);
        free(d);
}

Test(dependency, refuses_malformed_specs) {
        assert_refused("", "must not be empty (TYPE:ID[:ID...][,TYPE:ID...], e.g. afterok:12)");
        assert_refused("afterok", "'afterok' is not TYPE:ID[:ID...] (e.g. afterok:12)");
        assert_refused("afterok:", "'' in 'afterok:' is not a job id (a positive integer)");
        assert_refused("afterok:12:", "'' in 'afterok:12:' is not a job id (a positive integer)");
        assert_refused("afterok:12,", "'' is not TYPE:ID[:ID...] (e.g. afterok:12)");
        assert_refused(",afterok:12", "'' is not TYPE:ID[:ID...] (e.g. afterok:12)");
        assert_refused("afterok:0", "'0' in 'afterok:0' is not a job id (a positive integer)");
        assert_refused("afterok:012", "'012' in 'afterok:012' is not a job id (a positive integer)");
        assert_refused("afterok:-1", "'-1' in 'afterok:-1' is not a job id (a positive integer)");
        assert_refused("afterok: 1", "' 1' in 'afterok: 1' is not a job id (a positive integer)");
        assert_refused("afterok:9223372036854775808",
                       "'9223372036854775808' in 'afterok:9223372036854775808' is not a job id (a positive integer)");
        assert_refused("afterok:1x", "'1x' in 'afterok:1x' is not a job id (a positive integer)");
        assert_refused("AFTEROK:1", "unknown type 'AFTEROK' (afterok, afternotok, afterany)");
        assert_refused("after:1", "unknown type 'after' (afterok, afternotok, afterany)");
        assert_refused("singleton", "'singleton' is not TYPE:ID[:ID...] (e.g. afterok:12)");
        assert_refused("afterok:1?afterany:2",
                       "'?' (any one of them) is not supported: every dependency must be met, separated by ','");
        /* A job once: afterok and afternotok of one job could never both be met. */
        assert_refused("afterok:3,afternotok:3", "job 3 is named twice");
        assert_refused("afterok:3:3", "job 3 is named twice");
        /* Control characters are not echoed. */
        assert_refused("after\tok:1", "unknown type 'after?ok' (afterok, afternotok, afterany)");
}

Test(dependency, bounds) {
        /* PROTO_MAX_DEPENDENCIES jobs pass, one more does not. */
        char spec[PROTO_MAX_DEPENDENCY_LEN + 64] = "afterok";
        size_t len = strlen(spec);
        for (int i = 1; i <= PROTO_MAX_DEPENDENCIES; i++)
                len += (size_t) snprintf(spec + len, sizeof spec - len, ":%d", i);
        Dependency *d = NULL;
        size_t n = 0;
        cr_assert_eq(dependency_parse(spec, &d, &n, NULL), 0);
        cr_assert_eq(n, PROTO_MAX_DEPENDENCIES);
        free(d);
        snprintf(spec + len, sizeof spec - len, ":%d", PROTO_MAX_DEPENDENCIES + 1);
        assert_refused(spec, "names more than 128 jobs");

        char *long_spec = malloc(PROTO_MAX_DEPENDENCY_LEN + 2);
        memset(long_spec, '1', PROTO_MAX_DEPENDENCY_LEN + 1);
        memcpy(long_spec, "afterok:", 8);
        long_spec[PROTO_MAX_DEPENDENCY_LEN + 1] = '\0';
        assert_refused(long_spec, "must be at most 4096 bytes long");
        free(long_spec);
}

Test(dependency, outcome_of_each_type) {
        for (JobState s = JOB_QUEUED; s <= JOB_RUNNING; s++)
                for (DependencyType t = 0; t < _DEPENDENCY_TYPE_MAX; t++)
                        cr_assert_eq(dependency_outcome(t, s), DEPENDENCY_WAITING);
        cr_assert_eq(dependency_outcome(DEPENDENCY_AFTEROK, JOB_SUCCEEDED), DEPENDENCY_MET);
        cr_assert_eq(dependency_outcome(DEPENDENCY_AFTEROK, JOB_FAILED), DEPENDENCY_NEVER);
        cr_assert_eq(dependency_outcome(DEPENDENCY_AFTEROK, JOB_CANCELLED), DEPENDENCY_NEVER);
        cr_assert_eq(dependency_outcome(DEPENDENCY_AFTEROK, JOB_TIMEOUT), DEPENDENCY_NEVER);
        cr_assert_eq(dependency_outcome(DEPENDENCY_AFTERNOTOK, JOB_SUCCEEDED), DEPENDENCY_NEVER);
        cr_assert_eq(dependency_outcome(DEPENDENCY_AFTERNOTOK, JOB_FAILED), DEPENDENCY_MET);
        cr_assert_eq(dependency_outcome(DEPENDENCY_AFTERNOTOK, JOB_CANCELLED), DEPENDENCY_MET);
        cr_assert_eq(dependency_outcome(DEPENDENCY_AFTERNOTOK, JOB_TIMEOUT), DEPENDENCY_MET);
        for (JobState s = JOB_SUCCEEDED; s < _JOB_STATE_MAX; s++)
                cr_assert_eq(dependency_outcome(DEPENDENCY_AFTERANY, s), DEPENDENCY_MET);
}

Test(dependency, names) {
        for (DependencyType t = 0; t < _DEPENDENCY_TYPE_MAX; t++)
                cr_assert_eq(dependency_type_from_string(dependency_type_to_string(t)), t);
        for (DependencyState s = 0; s < _DEPENDENCY_STATE_MAX; s++)
                cr_assert_eq(dependency_state_from_string(dependency_state_to_string(s)), s);
        cr_assert_eq(dependency_type_from_string("after"), _DEPENDENCY_TYPE_INVALID);
        cr_assert_null(dependency_state_to_string(_DEPENDENCY_STATE_MAX));
}
