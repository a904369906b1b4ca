/* lease-hold.c: for test-start-stall.sh and test-start-fence.sh — holds a write lease on FILE
 * and never gives it back, as a hostile user may on their own executable: every open of the
 * file, an exec's too, waits until the kernel breaks the lease itself (fs.lease-break-time, 45 s
 * by default). It ignores SIGIO, the kernel's request to give the lease back, creates READY once
 * it holds the lease, and sleeps until it is killed, which gives the lease back (its descriptor
 * closes) and lets the waiting exec go on. Usage: lease-hold FILE READY */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
        int fd, ready;

        if (argc != 3) {
                fprintf(stderr, "usage: %s FILE READY\n", argv[0]);
                return 2;
        }
        signal(SIGIO, SIG_IGN);
        fd = open(argv[1], O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fcntl(fd, F_SETLEASE, F_WRLCK) < 0) {
                perror(argv[1]);
                return 1;
        }
        ready = open(argv[2], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (ready < 0) {
                perror(argv[2]);
                return 1;
        }
        close(ready);
        for (;;)
                pause();
}
