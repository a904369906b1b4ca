/* test-stop-guard.c: SIGTERM and SIGINT end a process whose event loop is stuck
 * (common/stop-guard.c), and leave alone one whose loop takes them. Each case runs in a
 * child, whose end the test observes. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stop-guard.h"

static double monotonic_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* A child that blocks SIGTERM and SIGINT as the controller does, starts the guard, sends
 * itself sig, and then either busy-loops for 10 s (a stuck callback) or takes the signal the
 * way the event loop's signalfd would; it exits 0 if it lives through that. */
static pid_t child(int sig, bool stuck) {
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid > 0)
                return pid;
        /* The default actions, as a daemon has them under systemd: a shell that starts a job in
         * the background without job control ignores SIGINT in it, and then nothing ends it. */
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                _exit(10);
        StopGuard *g;
        if (stop_guard_start(500, &g) < 0)
                _exit(11);
        if (kill(getpid(), sig) < 0)
                _exit(12);
        if (stuck) {
                volatile unsigned long spin = 0;
                for (double end = monotonic_s() + 10; monotonic_s() < end;)
                        spin++;
                _exit(13);
        }
        struct timespec wait = { .tv_sec = 1 };
        if (sigtimedwait(&mask, NULL, &wait) != sig)
                _exit(14);
        /* Alive well past the grace period: the guard saw no signal left waiting. */
        sleep(2);
        (void) stop_guard_stop(g);
        _exit(0);
}

static int wait_status(pid_t pid, double *ret_s) {
        double start = monotonic_s();
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        *ret_s = monotonic_s() - start;
        return status;
}

Test(stop_guard, sigterm_ends_a_stuck_loop) {
        double s;
        int status = wait_status(child(SIGTERM, true), &s);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %#x", status);
        cr_assert_lt(s, 8, "took %.1f s for a 0.5 s grace period", s);
}

Test(stop_guard, sigint_ends_a_stuck_loop) {
        double s;
        int status = wait_status(child(SIGINT, true), &s);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT, "status %#x", status);
}

Test(stop_guard, a_loop_that_takes_the_signal_is_left_alone) {
        double s;
        int status = wait_status(child(SIGTERM, false), &s);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
}
