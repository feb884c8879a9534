/* The native launcher's spawn and wait step in C (optional: native.py runs without it).
 *
 * Why hand-written C and not Python: a sandbox's /bin/true cost its runner ~300 us of Python
 * around ~90 us of fork/exec (docs/notes/issue-13.md, session 13): the fork_exec call's
 * arguments, its exec-error pipe, the RLIMIT_DATA cap set from outside after the exec (two
 * prlimits and a statm read), pidfd_open, the niceness, then a poll object per round of the
 * wait. Here one call does the child's whole set-up between a vfork-style clone and execve
 * (where every limit is set before the program's first instruction, so the cap has no race
 * to close afterwards), and one call does a round of the wait. No library offers this
 * (posix_spawn has no umask, rlimits or niceness; _posixsubprocess no rlimits and an
 * error pipe); cffi/ctypes would bring the Python cost back.
 *
 * spawn(exe, argv, env, cwd, stdin, stdout, stderr, pgid, umask, nice, restore_signals,
 *       ignore, caps, rlimits, closed, moves) -> (pid, pidfd)
 *   exe: bytes (execve's path, already resolved); argv: list of str/bytes; env: dict of
 *   str/bytes (a name holding "=" or anything holding a NUL: ValueError, before the clone);
 *   cwd: str/bytes or None; stdin/stdout/stderr: fds here (>= 0); pgid: -1 leave, 0 lead a new
 *   group, > 0 join, -2 lead a new session, -3 a new session whose controlling terminal is
 *   the pty on fd 1; umask: -1 leave; nice: 0 leave, else setpriority before exec; ignore:
 *   signals the program starts with ignored; caps: ((resource, value), ...) lowered to at most
 *   value, soft and hard (a lower limit already in place stays); rlimits: ((resource, soft,
 *   hard), ...) set after the caps, failures ignored (the shell's `ulimit`); closed: of 0-2,
 *   closed after the placement; moves: ((target, source), ...) extra descriptors.
 *   Every other descriptor above 2 is close-on-exec in the child.
 *   Errors as subprocess.Popen raises them: OSError(errno, strerror, exe) when execve fails,
 *   OSError(errno, strerror, cwd) when the set-up before it fails (chdir, setpgid: Popen's
 *   "noexec"); the clone's own EAGAIN as BlockingIOError. pidfd is -1 without pidfd_open.
 *
 * wait_step(pidfds, outs, extra, timeout_ms, bufsize) -> (exited, data, ready)
 *   Polls every pidfd, output pipe and extra fd (GIL released) until something needs the
 *   caller: output read (each readable pipe is read once, up to bufsize), an extra fd
 *   readable, every child ended, timeout_ms gone (-1: no limit) or a signal (EINTR).
 *   exited = indices into pidfds of the children that ended (the caller reaps them), data =
 *   [(fd, bytes)] with b"" for a pipe at its end (no longer polled; the caller closes it),
 *   ready = the extra fds readable. Ends of file and ended children alone do not return
 *   while other children run and time is left: a /bin/true is one call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#define CLOSE_RANGE_CLOEXEC_ (1U << 2)

#define CHILD_STACK (64 * 1024)
#define MAX_LIST 64

struct cap { int res; rlim_t value; };
struct rl { int res; rlim_t soft, hard; };

struct child {
    const char *exe;
    char **argv;
    char **envp;
    const char *cwd;
    int fd0, fd1, fd2;
    int pgid, umask, nice, restore;
    int ignore[MAX_LIST]; int nignore;
    struct cap caps[MAX_LIST]; int ncaps;
    struct rl rls[MAX_LIST]; int nrls;
    int closed[3]; int nclosed;
    int mt[MAX_LIST], ms[MAX_LIST]; int nmoves;
    sigset_t mask;              /* the calling thread's mask: the program's */
    volatile int err;           /* written by the child (shared memory: CLONE_VM) */
    volatile int before_exec;   /* 1: the set-up failed (chdir, setpgid, ...), 0: execve */
};

