/* no-uring — runs a command with io_uring refused (EPERM), as Docker's
 * default seccomp profile and many container runtimes do:
 *
 *   no-uring node script.js ...           io_uring_setup, _enter and
 *                                         _register refused
 *   no-uring --enter node script.js ...   only io_uring_enter refused: a
 *                                         ring is made, its first
 *                                         submission fails
 *
 * Installs a seccomp BPF filter (no privileges needed: no_new_privs first)
 * that answers those system calls with EPERM and allows everything else,
 * then execs the command. Built by __test__/core/uring.test.js with the
 * system's cc. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NO_URING_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NO_URING_ARCH AUDIT_ARCH_AARCH64
#else
#error "no-uring: add this architecture's AUDIT_ARCH"
#endif

/* The same numbers on every architecture. */
#define NR_IO_URING_SETUP 425
#define NR_IO_URING_ENTER 426
#define NR_IO_URING_REGISTER 427

int main(int argc, char **argv) {
    int first = 1;
    unsigned lowest = NR_IO_URING_SETUP, highest = NR_IO_URING_REGISTER;
    if (argc > 1 && strcmp(argv[1], "--enter") == 0) {
        lowest = highest = NR_IO_URING_ENTER;
        first = 2;
    }
    if (argc <= first) {
        fprintf(stderr, "usage: no-uring [--enter] command [args...]\n");
        return 2;
    }
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NO_URING_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, lowest, 0, 2),
        BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, highest, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = sizeof(filter) / sizeof(filter[0]), .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("no-uring: PR_SET_NO_NEW_PRIVS");
        return 1;
    }
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("no-uring: PR_SET_SECCOMP");
        return 1;
    }
    execvp(argv[first], argv + first);
    perror("no-uring: exec");
    return 127;
}
