/* test-job-view.c: how cgorchctl shows a job from the controller's JSON. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "job-view.h"

static json_t *load(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);
        cr_assert_not_null(j, "bad test JSON: %s", e.text);
        return j;
}

static char *render(int (*print)(json_t *, FILE *), json_t *j) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        cr_assert_not_null(f);
        cr_assert_eq(print(j, f), 0);
        fclose(f);
        return buf;
}

Test(job_view, cells) {
        json_t *j = load("{\"id\": 7, \"cpu_s\": 3.25, \"memory_peak_bytes\": 1048576, \"tasks_done\": 1,"
                         " \"tasks_total\": 4, \"progress\": 0.999, \"response_s\": 12.3, \"weight\": 0.5,"
                         " \"finished_ms\": null, \"bad\": \"x\"}");
        char b[HUMAN_MAX];

        cr_assert_str_eq(job_view_int(j, "id", b), "7");
        cr_assert_str_eq(job_view_seconds(j, "cpu_s", 1, b), "3.2");
        cr_assert_str_eq(job_view_bytes(j, "memory_peak_bytes", b), "1MiB");
        cr_assert_str_eq(job_view_tasks(j, b), "1/4");
        cr_assert_str_eq(job_view_progress(j, b), "99%"); /* never "100%" before the end */
        cr_assert_str_eq(job_view_duration(j, "response_s", b), "12.3s");
        cr_assert_str_eq(job_view_number(j, "weight", b), "0.5");
        /* Missing, null and mistyped fields are "not known". */
        cr_assert_null(job_view_time(j, "finished_ms", b));
        cr_assert_null(job_view_int(j, "missing", b));
        cr_assert_null(job_view_seconds(j, "bad", 1, b));
        json_decref(j);
}

Test(job_view, exit_column) {
        char b[HUMAN_MAX];
        json_t *j;

        j = load("{\"exit_code\": 3, \"signal\": 0, \"oom_killed\": false}");
        cr_assert_str_eq(job_view_exit(j, b), "3");
        json_decref(j);
        j = load("{\"exit_code\": null, \"signal\": 9, \"oom_killed\": true}");
        cr_assert_str_eq(job_view_exit(j, b), "SIGKILL(oom)");
        json_decref(j);
        j = load("{\"exit_code\": null, \"signal\": 15, \"oom_killed\": false}");
        cr_assert_str_eq(job_view_exit(j, b), "SIGTERM");
        json_decref(j);
        j = load("{\"exit_code\": null, \"signal\": 0, \"oom_killed\": false}");
        cr_assert_null(job_view_exit(j, b));
        json_decref(j);
}

static const char job_json[] =
        "{\"id\": 8, \"name\": \"word\\u001b[2Jcount\", \"user\": \"ann\", \"weight\": 1, \"state\": \"failed\","
        " \"submitted_ms\": null, \"started_ms\": null, \"finished_ms\": null, \"response_s\": 1.5,"
        " \"tasks_total\": 2, \"tasks_done\": 2, \"progress\": 1, \"cpu_s\": 10.02, \"memory_peak_bytes\": 67108864,"
        " \"phases\": [{\"index\": 0, \"name\": \"map\", \"state\": \"failed\", \"tasks_total\": 2, \"tasks_done\": 2,"
        "   \"argv\": [\"sh\", \"-c\", \"exit 3\"], \"cpu_cores\": 0.5, \"memory_bytes\": 268435456,"
        "   \"tasks\": ["
        "     {\"id\": \"8.0.0.0\", \"state\": \"failed\", \"node\": \"n1\", \"exit_code\": 3, \"signal\": 0,"
        "      \"oom_killed\": false, \"cpu_s\": 5.01, \"memory_peak_bytes\": 67108864, \"progress\": 1, \"error\": null},"
        "     {\"id\": \"8.0.1.0\", \"state\": \"lost\", \"node\": \"n2\", \"exit_code\": null, \"signal\": 0,"
        "      \"oom_killed\": false, \"cpu_s\": null, \"memory_peak_bytes\": null, \"progress\": null,"
        "      \"error\": \"node n2 lost\\nreally\"}]}]}";

Test(job_view, page) {
        json_t *j = load(job_json);
        char *out = render(job_view_print, j);

        cr_assert_str_eq(out,
                         "Job 8 (word?[2Jcount)\n"
                         "  State:       failed\n"
                         "  User:        ann\n"
                         "  Weight:      1\n"
                         "  Submitted:   -\n"
                         "  Started:     -\n"
                         "  Finished:    -\n"
                         "  Response:    1.5s\n"
                         "  Tasks done:  2/2\n"
                         "  Progress:    100%\n"
                         "  CPU time:    10.0s\n"
                         "  Peak memory: 64MiB\n"
                         "\n"
                         "Phase 0 (map)\n"
                         "  State:       failed\n"
                         "  Tasks done:  2/2\n"
                         "  Command:     sh -c 'exit 3'\n"
                         "  CPUs/task:   0.5\n"
                         "  Memory/task: 256MiB\n"
                         "\n"
                         "ID       STATE   NODE  EXIT  CPU_S  PEAK_MEM  PROGRESS  ERROR\n"
                         "8.0.0.0  failed  n1    3      5.01     64MiB      100%  -\n"
                         "8.0.1.0  lost    n2    -         -         -         -  node n2 lost?really\n");
        free(out);
        json_decref(j);
}

Test(job_view, outcome) {
        json_t *j = load(job_json);
        char *out = render(job_view_print_outcome, j);

        cr_assert_str_eq(out,
                         "job 8 failed after 1.5s: CPU 10.0s, peak memory 64MiB\n"
                         "  task 8.0.0.0 failed on n1: exit 3\n"
                         "  task 8.0.1.0 lost on n2: exit -, node n2 lost?really\n");
        free(out);
        json_decref(j);
}