static int
set_cloexec_from(int lo, int hi)
{
    /* every fd in [lo, hi] close-on-exec; hi < 0: to the end */
    if (lo > hi && hi >= 0)
        return 0;
    return (int)syscall(SYS_close_range, (unsigned)lo, hi < 0 ? ~0U : (unsigned)hi,
                        CLOSE_RANGE_CLOEXEC_);
}

static void
cloexec_slow(struct child *c)
{
    /* no close_range (a kernel before 5.11): walk /proc/self/fd with getdents64 into a
       stack buffer (no malloc here: the memory is the parent's) */
    int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d < 0) {
        long top = sysconf(_SC_OPEN_MAX);
        if (top < 0 || top > 65536)
            top = 65536;
        for (int fd = 3; fd < top; fd++) {
            int keep = 0;
            for (int i = 0; i < c->nmoves; i++)
                keep |= c->mt[i] == fd;
            if (!keep)
                fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        return;
    }
    char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, d, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            unsigned short reclen = *(unsigned short *)(buf + off + 16);
            const char *name = buf + off + 19;
            off += reclen;
            if (name[0] < '0' || name[0] > '9')
                continue;
            int fd = 0;
            for (const char *p = name; *p; p++)
                fd = fd * 10 + (*p - '0');
            if (fd <= 2 || fd == d)
                continue;
            int keep = 0;
            for (int i = 0; i < c->nmoves; i++)
                keep |= c->mt[i] == fd;
            if (!keep)
                fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
    }
    close(d);
}

static int
clear_cloexec(int fd)
{
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0)
        return -1;
    return (fl & FD_CLOEXEC) ? fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC) : 0;
}

#define FAIL() do { c->err = errno; c->before_exec = 1; _exit(255); } while (0)

