# cython: language_level=3
"""Start a program without copying the daemon's page tables: `vfork` + `execve` (Linux).

A `fork` copies the page tables of the whole daemon (milliseconds at a few hundred MB, growing with it), and the
forked Python child then touches its copy-on-write heap before it reaches `exec`. Here the child borrows the
parent's memory until `execve` and runs only system calls in C: every signal to its default, joining the CLIs'
cgroup (`serve --cli-cgroup`), `setsid`, its nice and its session group's (`serve --cli-nice`), take the
terminal as its controlling TTY, `dup2` stdio, close every other fd, `chdir`, `PR_SET_PDEATHSIG`, `execve`.
An error in any step is written to memory the parent reads once the child has gone (vfork shares it), and the
child is reaped. Elsewhere than Linux `available()` is False and the caller keeps its fork-based path.
"""

from libc.stdlib cimport free, malloc
from libc.string cimport strerror
from cpython.bytes cimport PyBytes_AS_STRING

cdef extern from *:
    """
    #if defined(__linux__)
    #ifndef _GNU_SOURCE
    #define _GNU_SOURCE
    #endif
    #include <errno.h>
    #include <fcntl.h>
    #include <signal.h>
    #include <sys/ioctl.h>
    #include <sys/prctl.h>
    #include <sys/resource.h>
    #include <sys/syscall.h>
    #include <sys/types.h>
    #include <sys/wait.h>
    #include <unistd.h>
    #ifndef SYS_close_range
    #define SYS_close_range 436  /* the same number on every architecture that has it (kernel 5.9+) */
    #endif
    #define LB_SPAWN_AVAILABLE 1

    /* What the child reports through the shared memory of vfork: errno and the step that failed. */
    struct lb_spawn_err { volatile int err; volatile int step; volatile int cgroup_err; };

    /* Every fd >= 3 listed in /proc/self/fd closed, read with getdents64 (system calls only: safe after vfork).
       -> 0, or -1 where the folder cannot be read. */
    static int lb_close_listed(void) {
        int dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) return -1;
        char buf[4096] __attribute__((aligned(8)));
        for (;;) {
            long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
            if (n <= 0) { close(dfd); return n < 0 ? -1 : 0; }
            for (long off = 0; off < n;) {
                /* struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name */
                unsigned short reclen = *(unsigned short *)(buf + off + 16);
                const char *p = buf + off + 19;
                int fd = 0, ok = *p != 0;
                for (; *p; p++) {
                    if (*p < '0' || *p > '9') { ok = 0; break; }
                    fd = fd * 10 + (*p - '0');
                }
                if (ok && fd >= 3 && fd != dfd) close(fd);
                off += reclen;
            }
        }
    }

    static void lb_close_from_3(void) {
        if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0) return;
        /* an old kernel: the fds /proc lists, else one by one up to the soft limit (capped, as ptyprocess); the
           daemon's raised limit can be a million, and a million close() calls take a fifth of a second */
        if (lb_close_listed() == 0) return;
        struct rlimit rl;
        long top = 1048576;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (long)rl.rlim_cur < top)
            top = (long)rl.rlim_cur;
        for (long fd = 3; fd < top; fd++) close((int)fd);
    }

    #define LB_KEEP_NICE (-1000)

    /* The soft open-file limit a child gets back before its exec (`pty.limits`), or -1: the daemon's own. */
    static long long lb_child_nofile = -1;
    static void lb_set_child_nofile(long long soft) { lb_child_nofile = soft; }

    /* The child's own session group (a new autogroup since its setsid) at nice `value`: best effort, as a
       kernel without autogroup, or a container whose CPU group is a cgroup's, has no such file to write. */
    static void lb_group_nice(int value) {
        char buf[8];
        int n = 0;
        unsigned v = value < 0 ? (unsigned)-value : (unsigned)value;
        char digits[8];
        int d = 0;
        do { digits[d++] = (char)('0' + v % 10); v /= 10; } while (v && d < 7);
        if (value < 0) buf[n++] = '-';
        while (d) buf[n++] = digits[--d];
        int fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
        if (fd < 0) return;
        if (write(fd, buf, (size_t)n) < 0) {}
        close(fd);
    }

    /* The calling process into the cgroup whose `cgroup.procs` `fd` is open on: its pid in decimal, one write.
       -> 0, or the errno of a refused move (the child then runs on in the daemon's group; the parent logs it). */
    static int lb_join_cgroup(int fd) {
        char digits[16], buf[16];
        unsigned long v = (unsigned long)getpid();
        int d = 0, n = 0;
        do { digits[d++] = (char)('0' + v % 10); v /= 10; } while (v && d < 15);
        while (d) buf[n++] = digits[--d];
        return write(fd, buf, (size_t)n) < 0 ? errno : 0;
    }

    /* Runs in the vfork child on the parent's stack: system calls only, never returns. */
    static __attribute__((noreturn, noinline)) void lb_child(
        const char *path, char *const argv[], char *const envp[], const char *cwd,
        int fd0, int fd1, int fd2, int ctty, int pdeathsig, pid_t parent,
        int nice, int group_nice, int cgroup_fd, const sigset_t *mask, struct lb_spawn_err *out)
    {
        int step = 1;
        struct sigaction dfl, old;
        dfl.sa_handler = SIG_DFL;
        dfl.sa_flags = 0;
        sigemptyset(&dfl.sa_mask);
        /* the daemon's handlers must not run in here (they would write to its memory), and what the daemon
           ignores must not stay ignored: a daemon started in the background by a shell ignores SIGINT and
           SIGQUIT, and a CLI inheriting that would never see the Ctrl-C typed into its terminal */
        for (int sig = 1; sig < NSIG; sig++) {
            if (sig == SIGKILL || sig == SIGSTOP) continue;
            if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_DFL)
                sigaction(sig, &dfl, NULL);
        }
        if (pthread_sigmask(SIG_SETMASK, mask, NULL) != 0) goto fail;
        step = 2;
        if (setsid() < 0) goto fail;
        step = 3;
        if (ctty >= 0 && ioctl(ctty, TIOCSCTTY, 0) < 0) goto fail;
        /* into the CLIs' cgroup (`serve --cli-cgroup`) as late as its fd allows: the dup2s below may land on it */
        if (cgroup_fd >= 0) out->cgroup_err = lb_join_cgroup(cgroup_fd);
        step = 4;
        if (dup2(fd0, 0) < 0 || dup2(fd1, 1) < 0 || dup2(fd2, 2) < 0) goto fail;
        lb_close_from_3();  /* under the daemon's raised limit: its fallback closes up to it */
        if (lb_child_nofile >= 0) {  /* best effort: a refusal keeps the daemon's limit */
            struct rlimit rl;
            if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > (rlim_t)lb_child_nofile) {
                rl.rlim_cur = (rlim_t)lb_child_nofile;
                setrlimit(RLIMIT_NOFILE, &rl);
            }
        }
        step = 5;
        if (cwd != NULL && chdir(cwd) < 0) goto fail;
        step = 6;
        if (pdeathsig > 0) {
            if (prctl(PR_SET_PDEATHSIG, pdeathsig, 0, 0, 0) < 0) goto fail;
            if (getppid() != parent) { errno = ESRCH; goto fail; }  /* the daemon died before the prctl */
        }
        /* lowered before it runs any of its own code, not a moment after the parent got its pid back: a burst of
           starting CLIs never competes with the daemon at its priority. Last, right before the exec: the parent
           waits for the exec, and a child lowered earlier waits longer for a CPU on a saturated machine (best
           effort: a failure keeps the nice) */
        if (nice != LB_KEEP_NICE) setpriority(PRIO_PROCESS, 0, nice);
        if (group_nice != LB_KEEP_NICE) lb_group_nice(group_nice);
        step = 7;
        execve(path, argv, envp);
    fail:
        out->err = errno;
        out->step = step;
        _exit(127);
    }

    /* -> the child's pid, or -1 with *err (errno) and *step set; a child that failed is reaped. The fds are
       >= 3 (the caller makes sure) so the dup2s cannot clobber one another. */
    static pid_t lb_spawn(
        const char *path, char *const argv[], char *const envp[], const char *cwd,
        int fd0, int fd1, int fd2, int ctty, int pdeathsig, int nice, int group_nice, int cgroup_fd, int *err,
        int *step, int *cgroup_err)
    {
        struct lb_spawn_err out;
        sigset_t all, old;
        pid_t parent = getpid();
        out.err = 0;
        out.step = 0;
        out.cgroup_err = 0;
        sigfillset(&all);
        if (pthread_sigmask(SIG_SETMASK, &all, &old) != 0) { *err = errno; *step = 0; return -1; }
        pid_t pid = vfork();
        if (pid == 0)
            lb_child(
                path, argv, envp, cwd, fd0, fd1, fd2, ctty, pdeathsig, parent, nice, group_nice, cgroup_fd, &old, &out
            );
        int fork_errno = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (pid < 0) { *err = fork_errno; *step = 0; return -1; }
        *cgroup_err = out.cgroup_err;
        if (out.err != 0) {
            int status;
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            *err = out.err;
            *step = out.step;
            return -1;
        }
        return pid;
    }
    #else
    #include <errno.h>
    #define LB_SPAWN_AVAILABLE 0
    #define LB_KEEP_NICE (-1000)
    static void lb_set_child_nofile(long long soft) { (void)soft; }
    static int lb_close_listed(void) { return -1; }
    static long lb_spawn(
        const char *path, char *const argv[], char *const envp[], const char *cwd,
        int fd0, int fd1, int fd2, int ctty, int pdeathsig, int nice, int group_nice, int cgroup_fd, int *err,
        int *step, int *cgroup_err)
    {
        *err = ENOSYS;
        *step = 0;
        return -1;
    }
    #endif
    """
    int LB_SPAWN_AVAILABLE
    int LB_KEEP_NICE
    void lb_set_child_nofile(long long soft)
    int lb_close_listed()
    long lb_spawn(
        const char *path, char **argv, char **envp, const char *cwd,
        int fd0, int fd1, int fd2, int ctty, int pdeathsig, int nice, int group_nice, int cgroup_fd, int *err,
        int *step, int *cgroup_err
    ) nogil


