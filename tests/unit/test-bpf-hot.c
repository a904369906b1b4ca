/* test-bpf-hot.c: the agent's side of the BPF hot counters that needs no kernel — records found
 * by cgroup id whatever order the walk gave them in, where the loader helper is looked for, and
 * a helper that fails or says nothing. (The iterator on real cgroups: test-agent-bpf.sh.) */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf-hot.h"
#include "macro.h"

static HotCountersRecord rec(uint64_t id, uint64_t cpu) {
        return (HotCountersRecord) { .id = id, .cpu_ns = cpu, .memory_pages = HOT_COUNTERS_NONE };
}

Test(bpf_hot, finds_records_in_walk_order) {
        /* Children made one after another: ids ascending, the walk's order. */
        HotCountersRecord r[] = { rec(10, 1), rec(11, 2), rec(40, 3), rec(41, 4) };

        bpf_hot_records_index(r, ELEMENTSOF(r));
        cr_expect_eq(r[0].id, 10, "still ordered by id");
        for (size_t i = 0; i < ELEMENTSOF(r); i++) {
                const HotCountersRecord *f = bpf_hot_records_find(r, ELEMENTSOF(r), r[i].id);
                cr_assert(f);
                cr_expect_eq(f->cpu_ns, i + 1);
        }
        cr_expect_null(bpf_hot_records_find(r, ELEMENTSOF(r), 12));
        cr_expect_null(bpf_hot_records_find(r, ELEMENTSOF(r), 9));
        cr_expect_null(bpf_hot_records_find(r, ELEMENTSOF(r), 42));
        cr_expect_null(bpf_hot_records_find(r, 0, 10));
}

Test(bpf_hot, sorts_a_walk_out_of_order) {
        /* Ids wrap or a cgroup was made again under an old name: the walk is not ascending. */
        HotCountersRecord r[200];

        for (size_t i = 0; i < ELEMENTSOF(r); i++)
                r[i] = rec((i * 7919) % 1009 + 1, i);
        bpf_hot_records_index(r, ELEMENTSOF(r));
        for (size_t i = 1; i < ELEMENTSOF(r); i++)
                cr_assert_lt(r[i - 1].id, r[i].id);
        for (size_t i = 0; i < ELEMENTSOF(r); i++) {
                const HotCountersRecord *f = bpf_hot_records_find(r, ELEMENTSOF(r), (i * 7919) % 1009 + 1);
                cr_assert(f);
                cr_expect_eq(f->cpu_ns, i);
        }
}

Test(bpf_hot, helper_path_falls_back_to_the_install_dir) {
        /* The test binary has no cgorch-agent-bpf next to it. */
        _cleanup_free_ char *p = bpf_hot_helper_path("/usr/libexec/cgorch");

        cr_assert(p);
        cr_expect_str_eq(p, "/usr/libexec/cgorch/cgorch-agent-bpf");
}

Test(bpf_hot, a_helper_that_fails_changes_nothing) {
        int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), before, after;
        char *error = NULL;
        BpfHot *h = NULL;

        cr_assert_geq(fd, 0);
        before = dup(0);
        close(before);
        cr_expect_eq(bpf_hot_new("/nonexistent/cgorch-agent-bpf", &fd, 1, 1000, &h, &error), -ENOENT);
        /* Exits without a word. */
        cr_expect_eq(bpf_hot_new("/bin/false", &fd, 1, 5000, &h, &error), -ECONNRESET);
        cr_expect_null(h);
        cr_expect_null(error);
        cr_expect_eq(bpf_hot_new("/bin/false", &fd, 0, 5000, &h, &error), -EINVAL);
        /* No descriptor left behind. */
        after = dup(0);
        close(after);
        cr_expect_eq(before, after);
        close(fd);
}