static int
child_main(void *arg)
{
    struct child *c = (struct child *)arg;
    struct sigaction dfl, sa;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    /* This child shares the parent's memory until execve: no handler of the parent may run
       here, so every caught signal goes back to its default (as _posixsubprocess's and
       glibc's posix_spawn do); all are blocked until the mask is put back below. */
    for (int sig = 1; sig < _NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        if (sigaction(sig, NULL, &sa) != 0)
            continue;   /* (glibc's own signals: EINVAL) */
        if (sa.sa_handler == SIG_IGN || sa.sa_handler == SIG_DFL)
            continue;
        sigaction(sig, &dfl, NULL);
    }
    if (c->restore) {   /* Popen's restore_signals */
        signal(SIGPIPE, SIG_DFL);
#ifdef SIGXFSZ
        signal(SIGXFSZ, SIG_DFL);
#endif
    }
    for (int i = 0; i < c->nignore; i++)
        signal(c->ignore[i], SIG_IGN);   /* bash: `trap '' SIG`, an async command's INT/QUIT */

    /* 0-2 as _posixsubprocess places them (a source among 0-2 is not overwritten first) */
    int fd0 = c->fd0, fd1 = c->fd1, fd2 = c->fd2;
    if (fd1 == 0 && (fd1 = dup(fd1)) < 0)
        FAIL();
    while (fd2 == 0 || fd2 == 1)
        if ((fd2 = dup(fd2)) < 0)
            FAIL();
    if (fd0 == 0) {
        if (clear_cloexec(0) < 0)
            FAIL();
    } else if (dup2(fd0, 0) < 0)
        FAIL();
    if (fd1 == 1) {
        if (clear_cloexec(1) < 0)
            FAIL();
    } else if (dup2(fd1, 1) < 0)
        FAIL();
    if (fd2 == 2) {
        if (clear_cloexec(2) < 0)
            FAIL();
    } else if (dup2(fd2, 2) < 0)
        FAIL();
    if (c->cwd != NULL && chdir(c->cwd) < 0)
        FAIL();
    if (c->umask >= 0)
        umask((mode_t)c->umask);
    if (c->pgid >= 0 && setpgid(0, c->pgid) < 0)
        FAIL();
    if (c->pgid <= -2) {
        if (setsid() < 0)
            FAIL();
        if (c->pgid == -3)
            ioctl(1, TIOCSCTTY, 0);   /* fd 1 is a pty's slave: its controlling terminal */
    }

    /* the extra descriptors: each source first copied above every target, so one move
       never overwrites another's source (native._place_fds) */
    int top = 3;
    for (int i = 0; i < c->nmoves; i++)
        if (c->mt[i] + 1 > top)
            top = c->mt[i] + 1;
    int tmp[MAX_LIST];
    for (int i = 0; i < c->nmoves; i++)
        if ((tmp[i] = fcntl(c->ms[i], F_DUPFD_CLOEXEC, top)) < 0)
            FAIL();
    for (int i = 0; i < c->nmoves; i++)
        if (dup2(tmp[i], c->mt[i]) < 0)
            FAIL();
    for (int i = 0; i < c->nclosed; i++)
        close(c->closed[i]);   /* bash's `>&-` (its placeholder was placed above) */
    /* every other descriptor above 2: close-on-exec */
    int ok = 1;
    if (c->nmoves == 0) {
        ok = set_cloexec_from(3, -1) == 0;
    } else {
        int sorted[MAX_LIST], n = c->nmoves;
        memcpy(sorted, c->mt, sizeof(int) * n);
        for (int i = 1; i < n; i++)
            for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                int t = sorted[j]; sorted[j] = sorted[j - 1]; sorted[j - 1] = t;
            }
        int lo = 3;
        for (int i = 0; i <= n && ok; i++) {
            int hi = i < n ? sorted[i] - 1 : -1;
            if (hi < 0 || lo <= hi)
                ok = set_cloexec_from(lo, hi) == 0;
            if (i < n)
                lo = sorted[i] + 1;
        }
    }
    if (!ok)
        cloexec_slow(c);

    /* limits: the sandbox's caps first (lowered only), then the shell's ulimit */
    for (int i = 0; i < c->ncaps; i++) {
        struct rlimit cur;
        if (getrlimit(c->caps[i].res, &cur) != 0)
            FAIL();
        rlim_t v = c->caps[i].value;
        if (cur.rlim_max == RLIM_INFINITY || cur.rlim_max > v)
            cur.rlim_max = v;
        if (cur.rlim_cur == RLIM_INFINITY || cur.rlim_cur > v)
            cur.rlim_cur = v;
        if (cur.rlim_cur > cur.rlim_max)
            cur.rlim_cur = cur.rlim_max;
        if (setrlimit(c->caps[i].res, &cur) != 0)
            FAIL();   /* a limit that cannot be set: no program starts without it */
    }
    for (int i = 0; i < c->nrls; i++) {
        struct rlimit r = {c->rls[i].soft, c->rls[i].hard};
        setrlimit(c->rls[i].res, &r);   /* above what the sandbox allows: its own stays */
    }
    if (c->nice)
        setpriority(PRIO_PROCESS, 0, c->nice);
    /* the program's mask: the caller's (handlers are defaults by now) */
    if (pthread_sigmask(SIG_SETMASK, &c->mask, NULL) != 0)
        FAIL();
    execve(c->exe, c->argv, c->envp);
    c->err = errno;
    c->before_exec = 0;
    _exit(255);
    return 0;
}

/* -- argument conversion (parent, GIL held) -------------------------------------------- */

/* A C string for a str/bytes object: its own bytes where it is ASCII or bytes, else an
   encoded copy kept alive in *keep (a list). NULs refused. */
