/*
 * GIL accounting for benchmarks/scaling.py: loaded with LD_PRELOAD, it counts the interpreter's
 * GIL releases and the time one thread holds the GIL, exactly and without a competing thread.
 *
 * CPython (3.11-3.13, a shared libpython) releases the GIL in drop_gil(): it locks the GIL's
 * mutex, marks the GIL free and signals the GIL's condition variable; it takes the GIL in
 * take_gil(), which starts by locking the same mutex. Interposing pthread_mutex_lock and
 * pthread_cond_signal therefore sees both: the first cond_signal after start() names the GIL's
 * condition variable (the mutex locked just before it is the GIL's mutex), every later signal
 * of it is a release, and the first lock of the GIL's mutex after a release is the start of the
 * next hold. Only the thread that called start() is counted; in it, nothing else signals a
 * condition variable while it runs numpy, ctypes or our kernels.
 *
 * Build: gcc -O2 -shared -fPIC -o _gilcount.so _gilcount.c -ldl (the benchmark does this).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

static int (*real_lock)(pthread_mutex_t *);
static int (*real_signal)(pthread_cond_t *);

static pthread_t owner;
static int active;
static __thread pthread_mutex_t *last_locked;
static pthread_mutex_t *gil_mutex;
static pthread_cond_t *gil_cond;
static int held;
static uint64_t releases, held_ns, since;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int pthread_mutex_lock(pthread_mutex_t *m) {
    if (!real_lock) real_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
    if (active && pthread_equal(pthread_self(), owner)) {
        last_locked = m;
        if (!held && m == gil_mutex) { /* take_gil() */
            held = 1;
            since = now_ns();
        }
    }
    return real_lock(m);
}

int pthread_cond_signal(pthread_cond_t *c) {
    if (!real_signal) real_signal = (int (*)(pthread_cond_t *))dlsym(RTLD_NEXT, "pthread_cond_signal");
    if (active && pthread_equal(pthread_self(), owner)) {
        if (!gil_cond) { /* the first signal after start(): drop_gil() */
            gil_cond = c;
            gil_mutex = last_locked;
        }
        if (c == gil_cond && held) { /* drop_gil() */
            held = 0;
            releases++;
            held_ns += now_ns() - since;
        }
    }
    return real_signal(c);
}

/* Start counting in the calling thread, which holds the GIL (it is running Python). */
void gilcount_start(void) {
    owner = pthread_self();
    releases = held_ns = 0;
    held = 1;
    since = now_ns();
    active = 1;
}

/* Stop, and give the releases and the nanoseconds the GIL was held since start(). */
void gilcount_stop(uint64_t *out_releases, uint64_t *out_held_ns) {
    active = 0;
    if (held) held_ns += now_ns() - since;
    *out_releases = releases;
    *out_held_ns = held_ns;
}

/* Whether the GIL's condition variable has been identified (after the first release). */
int gilcount_ready(void) { return gil_cond != 0; }
