/*
 * GIL accounting for benchmarks/scaling.py: loaded with LD_PRELOAD, it counts the interpreter's
 * GIL releases and the time threads hold the GIL, exactly and without a competing thread.
 *
 * CPython (3.11-3.13, a shared libpython) releases the GIL in drop_gil(): it locks the GIL's
 * mutex, marks the GIL free and signals the GIL's condition variable. It takes the GIL in
 * take_gil(), which starts by locking the same mutex and, while another thread holds the GIL,
 * waits on that condition variable. Interposing pthread_mutex_lock, pthread_cond_signal and the
 * condition waits therefore sees all of it: the first cond_signal after start() (called by a
 * thread holding the GIL) names the GIL's condition variable, and the mutex locked just before
 * it is the GIL's mutex; every later signal of it is a release; a hold starts at the lock of
 * the GIL's mutex, or, if the thread then waits for the GIL, when its last wait returns.
 *
 * start(0) counts the calling thread only; start(1) every thread, whose holds never overlap
 * (there is one GIL), so their sum is the serial time of the whole run: Amdahl's bound.
 *
 * Build: cc -O2 -shared -fPIC -o _gilcount.so _gilcount.c -ldl (scaling.py does this).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

static int (*real_lock)(pthread_mutex_t *);
static int (*real_signal)(pthread_cond_t *);
static int (*real_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);

static pthread_t owner;
static volatile int active, all_threads;
static pthread_mutex_t *volatile gil_mutex;
static pthread_cond_t *volatile gil_cond;
static uint64_t releases, held_ns;
static volatile unsigned generation; /* of start(): a thread's state from an earlier run is void */

static __thread pthread_mutex_t *last_locked;
static __thread int held;
static __thread unsigned seen;
static __thread uint64_t since;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int counted(void) {
    if (!active || !(all_threads || pthread_equal(pthread_self(), owner))) return 0;
    if (seen != generation) { /* first event of this thread in this run */
        seen = generation;
        held = 0;
    }
    return 1;
}

int pthread_mutex_lock(pthread_mutex_t *m) {
    if (!real_lock) real_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
    if (counted()) {
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
    if (counted()) {
        if (!gil_cond) { /* the first signal after start(): drop_gil() */
            gil_cond = c;
            gil_mutex = last_locked;
        }
        if (c == gil_cond && held) { /* drop_gil() */
            uint64_t t = now_ns();
            held = 0;
            __atomic_add_fetch(&releases, 1, __ATOMIC_RELAXED);
            __atomic_add_fetch(&held_ns, t - since, __ATOMIC_RELAXED);
        }
    }
    return real_signal(c);
}

/* take_gil() waiting for another thread: its hold starts when its last wait returns */
static void waited(pthread_cond_t *c) {
    if (c == gil_cond && counted()) {
        held = 1;
        since = now_ns();
    }
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) {
    if (!real_wait)
        real_wait = (int (*)(pthread_cond_t *, pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_cond_wait");
    int r = real_wait(c, m);
    waited(c);
    return r;
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *t) {
    if (!real_timedwait)
        real_timedwait = (int (*)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *))dlsym(
            RTLD_NEXT, "pthread_cond_timedwait");
    int r = real_timedwait(c, m, t);
    waited(c);
    return r;
}

/* Start counting; the calling thread holds the GIL (it is running Python). */
void gilcount_start(int every_thread) {
    owner = pthread_self();
    __atomic_store_n(&releases, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&held_ns, 0, __ATOMIC_RELAXED);
    generation++;
    seen = generation;
    held = 1;
    since = now_ns();
    all_threads = every_thread;
    active = 1;
}

/* Stop (called holding the GIL), and give the releases and the nanoseconds held since start(). */
void gilcount_stop(uint64_t *out_releases, uint64_t *out_held_ns) {
    active = 0;
    if (held) __atomic_add_fetch(&held_ns, now_ns() - since, __ATOMIC_RELAXED);
    *out_releases = __atomic_load_n(&releases, __ATOMIC_RELAXED);
    *out_held_ns = __atomic_load_n(&held_ns, __ATOMIC_RELAXED);
}

/* Whether the GIL's condition variable has been identified (after the first release). */
int gilcount_ready(void) { return gil_cond != 0; }