STEPS = (
    "vfork",
    "restoring the signal mask",
    "setsid",
    "taking the controlling terminal",
    "dup2 of stdin/stdout/stderr",
    "chdir to the working directory",
    "setting the parent-death signal",
    "exec",
)


def available() -> bool:
    """True where `spawn` works (Linux)."""
    return bool(LB_SPAWN_AVAILABLE)


def set_child_open_files(long long soft) -> None:
    """The soft open-file limit every child started from now on gets before its exec (-1: the daemon's own)."""
    lb_set_child_nofile(soft)


def close_listed() -> int:
    """Close every fd >= 3 of this process that /proc/self/fd lists: the spawner's fallback where the kernel has
    no `close_range` (for tests, in a forked child). -> 0, or -1 where the folder cannot be read."""
    return lb_close_listed()


cdef char **_cstrings(list items) except NULL:
    """A NULL-terminated char* array pointing into `items` (bytes, kept alive by the caller)."""
    cdef Py_ssize_t i, n = len(items)
    cdef char **out = <char **>malloc((n + 1) * sizeof(char *))
    if out == NULL:
        raise MemoryError()
    for i in range(n):
        out[i] = PyBytes_AS_STRING(items[i])
    out[n] = NULL
    return out


def spawn(
    bytes path,
    list argv,
    list env,
    object cwd,
    int stdin_fd,
    int stdout_fd,
    int stderr_fd,
    int ctty_fd=-1,
    int pdeathsig=0,
    object nice=None,
    object group_nice=None,
    int cgroup_fd=-1,
) -> int:
    """Start `path` with `argv` and `env` (lists of bytes, env as b"NAME=value") in a new session, the three fds
    as its stdin/stdout/stderr (each >= 3), `ctty_fd` (a terminal's slave, or -1) as its controlling terminal,
    nothing else open, in `cwd` (bytes or None), `pdeathsig` (0: none) sent to it when the calling thread dies,
    at nice `nice` and with its session's autogroup at nice `group_nice` (None: as inherited), moved into the cgroup
    whose `cgroup.procs` `cgroup_fd` is open on (-1: none; all three best effort, a refused move logged).
    Returns the pid once the program has been exec'd; raises OSError naming the step that failed."""
    for fd in (stdin_fd, stdout_fd, stderr_fd):
        if fd < 3:
            raise ValueError(f"fd {fd} would be clobbered by the child's dup2s: pass fds >= 3")
    for item in argv:
        if not isinstance(item, bytes) or b"\0" in item:
            raise ValueError("argv items must be bytes without NUL")
    for item in env:
        if not isinstance(item, bytes) or b"\0" in item or b"=" not in item:
            raise ValueError("env items must be bytes NAME=value without NUL")
    if b"\0" in path or (cwd is not None and (not isinstance(cwd, bytes) or b"\0" in cwd)):
        raise ValueError("path and cwd must be bytes without NUL")
    cdef char **c_argv = _cstrings(argv)
    cdef char **c_env = NULL
    cdef const char *c_path = PyBytes_AS_STRING(path)
    cdef const char *c_cwd = NULL if cwd is None else PyBytes_AS_STRING(cwd)
    cdef int err = 0, step = 0, cgroup_err = 0
    cdef int c_nice = LB_KEEP_NICE if nice is None else int(nice)
    cdef int c_group = LB_KEEP_NICE if group_nice is None else int(group_nice)
    cdef long pid
    try:
        c_env = _cstrings(env)
        with nogil:
            pid = lb_spawn(
                c_path, c_argv, c_env, c_cwd, stdin_fd, stdout_fd, stderr_fd, ctty_fd, pdeathsig, c_nice, c_group,
                cgroup_fd, &err, &step, &cgroup_err
            )
    finally:
        free(c_argv)
        free(c_env)
    if pid < 0:
        what = STEPS[step] if 0 <= step < len(STEPS) else f"step {step}"
        raise OSError(err, f"{strerror(err).decode('utf-8', 'replace')} ({what})")
    if cgroup_err:
        from litbridge.pty import cgroup

        cgroup.refused(pid, cgroup_err)
    return pid
