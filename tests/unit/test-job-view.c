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
        char b[FORMAT_MAX];

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
        char b[FORMAT_MAX];
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
        "   \"argv\": [\"sh\", \"-c\", \"exit 3\"], \"cpu_cores\": 0.5, \"memory_bytes\": 268435456, \"pids_max\": 512,"
        "   \"tasks\": ["
        "     {\"id\": \"8.0.0.0\", \"state\": \"failed\", \"node\": \"n1\", \"exit_code\": 3, \"signal\": 0,"
        "      \"oom_killed\": false, \"cpu_s\": 5.01, \"memory_peak_bytes\": 67108864, \"progress\": 1, \"error\": null},"
        "     {\"id\": \"8.0.1.0\", \"state\": \"lost\", \"node\": \"n2\", \"exit_code\": null, \"signal\": 0,"
        "      \"oom_killed\": false, \"cpu_s\": null, \"memory_peak_bytes\": null, \"progress\": null,"
        "      \"error\": \"node n2 lost\\nreally\"}]}]}";

/* What a shared cluster adds: why it ended, who holds it, its limit, where its output goes, and
 * a task whose output was cut at its node's cap. */
Test(job_view, page_held_timed_out_truncated) {
        json_t *j = load("{\"id\": 4, \"name\": \"n\", \"user\": \"ann\", \"weight\": 1, \"state\": \"timeout\","
                         " \"reason\": \"a task of phase 0 reached the time limit of 2 s\", \"held_by\": \"root (administrator)\","
                         " \"held_ms\": null, \"time_limit_s\": 90, \"output\": \"/home/ann/%j.out\", \"error\": null,"
                         " \"requeues\": 2, \"phases\": [{\"index\": 0, \"name\": \"p\", \"tasks\": ["
                         "   {\"id\": \"4.0.0.0\", \"state\": \"timeout\", \"error\": \"time limit of 2 s reached\","
                         "    \"output_dropped_bytes\": 2048}]}]}");
        char *out = render(job_view_print, j);

        cr_expect(strstr(out, "  State:       timeout\n  Reason:      a task of phase 0 reached the time limit of 2 s\n"
                              "  Held:        by root (administrator) since -\n"), "%s", out);
        cr_expect(strstr(out, "  Time limit:  1m30s\n  Output:      /home/ann/%j.out\n  Error:       with the output\n"
                              "  Requeued:    2\n"), "%s", out);
        cr_expect(strstr(out, "time limit of 2 s reached; output truncated, 2KiB not written"), "%s", out);
        free(out);
        json_decref(j);
}

/* A job waiting for others: each dependency with its state and its job's on the page; "jobs"
 * says why the scheduler leaves a queued job out (held, or a dependency still waiting). */
Test(job_view, dependencies) {
        json_t *j = load("{\"id\": 9, \"name\": \"n\", \"state\": \"queued\", \"held_by\": null,"
                         " \"scheduler\": null, \"dependency\": \"afterok:7,afterany:8\", \"dependencies\": ["
                         "   {\"type\": \"afterok\", \"job\": 7, \"state\": \"met\", \"job_state\": \"succeeded\"},"
                         "   {\"type\": \"afterany\", \"job\": 8, \"state\": \"waiting\", \"job_state\": \"running\"}],"
                         " \"phases\": []}");
        char *out = render(job_view_print, j);
        cr_expect(strstr(out, "  State:       queued\n  Depends on:  afterok:7 met (job 7 succeeded), afterany:8 waiting "
                              "(job 8 running)\n  User:"), "%s", out);
        free(out);
        cr_assert_str_eq(job_view_sched_state(j), "dependency");
        json_object_set_new(j, "held_by", json_string("ann"));
        cr_assert_str_eq(job_view_sched_state(j), "held");
        json_object_set_new(j, "held_by", json_null());
        json_object_set_new(json_array_get(json_object_get(j, "dependencies"), 1), "state", json_string("met"));
        cr_assert_null(job_view_sched_state(j), "every dependency met: nothing to say before the scheduler sees it");
        json_object_set_new(j, "scheduler", json_pack("{s:s}", "state", "training"));
        cr_assert_str_eq(job_view_sched_state(j), "training");
        json_object_set_new(j, "scheduler", json_null());
        json_object_set_new(j, "state", json_string("cancelled"));
        json_object_set_new(json_array_get(json_object_get(j, "dependencies"), 1), "state", json_string("never"));
        cr_assert_null(job_view_sched_state(j));
        json_object_set_new(j, "dependencies", json_array());
        cr_assert_null(job_view_dependencies(j), "no dependency: no line");
        json_decref(j);
}

