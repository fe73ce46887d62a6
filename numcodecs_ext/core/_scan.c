/*
 * scan(): what zfp's lossy modes must know about a float array before compressing it, in one
 * pass with the GIL released (numpy needs a min, a max and, for the tiny-block check, an abs and
 * three comparisons over temporaries).
 *
 * For a C-contiguous float32 or float64 buffer it returns (lo, hi, nonfinite, tiny):
 *   lo, hi     the smallest and largest finite values (+inf, -inf when there are none);
 *   nonfinite  whether any value is NaN or +-Infinity;
 *   tiny       whether any value v has 0 < |v| < the given threshold.
 * The caller decides what is an error and words it (core/zfp.py); with no compiled kernels it
 * computes the same with numpy. Part of the _kernels extension (see _kernels.c).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000
#include <Python.h>

#include <math.h>

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && \
    (!defined(__clang__) || __clang_major__ >= 14)
#define MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "arch=x86-64-v2", "default")))
#else
#define MULTIVERSION
#endif

typedef struct {
    double lo, hi;
    int nonfinite, tiny;
} scan_t;

/* Branch-free over blocks, so that the compiler can vectorise; x - x is NaN exactly when x is
 * NaN or infinite, and such values are left out of lo and hi. */
#define DEFINE_SCAN(name, T, ABS)                                                                  \
    MULTIVERSION static void name(const T *x, Py_ssize_t n, T threshold, scan_t *r) {              \
        T lo = (T)INFINITY, hi = (T)-INFINITY;                                                     \
        int bad = 0, tiny = 0;                                                                     \
        for (Py_ssize_t i = 0; i < n; i++) {                                                       \
            const T v = x[i];                                                                      \
            const int finite = (v - v) == (T)0;                                                    \
            const T a = ABS(v);                                                                    \
            bad |= !finite;                                                                        \
            tiny |= (a > (T)0) & (a < threshold);                                                  \
            const T vl = finite ? v : lo, vh = finite ? v : hi;                                    \
            lo = vl < lo ? vl : lo;                                                                \
            hi = vh > hi ? vh : hi;                                                                \
        }                                                                                          \
        r->lo = (double)lo;                                                                        \
        r->hi = (double)hi;                                                                        \
        r->nonfinite = bad;                                                                        \
        r->tiny = tiny;                                                                            \
    }

DEFINE_SCAN(scan_f32, float, fabsf)
DEFINE_SCAN(scan_f64, double, fabs)

const char scan_doc[] =
    "scan(values, item_size, threshold) -> (lo, hi, nonfinite, tiny)\n\n"
    "One pass over a C-contiguous native float32 (item_size 4) or float64 (8) buffer: the\n"
    "smallest and largest finite values, whether any value is NaN or infinite, and whether any\n"
    "value v has 0 < |v| < threshold.";

PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int item_size;
    double threshold;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*id", &buf, &item_size, &threshold)) {
        return NULL;
    }
    PyObject *result = NULL;
    if ((item_size != 4 && item_size != 8) || buf.len % item_size != 0 ||
        ((Py_uintptr_t)buf.buf) % item_size != 0) {
        PyErr_SetString(PyExc_ValueError, "scan: an aligned float32 or float64 buffer is needed");
        goto done;
    }
    scan_t r;
    const Py_ssize_t n = buf.len / item_size;
    Py_BEGIN_ALLOW_THREADS
    if (item_size == 4) {
        scan_f32((const float *)buf.buf, n, (float)threshold, &r);
    } else {
        scan_f64((const double *)buf.buf, n, threshold, &r);
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(ddOO)", r.lo, r.hi, r.nonfinite ? Py_True : Py_False,
                           r.tiny ? Py_True : Py_False);
done:
    PyBuffer_Release(&buf);
    return result;
}
