/*
 * bitround(): the bitround codec's rounding in place, in one pass with the GIL released (numpy
 * needs about ten passes over temporaries). Same results as the numpy kernels in bitround.py,
 * bit for bit (the tests run both): floats round their mantissa to nearest even, keeping NaN and
 * infinities and never rounding a finite value to infinity; integers round from their most
 * significant set bit as zarrs does, saturating instead of wrapping (signed values never round
 * into the sign bit). Part of the _kernels extension (see _kernels.c).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000
#include <Python.h>

#include <stdint.h>

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && \
    (!defined(__clang__) || __clang_major__ >= 14)
#define MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "arch=x86-64-v2", "default")))
#else
#define MULTIVERSION
#endif

#define DEFINE_FLOAT(name, T)                                                                      \
    MULTIVERSION static void name(T *x, Py_ssize_t n, int keepbits, int mantissa) {                \
        const int width = (int)sizeof(T) * 8, drop = mantissa - keepbits;                          \
        const T mask = (T) ~(((T)1 << drop) - 1);                                                  \
        const T expo = (T)((((T)1 << (width - 1)) - 1) & ~(((T)1 << mantissa) - 1));              \
        const T half = (T)(((T)1 << (drop - 1)) - 1);                                              \
        for (Py_ssize_t i = 0; i < n; i++) {                                                       \
            const T u = x[i];                                                                      \
            const T r = (T)((T)(u + ((u >> drop) & 1) + half) & mask);                             \
            const int special = (u & expo) == expo, over = (r & expo) == expo;                     \
            x[i] = special ? u : (over ? (T)(u & mask) : r);                                       \
        }                                                                                          \
    }

#define DEFINE_INT(name, T)                                                                        \
    static void name(T *x, Py_ssize_t n, int keepbits, int is_signed) {                            \
        const int width = (int)sizeof(T) * 8;                                                      \
        const T top = (T) ~(T)0, smax = (T)(top >> 1);                                             \
        for (Py_ssize_t i = 0; i < n; i++) {                                                       \
            const T u = x[i];                                                                      \
            const int len = u ? width - (__builtin_clzll((unsigned long long)u) - (64 - width)) : 0; \
            if (len <= keepbits || (is_signed == 2 && u == (T)(smax + 1))) { /* or NaT */          \
                continue;                                                                          \
            }                                                                                      \
            const int m = len - keepbits; /* keepbits 0: m may be the full width */                 \
            const T low = m >= width ? top : (T)(((T)1 << m) - 1);                                 \
            const T lsb = m >= width ? 0 : (T)((u >> m) & 1);                                      \
            T r = (T)(u + lsb + (((T)1 << (m - 1)) - 1));                                          \
            if (r < u) {                                                                           \
                r = top;                                                                           \
            }                                                                                      \
            if (is_signed && u <= smax && r > smax) {                                              \
                r = smax;                                                                          \
            }                                                                                      \
            r = (T)(r & (T)~low);                                                                  \
            if (is_signed == 2 && r == (T)(smax + 1) && u != r) {                                  \
                r = (T)(r + low + 1); /* never round into NaT: the next value up instead */        \
            }                                                                                      \
            x[i] = r;                                                                              \
        }                                                                                          \
    }

DEFINE_FLOAT(round_f16, uint16_t)
DEFINE_FLOAT(round_f32, uint32_t)
DEFINE_FLOAT(round_f64, uint64_t)
DEFINE_INT(round_i8, uint8_t)
DEFINE_INT(round_i16, uint16_t)
DEFINE_INT(round_i32, uint32_t)
DEFINE_INT(round_i64, uint64_t)

const char bitround_doc[] =
    "bitround(values, item_size, keepbits, mantissa, signed)\n\n"
    "Round a writable, aligned, C-contiguous buffer of native unsigned bit patterns in place:\n"
    "floats (mantissa > 0: that many explicit mantissa bits, 0 <= keepbits < mantissa) or\n"
    "integers (mantissa 0; signed 1 for signed types, 2 for datetime64/timedelta64, whose\n"
    "smallest pattern is NaT and never the result of rounding another value).";

PyObject *bitround(PyObject *self, PyObject *args) {
    Py_buffer buf;
    int item_size, keepbits, mantissa, is_signed;
    (void)self;
    if (!PyArg_ParseTuple(args, "w*iiii", &buf, &item_size, &keepbits, &mantissa, &is_signed)) {
        return NULL;
    }
    PyObject *result = NULL;
    const int width = item_size * 8;
    if ((item_size != 1 && item_size != 2 && item_size != 4 && item_size != 8) ||
        buf.len % item_size != 0 || ((Py_uintptr_t)buf.buf) % item_size != 0 || keepbits < 0 ||
        (mantissa > 0 && (keepbits >= mantissa || mantissa >= width || item_size == 1)) ||
        (mantissa == 0 && keepbits >= width) || mantissa < 0) {
        PyErr_SetString(PyExc_ValueError, "bitround: invalid buffer or parameters");
        goto done;
    }
    const Py_ssize_t n = buf.len / item_size;
    Py_BEGIN_ALLOW_THREADS
    if (mantissa > 0) {
        if (item_size == 2) {
            round_f16((uint16_t *)buf.buf, n, keepbits, mantissa);
        } else if (item_size == 4) {
            round_f32((uint32_t *)buf.buf, n, keepbits, mantissa);
        } else {
            round_f64((uint64_t *)buf.buf, n, keepbits, mantissa);
        }
    } else if (item_size == 1) {
        round_i8((uint8_t *)buf.buf, n, keepbits, is_signed);
    } else if (item_size == 2) {
        round_i16((uint16_t *)buf.buf, n, keepbits, is_signed);
    } else if (item_size == 4) {
        round_i32((uint32_t *)buf.buf, n, keepbits, is_signed);
    } else {
        round_i64((uint64_t *)buf.buf, n, keepbits, is_signed);
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&buf);
    return result;
}