Test(job_view, page) {
        json_t *j = load(job_json);
        char *out = render(job_view_print, j);

        cr_assert_str_eq(out,
                         "Job 8 (word?[2Jcount)\n"
                         "  State:       failed\n"
                         "  User:        ann\n"
                         "  Weight:      1\n"
                         "  Time limit:  none\n"
                         "  Output:      the node's default file (cgorchctl logs)\n"
                         "  Error:       with the output\n"
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
                         "  Pids/task:   512\n"
                         "\n"
                         "ID       STATE   NODE  EXIT  CPU_S  PEAK_MEM  PROGRESS  ERROR\n"
                         "8.0.0.0  failed  n1    3      5.01     64MiB      100%  -\n"
                         "8.0.1.0  lost    n2    -         -         -         -  node n2 lost?really\n");
        free(out);
        json_decref(j);
}

/* Another user's job, as the controller shows it to a user (--private-data): argv is null. */
Test(job_view, private_command) {
        json_t *j = load(job_json);
        json_object_set_new(json_array_get(json_object_get(j, "phases"), 0), "argv", json_null());
        char *out = render(job_view_print, j);
        cr_assert(strstr(out, "  Command:     (private: another user's job)\n"), "%s", out);
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

Test(job_view, queue_order_and_sched_columns) {
        json_t *jobs = load("[{\"id\": 1, \"scheduler\": null},"
                            " {\"id\": 2, \"scheduler\": {\"rank\": 2, \"size_kind\": \"initial\", \"estimated_size_s\": 60,"
                            "  \"virtual_size_s\": 41.25}},"
                            " {\"id\": 3, \"scheduler\": {\"rank\": 0, \"size_kind\": \"final\", \"estimated_size_s\": 5}},"
                            " {\"id\": 4, \"scheduler\": {\"rank\": 1, \"size_kind\": \"tiny\", \"estimated_size_s\": 0,"
                            "  \"virtual_size_s\": 0}},"
                            " {\"id\": 5}]");
        char b[FORMAT_MAX];
        /* Ranked by rank; no scheduler, rank 0 (done) or none at all: after every ranked job. */
        static const int64_t want[] = { INT64_MAX, 2, INT64_MAX, 1, INT64_MAX };

        for (size_t i = 0; i < 5; i++)
                cr_assert_eq(job_view_queue_rank(json_array_get(jobs, i)), want[i], "job %zu", i + 1);
        cr_assert_str_eq(job_view_sched_size(json_array_get(jobs, 1), b), "~60.0");
        cr_assert_str_eq(job_view_sched_virtual(json_array_get(jobs, 1), b), "41.2");
        cr_assert_str_eq(job_view_sched_size(json_array_get(jobs, 2), b), "5.0");
        cr_assert_str_eq(job_view_sched_size(json_array_get(jobs, 3), b), "tiny");
        cr_assert_null(job_view_sched_size(json_array_get(jobs, 0), b));
        cr_assert_null(job_view_sched_virtual(json_array_get(jobs, 4), b));
        json_decref(jobs);
}

static const char training_job_json[] =
        "{\"id\": 9, \"name\": \"ten\", \"user\": null, \"weight\": 1, \"state\": \"running\","
        " \"submitted_ms\": null, \"started_ms\": null, \"finished_ms\": null, \"response_s\": null,"
        " \"tasks_total\": 10, \"tasks_done\": 1, \"progress\": 0.2, \"cpu_s\": 20, \"memory_peak_bytes\": 1048576,"
        " \"scheduler\": {\"phase\": 0, \"rank\": 2, \"state\": \"training\", \"size_kind\": \"initial\","
        "  \"estimated_size_s\": 30, \"virtual_size_s\": 12.5, \"virtual_share_cpus\": 1, \"late\": false, \"weight\": 1,"
        "  \"estimate\": {\"tasks\": 10, \"training_tasks\": 2, \"training_timeout_s\": 60, \"xi\": 1, \"s0_s\": 60,"
        "   \"initial_from\": \"history\", \"initial_size_s\": 30, \"history_tasks\": 4, \"history_mean_task_s\": 3,"
        "   \"initial_ms\": null, \"final_size_s\": null, \"final_ms\": null, \"training_mean_task_s\": null,"
        "   \"training\": [{\"index\": 0, \"state\": \"succeeded\", \"cpu_s\": 4, \"progress\": 1, \"finished\": true,"
        "     \"elapsed_s\": 8, \"size_s\": 4},"
        "    {\"index\": 1, \"state\": \"running\", \"cpu_s\": 2, \"progress\": 0.25, \"finished\": false,"
        "     \"elapsed_s\": 30, \"size_s\": 8}]}},"
        " \"phases\": []}";

Test(job_view, page_explains_the_size_estimate) {
        json_t *j = load(training_job_json);
        char *out = render(job_view_print, j);

        cr_assert_str_eq(out,
                         "Job 9 (ten)\n"
                         "  State:       running\n"
                         "  User:        -\n"
                         "  Weight:      1\n"
                         "  Time limit:  none\n"
                         "  Output:      the node's default file (cgorchctl logs)\n"
                         "  Error:       with the output\n"
                         "  Submitted:   -\n"
                         "  Started:     -\n"
                         "  Finished:    -\n"
                         "  Response:    -\n"
                         "  Tasks done:  1/10\n"
                         "  Progress:    20%\n"
                         "  CPU time:    20.0s\n"
                         "  Peak memory: 1MiB\n"
                         "\n"
                         "Scheduler\n"
                         "  Rank:        2\n"
                         "  State:       training\n"
                         "  Size:        ~30.0 CPU-s (initial)\n"
                         "  Virtual:     12.5 CPU-s left, share 1 CPUs\n"
                         "\n"
                         "Size estimate (phase 0, CPU-seconds)\n"
                         "  Initial:     S_i = n·ξ·s̄ = 10·1·3.00 = 30.0 (s̄ over 4 finished task(s))\n"
                         "  Training:    t = 2 tasks, Δ = 60s: 2 started, 1 finished; S_f is set once each has finished or run Δ\n"
                         "  Final:       not yet\n"
                         "\n"
                         "TASK  STATE        RAN  CPU_S  PROGRESS  SIZE_S\n"
                         "0     succeeded   8.0s   4.00      100%    4.00\n"
                         "1     running    30.0s   2.00       25%    8.00\n");
        free(out);

        /* Once set: S_f, and no more "not yet". */
        json_t *est = json_object_get(json_object_get(j, "scheduler"), "estimate");
        json_object_set_new(est, "final_size_s", json_real(48));
        json_object_set_new(est, "training_mean_task_s", json_real(6));
        out = render(job_view_print, j);
        cr_assert_not_null(strstr(out, "  Final:       S_f = s̄·[(n − t) + Σ(1 − p_k)] = 48.0 with s̄ = 6.00 from the "
                                       "t = 2 training tasks; set once, at -\n"), "%s", out);
        cr_assert_null(strstr(out, "not yet"));
        free(out);

        /* Sized from its job's previous phase: S_i from that phase's mean task. */
        json_object_set_new(est, "initial_from", json_string("job"));
        json_object_set_new(est, "job_mean_task_s", json_real(3));
        out = render(job_view_print, j);
        cr_assert_not_null(strstr(out, "  Initial:     S_i = n·ξ·m = 10·1·3.00 = 30.0 (m: the mean task of the job's "
                                       "previous phase)\n"), "%s", out);
        free(out);
        /* Fewer tasks than t: final at once. */
        json_object_set_new(est, "tasks", json_integer(1));
        json_object_set_new(est, "initial_size_s", json_real(3));
        out = render(job_view_print, j);
        cr_assert_not_null(strstr(out, "  From job:    n·ξ·m = 1·1·3.00 = 3.0, m the mean task of the job's previous "
                                       "phase; 1 task(s) < t = 2: final, no training\n"), "%s", out);
        cr_assert_null(strstr(out, "Training:"), "%s", out);
        free(out);
        json_decref(j);
}

/* A task with a speculative copy: both attempts in the table, the copy's progress marked as
 * estimated from its CPU-seconds, and under the table what it copies, why and who won. */
Test(job_view, speculative_copies) {
        json_t *j = load("{\"id\": 5, \"name\": \"n\", \"state\": \"succeeded\", \"phases\": [{\"index\": 0, \"name\": \"p\","
                         " \"tasks\": ["
                         "   {\"id\": \"5.0.0.0\", \"state\": \"cancelled\", \"node\": \"n1\", \"progress\": 0.25,"
                         "    \"progress_source\": \"cpu\", \"error\": \"stopped: attempt 5.0.0.1 succeeded first\","
                         "    \"copy_of\": null, \"speculation\": null},"
                         "   {\"id\": \"5.0.0.1\", \"state\": \"succeeded\", \"node\": \"n2\", \"progress\": 1,"
                         "    \"progress_source\": \"task\", \"copy_of\": \"5.0.0.0\","
                         "    \"speculation\": \"late: longest time left 30 s\"},"
                         "   {\"id\": \"5.0.1.0\", \"state\": \"succeeded\", \"node\": \"n2\", \"progress\": 1}]}]}");
        char *out = render(job_view_print, j);

        cr_expect(strstr(out, "~25%"), "%s", out);
        cr_expect(strstr(out, "  Speculative copies:\n    5.0.0.1 copies 5.0.0.0 on n2: late: longest time left 30 s;"
                              " won by 5.0.0.1 (the copy)\n"), "%s", out);
        cr_expect(!strstr(out, "5.0.1.0 copies"), "%s", out);
        free(out);
        json_decref(j);
}