static const char *
cstr(PyObject *o, PyObject *keep, Py_ssize_t *len)
{
    const char *s;
    Py_ssize_t n;
    if (PyUnicode_Check(o)) {
        if (PyUnicode_READY(o) < 0)
            return NULL;
        if (PyUnicode_IS_ASCII(o)) {
            s = (const char *)PyUnicode_DATA(o);
            n = PyUnicode_GET_LENGTH(o);
        } else {
            PyObject *b = PyUnicode_EncodeFSDefault(o);
            if (b == NULL)
                return NULL;
            int r = PyList_Append(keep, b);
            Py_DECREF(b);
            if (r < 0)
                return NULL;
            s = PyBytes_AS_STRING(b);
            n = PyBytes_GET_SIZE(b);
        }
    } else if (PyBytes_Check(o)) {
        s = PyBytes_AS_STRING(o);
        n = PyBytes_GET_SIZE(o);
    } else {
        PyErr_Format(PyExc_TypeError, "expected str or bytes, not %.100s",
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    if ((Py_ssize_t)strlen(s) != n) {
        PyErr_SetString(PyExc_ValueError, "embedded null byte");
        return NULL;
    }
    *len = n;
    return s;
}

static int
int_list(PyObject *seq, int *out, int max, int *n, const char *what)
{
    PyObject *f = PySequence_Fast(seq, what);
    if (f == NULL)
        return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(f);
    if (k > max) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "too many %s", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(f, i));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(f);
            return -1;
        }
        out[i] = (int)v;
    }
    *n = (int)k;
    Py_DECREF(f);
    return 0;
}

static rlim_t
as_rlim(PyObject *o)
{
    /* RLIM_INFINITY is -1 as a Python int too (resource.RLIM_INFINITY) */
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        return (rlim_t)u;
    }
    return v < 0 ? RLIM_INFINITY : (rlim_t)v;
}

/* A sequence of tuples of ``width`` into out: the first item of each an int, the others
   rlimit values (RLIM_INFINITY as -1) when ``limits``, ints otherwise. */
static int
tuples(PyObject *seq, int width, int limits, long long (*out)[3], int max, int *n,
       const char *what)
{
    PyObject *f = PySequence_Fast(seq, what);
    if (f == NULL)
        return -1;
    Py_ssize_t k = PySequence_Fast_GET_SIZE(f);
    if (k > max) {
        Py_DECREF(f);
        PyErr_Format(PyExc_ValueError, "too many %s", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(f, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != width) {
            Py_DECREF(f);
            PyErr_Format(PyExc_TypeError, "%s: tuples of %d expected", what, width);
            return -1;
        }
        for (int j = 0; j < width; j++) {
            PyObject *x = PyTuple_GET_ITEM(t, j);
            if (j == 0 || !limits) {
                long v = PyLong_AsLong(x);
                if (v == -1 && PyErr_Occurred()) {
                    Py_DECREF(f);
                    return -1;
                }
                out[i][j] = v;
            } else {
                rlim_t r = as_rlim(x);
                if (PyErr_Occurred()) {
                    Py_DECREF(f);
                    return -1;
                }
                out[i][j] = (long long)r;
            }
        }
    }
    *n = (int)k;
    Py_DECREF(f);
    return 0;
}

static PyObject *
fs_spawn(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 16) {
        PyErr_SetString(PyExc_TypeError, "spawn() takes 16 arguments");
        return NULL;
    }
    PyObject *exe_o = args[0], *argv_o = args[1], *env_o = args[2], *cwd_o = args[3];
    struct child *c = PyMem_RawCalloc(1, sizeof *c);
    if (c == NULL)
        return PyErr_NoMemory();
    PyObject *keep = PyList_New(0);
    char **argv = NULL, **envp = NULL, *envbuf = NULL;
    PyObject *result = NULL;
    long long tmp[MAX_LIST][3];
    if (keep == NULL)
        goto done;
    Py_ssize_t n;
    if ((c->exe = cstr(exe_o, keep, &n)) == NULL)
        goto done;
    if (cwd_o != Py_None && (c->cwd = cstr(cwd_o, keep, &n)) == NULL)
        goto done;
    /* argv */
    PyObject *af = PySequence_Fast(argv_o, "argv must be a sequence");
    if (af == NULL)
        goto done;
    Py_ssize_t argc = PySequence_Fast_GET_SIZE(af);
    PyList_Append(keep, af);
    Py_DECREF(af);
    argv = PyMem_RawMalloc(sizeof(char *) * (argc + 1));
    if (argv == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < argc; i++)
        if ((argv[i] = (char *)cstr(PySequence_Fast_GET_ITEM(af, i), keep, &n)) == NULL)
            goto done;
    argv[argc] = NULL;
    /* env: one block of "name=value\0" */
    if (!PyDict_Check(env_o)) {
        PyErr_SetString(PyExc_TypeError, "env must be a dict");
        goto done;
    }
    Py_ssize_t nenv = PyDict_GET_SIZE(env_o), pos = 0, total = 0, i = 0;
    PyObject *k, *v;
    const char **ks = PyMem_RawMalloc(sizeof(char *) * (2 * nenv + 1));
    Py_ssize_t *ls = PyMem_RawMalloc(sizeof(Py_ssize_t) * (2 * nenv + 1));
    if (ks == NULL || ls == NULL) {
        PyMem_RawFree(ks);
        PyMem_RawFree(ls);
        PyErr_NoMemory();
        goto done;
    }
    while (PyDict_Next(env_o, &pos, &k, &v)) {
        if ((ks[2 * i] = cstr(k, keep, &ls[2 * i])) == NULL ||
                (ks[2 * i + 1] = cstr(v, keep, &ls[2 * i + 1])) == NULL) {
            PyMem_RawFree(ks);
            PyMem_RawFree(ls);
            goto done;
        }
        if (memchr(ks[2 * i], '=', ls[2 * i]) != NULL) {
            PyMem_RawFree(ks);
            PyMem_RawFree(ls);
            PyErr_SetString(PyExc_ValueError, "illegal environment variable name");
            goto done;
        }
        total += ls[2 * i] + ls[2 * i + 1] + 2;
        i++;
    }
    envp = PyMem_RawMalloc(sizeof(char *) * (nenv + 1));
    envbuf = PyMem_RawMalloc(total + 1);
    if (envp == NULL || envbuf == NULL) {
        PyMem_RawFree(ks);
        PyMem_RawFree(ls);
        PyErr_NoMemory();
        goto done;
    }
    char *w = envbuf;
    for (Py_ssize_t j = 0; j < i; j++) {
        envp[j] = w;
        memcpy(w, ks[2 * j], ls[2 * j]);
        w += ls[2 * j];
        *w++ = '=';
        memcpy(w, ks[2 * j + 1], ls[2 * j + 1]);
        w += ls[2 * j + 1];
        *w++ = '\0';
    }
    envp[i] = NULL;
    PyMem_RawFree(ks);
    PyMem_RawFree(ls);
    c->argv = argv;
    c->envp = envp;
    int ints[6];
    for (int j = 0; j < 6; j++) {
        long x = PyLong_AsLong(args[4 + j]);
        if (x == -1 && PyErr_Occurred())
            goto done;
        ints[j] = (int)x;
    }
    c->fd0 = ints[0]; c->fd1 = ints[1]; c->fd2 = ints[2];
    c->pgid = ints[3]; c->umask = ints[4]; c->nice = ints[5];
    if (c->fd0 < 0 || c->fd1 < 0 || c->fd2 < 0) {
        PyErr_SetString(PyExc_ValueError, "stdin, stdout and stderr must be fds");
        goto done;
    }
    if ((c->restore = PyObject_IsTrue(args[10])) < 0)
        goto done;
    if (int_list(args[11], c->ignore, MAX_LIST, &c->nignore, "ignored signals") < 0)
        goto done;
    int m;
    if (tuples(args[12], 2, 1, tmp, MAX_LIST, &m, "caps") < 0)
        goto done;
    for (int j = 0; j < m; j++) {
        c->caps[j].res = (int)tmp[j][0];
        c->caps[j].value = (rlim_t)tmp[j][1];
    }
    c->ncaps = m;
    if (tuples(args[13], 3, 1, tmp, MAX_LIST, &m, "rlimits") < 0)
        goto done;
    for (int j = 0; j < m; j++) {
        c->rls[j].res = (int)tmp[j][0];
        c->rls[j].soft = (rlim_t)tmp[j][1];
        c->rls[j].hard = (rlim_t)tmp[j][2];
    }
    c->nrls = m;
    if (int_list(args[14], c->closed, 3, &c->nclosed, "closed fds") < 0)
        goto done;
    if (tuples(args[15], 2, 0, tmp, MAX_LIST, &m, "moves") < 0)
        goto done;
    for (int j = 0; j < m; j++) {
        c->mt[j] = (int)tmp[j][0];
        c->ms[j] = (int)tmp[j][1];
    }
    c->nmoves = m;

    /* the child's stack: its own, so the parent's frame is never written */
    char *stack = PyMem_RawMalloc(CHILD_STACK);
    if (stack == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    sigset_t all;
    sigfillset(&all);
    int e = pthread_sigmask(SIG_BLOCK, &all, &c->mask);
    if (e != 0) {
        PyMem_RawFree(stack);
        errno = e;
        PyErr_SetFromErrno(PyExc_OSError);
        goto done;
    }
    c->err = 0;
    c->before_exec = 0;
    /* CLONE_VFORK: this thread resumes once the child has exec'd or exited (the same
       clone flags as glibc's vfork-based posix_spawn; no namespace flag, which the
       sandbox's seccomp filter refuses) */
    pid_t pid = clone(child_main, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, c);
    int clone_errno = errno;
    pthread_sigmask(SIG_SETMASK, &c->mask, NULL);
    PyMem_RawFree(stack);
    if (pid < 0) {
        errno = clone_errno;
        PyErr_SetFromErrno(PyExc_OSError);
        goto done;
    }
    if (c->err != 0) {
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        errno = c->err;
        PyObject *name = c->before_exec ? cwd_o : exe_o;
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, name == Py_None ? NULL : name);
        goto done;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    result = Py_BuildValue("(ii)", (int)pid, pidfd < 0 ? -1 : pidfd);
done:
    Py_XDECREF(keep);
    PyMem_RawFree(argv);
    PyMem_RawFree(envp);
    PyMem_RawFree(envbuf);
    PyMem_RawFree(c);
    return result;
}

/* -- the wait ------------------------------------------------------------------------------ */

static int
append_int(PyObject *list, long v)
{
    PyObject *x = PyLong_FromLong(v);
    if (x == NULL)
        return -1;
    int r = PyList_Append(list, x);
    Py_DECREF(x);
    return r;
}

static long
ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

static PyObject *
fs_wait_step(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "wait_step() takes 5 arguments");
        return NULL;
    }
    int pfd[MAX_LIST], ofd[MAX_LIST], xfd[MAX_LIST], np, no, nx;
    if (int_list(args[0], pfd, MAX_LIST, &np, "pidfds") < 0 ||
            int_list(args[1], ofd, MAX_LIST, &no, "outs") < 0 ||
            int_list(args[2], xfd, MAX_LIST, &nx, "extra fds") < 0)
        return NULL;
    long timeout = PyLong_AsLong(args[3]);
    if (timeout == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t bufsize = PyLong_AsSsize_t(args[4]);
    if (bufsize == -1 && PyErr_Occurred())
        return NULL;
    /* poll set: [0, no) pipes, [no, no+np) pidfds, then the extra fds; an entry done with
       (end of file, child ended) gets fd -1, which poll skips */
    struct pollfd fds[3 * MAX_LIST];
    int nf = 0;
    for (int i = 0; i < no; i++)
        fds[nf++] = (struct pollfd){ofd[i], POLLIN | POLLPRI, 0};
    for (int i = 0; i < np; i++)
        fds[nf++] = (struct pollfd){pfd[i], POLLIN | POLLPRI, 0};
    for (int i = 0; i < nx; i++)
        fds[nf++] = (struct pollfd){xfd[i], POLLIN | POLLPRI, 0};
    PyObject *exited = PyList_New(0), *data = PyList_New(0), *ready = PyList_New(0);
    if (exited == NULL || data == NULL || ready == NULL)
        goto fail;
    const short any = POLLIN | POLLPRI | POLLHUP | POLLERR | POLLNVAL;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int left = np, got_data = 0;
    long wait_ms = timeout;
    for (;;) {
        int r;
        Py_BEGIN_ALLOW_THREADS
        r = poll(fds, nf, (int)wait_ms);
        Py_END_ALLOW_THREADS
        if (r < 0) {
            if (errno == EINTR)
                break;   /* (back to the caller's loop: its signal handlers run first) */
            PyErr_SetFromErrno(PyExc_OSError);
            goto fail;
        }
        for (int i = 0; i < no && r > 0; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & any))
                continue;
            PyObject *b = PyBytes_FromStringAndSize(NULL, bufsize);
            if (b == NULL)
                goto fail;
            ssize_t got;
            do {
                Py_BEGIN_ALLOW_THREADS
                got = read(ofd[i], PyBytes_AS_STRING(b), bufsize);
                Py_END_ALLOW_THREADS
            } while (got < 0 && errno == EINTR);
            if (got < 0)
                got = 0;   /* (an error ends the stream, as _copy_once does) */
            if (got != bufsize && _PyBytes_Resize(&b, got) < 0)
                goto fail;
            PyObject *t = Py_BuildValue("(iN)", ofd[i], b);
            if (t == NULL || PyList_Append(data, t) < 0) {
                Py_XDECREF(t);
                goto fail;
            }
            Py_DECREF(t);
            if (got)
                got_data = 1;
            else
                fds[i].fd = -1;   /* end of file: the caller closes it */
        }
        for (int i = 0; i < np && r > 0; i++) {
            struct pollfd *f = &fds[no + i];
            if (f->fd >= 0 && (f->revents & any)) {
                if (append_int(exited, i) < 0)
                    goto fail;
                f->fd = -1;
                left--;
            }
        }
        for (int i = 0; i < nx && r > 0; i++) {
            if (fds[no + np + i].revents & any) {
                if (append_int(ready, xfd[i]) < 0)
                    goto fail;
            }
        }
        /* back to Python for output to write, a ready extra fd, every child ended (its
           pipes are then drained by the caller), or the time given */
        if (got_data || PyList_GET_SIZE(ready) || left == 0 || r == 0)
            break;
        if (timeout >= 0) {
            wait_ms = timeout - ms_since(&t0);
            if (wait_ms <= 0)
                break;
        }
    }
    return Py_BuildValue("(NNN)", exited, data, ready);
fail:
    Py_XDECREF(exited);
    Py_XDECREF(data);
    Py_XDECREF(ready);
    return NULL;
}

static PyMethodDef methods[] = {
    {"spawn", (PyCFunction)(void (*)(void))fs_spawn, METH_FASTCALL,
     "Start a program (see the module docstring)."},
    {"wait_step", (PyCFunction)(void (*)(void))fs_wait_step, METH_FASTCALL,
     "One round of a native wait (see the module docstring)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastspawn",
    "The native launcher's spawn and wait step in C (see _fastspawn.c for why).", -1, methods,
};

PyMODINIT_FUNC
PyInit__fastspawn(void)
{
    return PyModule_Create(&module);
}
