/*
 * Optional compiled kernels for the hot loops of scale_offset and cast_value (and, in
 * _permute.c, transpose's tiled copy; in _scan.c, zfp's one pass over the values; in
 * _zfpcall.c, a whole libzfp session in one call).
 *
 * numpy does the same work in several passes (round, clip, cast, NaN mask, masked write), each
 * over the whole block; these loops do it in one pass per element, with the GIL released, so
 * zarr's threads encode and decode chunks in parallel. They are an accelerator only:
 *
 *   - affine(): scale_offset on float32/float64 in one pass; an overflow is reported, and the
 *              caller's numpy kernels raise it.
 *   - take():  out[i] = table[code[i]] for one- or two-byte codes. The table holds the exact
 *              result of every possible code, computed in Python by the reference (numpy)
 *              kernels, so the result is the reference result by construction.
 *   - f2i():   float32/float64 -> integer with an optional (x - offset) * scale first, the five
 *              rounding modes, clamp / wrap, and the scalar map. Whenever an element would be an
 *              error (an unmapped NaN or infinity, a value out of range with no out_of_range
 *              mode, an overflow in scale_offset), it stops and returns that element's index; the
 *              caller then runs the numpy kernels, which raise the error with its message. It
 *              never decides an error itself.
 *
 * Exactness: the float arithmetic is IEEE 754 in the source type (float arithmetic stays float:
 * FLT_EVAL_METHOD must be 0, checked below), with no contraction into fused multiply-adds
 * (setup.py passes -ffp-contract=off), and rounding to an integer uses the 2**52 trick, which is
 * exact in the default round-to-nearest mode. PyInit runs a self-test of the rounding and refuses
 * to load (so the numpy kernels run) if a compiler has broken it.
 *
 * Only the limited C API is used; nothing from numpy's C API (buffers arrive through the buffer
 * protocol), so building needs no numpy headers.
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(_MSC_VER)
#define FORCE_INLINE static __forceinline
#define restrict __restrict
#else
#define FORCE_INLINE static inline __attribute__((always_inline))
#endif

/* x86-64 Linux with GCC or clang >= 14: each loop is compiled for AVX2 (x86-64-v3), SSE4.2
 * (x86-64-v2) and the x86-64 baseline, and the loader picks the best for the CPU (ifunc) */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && \
    (!defined(__clang__) || __clang_major__ >= 14)
#define MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "arch=x86-64-v2", "default")))
/* the float-lane loops (float32 into targets up to 16 bits) also for AVX-512 (x86-64-v4): 16
 * lanes, 1.6x the AVX2 clone's speed on the fused f32 -> u16 encode (measured); only these four,
 * to keep the build short */
#define MULTIVERSION_V4 \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "arch=x86-64-v2", "default")))
#else
#define MULTIVERSION
#define MULTIVERSION_V4
#endif

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#define NO_FLOAT32 1 /* float arithmetic would be done in a wider type: float32 input declined */
#endif

enum { HOW_NAN = 0, HOW_BITS = 1, HOW_EQ = 2 };
enum { NEAREST_EVEN = 0, TOWARDS_ZERO, TOWARDS_POSITIVE, TOWARDS_NEGATIVE, NEAREST_AWAY };
enum { OOR_ERROR = 0, OOR_CLAMP = 1, OOR_WRAP = 2 };

#define MAX_ENTRIES 64

typedef struct {
    int affine;           /* apply (x - off) * sc in the source type first */
    double off, sc;       /* the parameters, exactly (float32 ones are exact in double) */
    int oor;              /* OOR_* */
    int bits;             /* the target's width in bits */
    double lo_f, hi_f;    /* the target's range as floats, inward (hi_f <= max) */
    uint64_t lo_bits, hi_bits; /* the bit patterns of the target's min and max */
    int nan_simple;       /* the first NaN entry is "nan": every NaN gets nan_val[0] */
    Py_ssize_t n_nan;     /* entries matching NaNs ("nan" or "bits"), in map order */
    int nan_how[MAX_ENTRIES];
    uint64_t nan_key[MAX_ENTRIES], nan_val[MAX_ENTRIES];
    Py_ssize_t n_eq;      /* entries matching by numerical equality */
    double eq_key[MAX_ENTRIES];
    uint64_t eq_val[MAX_ENTRIES];
    double nan_value, eq_value[MAX_ENTRIES]; /* the values as numbers (targets up to 32 bits) */
    Py_ssize_t n_res;     /* reserved codes: only an input the map claims may become one */
    uint64_t res_bits[MAX_ENTRIES];
    double res_value[MAX_ENTRIES]; /* the codes as numbers (targets up to 32 bits) */
} Params;

static const double TWO52 = 4503599627370496.0;
static const float TWO23F = 8388608.0f;

/* nearest integer, ties to even (exact: |y| < 2**52 leaves no fraction bits after the add) */
FORCE_INLINE double round_even(double y) {
    double a = fabs(y);
    if (a < TWO52) {
        a = (a + TWO52) - TWO52;
    }
    return copysign(a, y);
}

/* the same in float lanes (|y| < 2**23): every float32 rounds to an integer that is a float32,
 * and each step below is exact in float as in double, so it gives the double result exactly */
FORCE_INLINE float round_even_f(float y) {
    float a = fabsf(y);
    if (a < TWO23F) {
        a = (a + TWO23F) - TWO23F;
    }
    return copysignf(a, y);
}

#define DEFINE_ROUND_INT(NAME, T, EVEN, ABS, SIGN)                                             \
    FORCE_INLINE T NAME(T y, const int mode) {                                                 \
        T t = EVEN(y);                                                                         \
        switch (mode) {                                                                        \
        case NEAREST_EVEN:                                                                     \
            return t;                                                                          \
        case TOWARDS_POSITIVE:                                                                 \
            return t < y ? t + (T)1 : t;                                                       \
        case TOWARDS_NEGATIVE:                                                                 \
            return t > y ? t - (T)1 : t;                                                       \
        default: {                                                                             \
            T z = ABS(t) > ABS(y) ? t - SIGN((T)1, y) : t; /* truncated */                     \
            if (mode == TOWARDS_ZERO) {                                                        \
                return z;                                                                      \
            }                                                                                  \
            return ABS(y - z) >= (T)0.5 ? z + SIGN((T)1, y) : z; /* y - z is exact */          \
        }                                                                                      \
        }                                                                                      \
    }

DEFINE_ROUND_INT(round_int, double, round_even, fabs, copysign)
DEFINE_ROUND_INT(round_int_f, float, round_even_f, fabsf, copysignf)

/* the integer whose low `bits` bits are `v` (two's complement when signed), as a double */
static double as_number(uint64_t v, int bits, int is_signed) {
    v &= bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
    if (is_signed && bits < 64 && (v >> (bits - 1))) {
        return (double)v - ldexp(1.0, bits);
    }
    return (double)v;
}

/* the residue of an integer-valued r modulo 2**bits, as the low bits of a uint64 */
static uint64_t wrap_bits(double r, int bits) {
    double v = fmod(r, ldexp(1.0, bits)); /* exact, |v| < 2**bits */
    return v >= 0 ? (uint64_t)v : (uint64_t)0 - (uint64_t)(-v);
}

/*
 * The float -> integer conversion, one set of loops per (source, target), with the rounding mode
 * and the affine step as constants inside, so the compiler drops those branches.
 *
 * Blocks of BLOCK elements go first through a branch-free loop the compiler vectorises, which
 * handles the common cases (in range; clamped; NaN mapped by a "nan" entry) and raises a flag
 * for anything else (an infinity, a NaN needing another entry, out of range without clamp); the
 * numerical-equality keys are then written in a second short pass. A flagged block is redone by
 * the scalar loop, which follows the spec's order element by element and returns the index of
 * the first element it cannot convert (-1 when done).
 */
#define BLOCK 1024

#define DEFINE_F2I(NAME, SRC_T, SRC_BITS_T, T, UT, CONV_T, L, FLAG_T, ROUND, ABS, MV)          \
    FORCE_INLINE SRC_T NAME##_affine(SRC_T x, SRC_T offs, SRC_T scs, const int affine) {       \
        if (affine) {                                                                          \
            x = x - offs;                                                                      \
            x = x * scs;                                                                       \
        }                                                                                      \
        return x;                                                                              \
    }                                                                                          \
    /* returns non-zero if the block needs the scalar loop; targets up to 32 bits, whose  */ \
    /* values are all exact in the lane type L (double; float for float32 sources and     */ \
    /* targets up to 16 bits, twice the lanes per instruction), so everything is computed */ \
    /* in L lanes first: the scaled value is a SRC_T, exact in L, and so is every step    */ \
    FORCE_INLINE int NAME##_vector(const SRC_T *restrict x, UT *restrict o, Py_ssize_t m,      \
                                   const Params *p, const int mode, const int affine) {        \
        L c[BLOCK];                                                                            \
        const SRC_T offs = (SRC_T)p->off, scs = (SRC_T)p->sc;                                  \
        const L lo = (L)p->lo_f, hi = (L)p->hi_f, nan_v = (L)p->nan_value;                     \
        /* the first reserved code (NaN: none, equal to nothing); a map key may be why a value */ \
        /* lands on it: the scalar loop then decides */                                       \
        const L res0 = p->n_res > 0 ? (L)p->res_value[0] : (L)NAN;                             \
        const FLAG_T strict = p->oor != OOR_CLAMP, nan_ok = p->nan_simple;                     \
        FLAG_T flag = 0;                                                                       \
        for (Py_ssize_t i = 0; i < m; i++) {                                                   \
            L y = (L)NAME##_affine(x[i], offs, scs, affine);                                   \
            L t = ROUND(y, mode);                                                              \
            FLAG_T nan = y != y, oor = (t < lo) | (t > hi);                                    \
            L v = t < lo ? lo : t;                                                             \
            v = v > hi ? hi : v;                                                               \
            c[i] = nan ? nan_v : v;                                                            \
            flag |= (FLAG_T)(ABS(y) == (L)INFINITY) | (oor & strict) | (nan & !nan_ok) |       \
                    ((FLAG_T)(v == res0) & !nan);                                              \
        }                                                                                      \
        for (Py_ssize_t j = 1; j < p->n_res; j++) {                                            \
            const L code = (L)p->res_value[j];                                                 \
            for (Py_ssize_t i = 0; i < m; i++) {                                               \
                L y = (L)NAME##_affine(x[i], offs, scs, affine);                               \
                flag |= (FLAG_T)((y == y) & (c[i] == code));                                   \
            }                                                                                  \
        }                                                                                      \
        for (Py_ssize_t j = 0; j < p->n_eq; j++) {                                             \
            const L key = (L)p->eq_key[j], val = (L)p->eq_value[j];                            \
            if ((double)key != p->eq_key[j]) {                                                 \
                continue; /* not a value of L (nor of SRC_T): no element equals it */          \
            }                                                                                  \
            for (Py_ssize_t i = 0; i < m; i++) {                                               \
                L y = (L)NAME##_affine(x[i], offs, scs, affine);                               \
                c[i] = y == key ? val : c[i];                                                  \
            }                                                                                  \
        }                                                                                      \
        for (Py_ssize_t i = 0; i < m; i++) {                                                   \
            o[i] = (UT)(T)(CONV_T)c[i];                                                        \
        }                                                                                      \
        return flag != 0;                                                                      \
    }                                                                                          \
    static Py_ssize_t NAME##_scalar(const SRC_T *x, UT *o, Py_ssize_t m, const Params *p,      \
                                    const int mode, const int affine) {                        \
        const SRC_T offs = (SRC_T)p->off, scs = (SRC_T)p->sc;                                  \
        for (Py_ssize_t i = 0; i < m; i++) {                                                   \
            SRC_T ys = NAME##_affine(x[i], offs, scs, affine);                                 \
            double y = (double)ys;                                                             \
            Py_ssize_t j = 0;                                                                  \
            if (y != y) { /* NaN: the first "nan" or matching "bits" entry */                  \
                SRC_BITS_T b;                                                                  \
                memcpy(&b, &ys, sizeof b);                                                     \
                while (j < p->n_nan && p->nan_how[j] != HOW_NAN && (uint64_t)b != p->nan_key[j]) \
                    j++;                                                                       \
                if (j == p->n_nan) {                                                           \
                    return i;                                                                  \
                }                                                                              \
                o[i] = (UT)p->nan_val[j];                                                      \
                continue;                                                                      \
            }                                                                                  \
            if (affine && fabs(y) == INFINITY && fabs((double)x[i]) <= DBL_MAX) {              \
                return i; /* scale_offset overflowed */                                        \
            }                                                                                  \
            while (j < p->n_eq && y != p->eq_key[j])                                           \
                j++;                                                                           \
            if (j < p->n_eq) {                                                                 \
                o[i] = (UT)p->eq_val[j];                                                       \
                continue;                                                                      \
            }                                                                                  \
            if (fabs(y) == INFINITY) {                                                         \
                return i;                                                                      \
            }                                                                                  \
            double r = round_int(y, mode);                                                     \
            if (r >= p->lo_f && r <= p->hi_f) {                                                \
                o[i] = (UT)(T)r;                                                               \
            } else if (p->oor == OOR_CLAMP) {                                                  \
                o[i] = (UT)(r < p->lo_f ? p->lo_bits : p->hi_bits);                            \
            } else if (p->oor == OOR_WRAP) {                                                   \
                o[i] = (UT)wrap_bits(r, p->bits);                                              \
            } else {                                                                           \
                return i;                                                                      \
            }                                                                                  \
            for (j = 0; j < p->n_res; j++) {                                                   \
                if ((uint64_t)o[i] == p->res_bits[j]) {                                        \
                    return i; /* a code the way back reads otherwise */                        \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        return -1;                                                                             \
    }                                                                                          \
    FORCE_INLINE Py_ssize_t NAME##_loop(const SRC_T *x, UT *o, Py_ssize_t n, const Params *p,  \
                                        const int mode, const int affine) {                    \
        for (Py_ssize_t s = 0; s < n; s += BLOCK) {                                            \
            Py_ssize_t m = n - s < BLOCK ? n - s : BLOCK;                                      \
            if (p->bits > 32 || NAME##_vector(x + s, o + s, m, p, mode, affine)) {             \
                Py_ssize_t bad = NAME##_scalar(x + s, o + s, m, p, mode, affine);              \
                if (bad >= 0) {                                                                \
                    return s + bad;                                                            \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        return -1;                                                                             \
    }                                                                                          \
    MV static Py_ssize_t NAME(const void *x, void *o, Py_ssize_t n, const Params *p,           \
                                        int mode) {                                            \
        const SRC_T *xs = (const SRC_T *)x;                                                    \
        UT *os = (UT *)o;                                                                      \
        int affine = p->affine != 0;                                                           \
        switch (mode * 2 + affine) {                                                           \
        case 2 * NEAREST_EVEN: return NAME##_loop(xs, os, n, p, NEAREST_EVEN, 0);              \
        case 2 * NEAREST_EVEN + 1: return NAME##_loop(xs, os, n, p, NEAREST_EVEN, 1);          \
        case 2 * TOWARDS_ZERO: return NAME##_loop(xs, os, n, p, TOWARDS_ZERO, 0);              \
        case 2 * TOWARDS_ZERO + 1: return NAME##_loop(xs, os, n, p, TOWARDS_ZERO, 1);          \
        case 2 * TOWARDS_POSITIVE: return NAME##_loop(xs, os, n, p, TOWARDS_POSITIVE, 0);      \
        case 2 * TOWARDS_POSITIVE + 1: return NAME##_loop(xs, os, n, p, TOWARDS_POSITIVE, 1);  \
        case 2 * TOWARDS_NEGATIVE: return NAME##_loop(xs, os, n, p, TOWARDS_NEGATIVE, 0);      \
        case 2 * TOWARDS_NEGATIVE + 1: return NAME##_loop(xs, os, n, p, TOWARDS_NEGATIVE, 1);  \
        case 2 * NEAREST_AWAY: return NAME##_loop(xs, os, n, p, NEAREST_AWAY, 0);              \
        default: return NAME##_loop(xs, os, n, p, NEAREST_AWAY, 1);                            \
        }                                                                                      \
    }

DEFINE_F2I(f8_i1, double, uint64_t, int8_t, uint8_t, int32_t, double, int64_t, round_int, fabs, MULTIVERSION)
DEFINE_F2I(f8_u1, double, uint64_t, uint8_t, uint8_t, int32_t, double, int64_t, round_int, fabs, MULTIVERSION)
DEFINE_F2I(f8_i2, double, uint64_t, int16_t, uint16_t, int32_t, double, int64_t, round_int, fabs, MULTIVERSION)
DEFINE_F2I(f8_u2, double, uint64_t, uint16_t, uint16_t, int32_t, double, int64_t, round_int, fabs, MULTIVERSION)
DEFINE_F2I(f8_i4, double, uint64_t, int32_t, uint32_t, int32_t, double, int64_t, round_int, fabs, MULTIVERSION)
DEFINE_F2I(f8_u4, double, uint64_t, uint32_t, uint32_t, int64_t, double, int64_t, round_int, fabs, MULTIVERSION)
DEFINE_F2I(f8_i8, double, uint64_t, int64_t, uint64_t, int64_t, double, int64_t, round_int, fabs, MULTIVERSION)
DEFINE_F2I(f8_u8, double, uint64_t, uint64_t, uint64_t, uint64_t, double, int64_t, round_int, fabs, MULTIVERSION)
#ifndef NO_FLOAT32
DEFINE_F2I(f4_i1, float, uint32_t, int8_t, uint8_t, int32_t, float, int32_t, round_int_f, fabsf, MULTIVERSION_V4)
DEFINE_F2I(f4_u1, float, uint32_t, uint8_t, uint8_t, int32_t, float, int32_t, round_int_f, fabsf, MULTIVERSION_V4)
DEFINE_F2I(f4_i2, float, uint32_t, int16_t, uint16_t, int32_t, float, int32_t, round_int_f, fabsf, MULTIVERSION_V4)
DEFINE_F2I(f4_u2, float, uint32_t, uint16_t, uint16_t, int32_t, float, int32_t, round_int_f, fabsf, MULTIVERSION_V4)
DEFINE_F2I(f4_i4, float, uint32_t, int32_t, uint32_t, int32_t, double, int64_t, round_int, fabs, MULTIVERSION)
DEFINE_F2I(f4_u4, float, uint32_t, uint32_t, uint32_t, int64_t, double, int64_t, round_int, fabs, MULTIVERSION)
DEFINE_F2I(f4_i8, float, uint32_t, int64_t, uint64_t, int64_t, double, int64_t, round_int, fabs, MULTIVERSION)
DEFINE_F2I(f4_u8, float, uint32_t, uint64_t, uint64_t, uint64_t, double, int64_t, round_int, fabs, MULTIVERSION)
#endif

typedef Py_ssize_t (*f2i_fn)(const void *, void *, Py_ssize_t, const Params *, int);

static f2i_fn pick_f2i(int src_size, int tgt_size, int tgt_signed) {
    /* index: [source float32/float64][target size 1, 2, 4, 8][unsigned, signed] */
    static const f2i_fn f8[4][2] = {
        {f8_u1, f8_i1}, {f8_u2, f8_i2}, {f8_u4, f8_i4}, {f8_u8, f8_i8}};
#ifndef NO_FLOAT32
    static const f2i_fn f4[4][2] = {
        {f4_u1, f4_i1}, {f4_u2, f4_i2}, {f4_u4, f4_i4}, {f4_u8, f4_i8}};
#endif
    int k = tgt_size == 1 ? 0 : tgt_size == 2 ? 1 : tgt_size == 4 ? 2 : tgt_size == 8 ? 3 : -1;
    if (k < 0) {
        return NULL;
    }
    if (src_size == 8) {
        return f8[k][tgt_signed != 0];
    }
#ifndef NO_FLOAT32
    if (src_size == 4) {
        return f4[k][tgt_signed != 0];
    }
#endif
    return NULL;
}

static int aligned(const Py_buffer *b, Py_ssize_t size) {
    return ((uintptr_t)b->buf) % (uintptr_t)size == 0;
}

PyDoc_STRVAR(f2i_doc,
"f2i(x, out, src_size, tgt_size, tgt_signed, affine, offset, scale, rounding, out_of_range,\n"
"    map_how, map_key_f, map_key_bits, map_value, reserved) -> int\n\n"
"Convert the native float32/float64 buffer ``x`` into the native integer buffer ``out``.\n"
"``rounding``: 0..4 in the order of cast_value.ROUNDING_MODES; ``out_of_range``: 0 none,\n"
"1 clamp, 2 wrap. The map arrives as parallel buffers: how (uint8: 0 any NaN, 1 bit pattern,\n"
"2 numerical equality), key as float64, key bits as uint64, value bits as uint64.\n"
"``reserved``: codes (bits as uint64) that only an element the map claims may become.\n"
"Returns -1 when every element was converted, else the index of the first element that is\n"
"not (the caller's reference kernels then raise the error).");

static PyObject *f2i(PyObject *self, PyObject *args) {
    Py_buffer x, out, how, key_f, key_bits, value, reserved;
    int src_size, tgt_size, tgt_signed, affine, rounding, oor;
    double off, sc;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*iiipddiiy*y*y*y*y*", &x, &out, &src_size, &tgt_size,
                          &tgt_signed, &affine, &off, &sc, &rounding, &oor, &how, &key_f,
                          &key_bits, &value, &reserved)) {
        return NULL;
    }
    PyObject *result = NULL;
    Params p;
    memset(&p, 0, sizeof p);
    f2i_fn fn = pick_f2i(src_size, tgt_size, tgt_signed);
    Py_ssize_t n = src_size > 0 ? x.len / src_size : 0;
    Py_ssize_t n_entries = how.len;
    if (fn == NULL) {
        PyErr_Format(PyExc_ValueError, "f2i: unsupported sizes %d -> %d", src_size, tgt_size);
        goto done;
    }
    if (x.len % src_size || out.len != n * tgt_size || !aligned(&x, src_size) ||
        !aligned(&out, tgt_size)) {
        PyErr_SetString(PyExc_ValueError, "f2i: x and out must be aligned and of equal length");
        goto done;
    }
    if (rounding < 0 || rounding > NEAREST_AWAY || oor < 0 || oor > OOR_WRAP) {
        PyErr_SetString(PyExc_ValueError, "f2i: bad rounding or out_of_range code");
        goto done;
    }
    if (n_entries > MAX_ENTRIES || key_f.len != n_entries * 8 || key_bits.len != n_entries * 8 ||
        value.len != n_entries * 8 || reserved.len % 8 || reserved.len / 8 > MAX_ENTRIES) {
        PyErr_SetString(PyExc_ValueError, "f2i: the map buffers do not match (at most 64 entries)");
        goto done;
    }
    p.n_res = reserved.len / 8;
    for (Py_ssize_t j = 0; j < p.n_res; j++) {
        memcpy(&p.res_bits[j], (const char *)reserved.buf + 8 * j, 8);
    }
    p.affine = affine;
    p.off = off;
    p.sc = sc;
    p.oor = oor;
    p.bits = 8 * tgt_size;
    if (tgt_signed) {
        p.lo_f = -ldexp(1.0, p.bits - 1);
        p.lo_bits = (uint64_t)1 << (p.bits - 1);
        p.hi_bits = p.lo_bits - 1;
    } else {
        p.lo_f = 0.0;
        p.lo_bits = 0;
        p.hi_bits = p.bits == 64 ? UINT64_MAX : ((uint64_t)1 << p.bits) - 1;
    }
    /* the largest double not above the maximum: 2**63 - 1 and 2**64 - 1 are not doubles */
    p.hi_f = (double)p.hi_bits;
    if (p.bits == 64) {
        p.hi_f = nextafter(ldexp(1.0, tgt_signed ? 63 : 64), 0.0);
    }
    for (Py_ssize_t j = 0; j < n_entries; j++) {
        int h = ((const uint8_t *)how.buf)[j];
        double kf;
        uint64_t kb, v;
        memcpy(&kf, (const char *)key_f.buf + 8 * j, 8);
        memcpy(&kb, (const char *)key_bits.buf + 8 * j, 8);
        memcpy(&v, (const char *)value.buf + 8 * j, 8);
        if (h == HOW_EQ) {
            p.eq_key[p.n_eq] = kf;
            p.eq_val[p.n_eq++] = v;
        } else if (h == HOW_NAN || h == HOW_BITS) {
            p.nan_how[p.n_nan] = h;
            p.nan_key[p.n_nan] = kb;
            p.nan_val[p.n_nan++] = v;
        } else {
            PyErr_SetString(PyExc_ValueError, "f2i: bad map entry kind");
            goto done;
        }
    }
    p.nan_simple = p.n_nan > 0 && p.nan_how[0] == HOW_NAN;
    if (p.bits <= 32) { /* the value bits as the target's integer, exactly */
        for (Py_ssize_t j = 0; j < p.n_eq; j++) {
            p.eq_value[j] = as_number(p.eq_val[j], p.bits, tgt_signed);
        }
        p.nan_value = p.nan_simple ? as_number(p.nan_val[0], p.bits, tgt_signed) : 0.0;
        for (Py_ssize_t j = 0; j < p.n_res; j++) {
            p.res_value[j] = as_number(p.res_bits[j], p.bits, tgt_signed);
        }
    }
    Py_ssize_t stop;
    Py_BEGIN_ALLOW_THREADS
    stop = fn(x.buf, out.buf, n, &p, rounding);
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(stop);
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&out);
    PyBuffer_Release(&how);
    PyBuffer_Release(&key_f);
    PyBuffer_Release(&key_bits);
    PyBuffer_Release(&value);
    PyBuffer_Release(&reserved);
    return result;
}

/*
 * scale_offset on float32/float64: (x - offset) * scale or x / scale + offset, each operation
 * rounded in the type itself, as numpy's two ufuncs do. Returns non-zero if a finite input gave
 * an infinite result (an overflow: the caller's numpy kernels then raise the error).
 */
#define DEFINE_AFFINE(NAME, T, FLAG_T)                                                          \
    FORCE_INLINE int NAME##_loop(const T *restrict x, T *restrict o, Py_ssize_t n, T offs,     \
                                 T scs, const int decode) {                                    \
        FLAG_T flag = 0;                                                                       \
        for (Py_ssize_t i = 0; i < n; i++) {                                                   \
            T y;                                                                               \
            if (decode) {                                                                      \
                y = x[i] / scs;                                                                \
                y = y + offs;                                                                  \
            } else {                                                                           \
                y = x[i] - offs;                                                               \
                y = y * scs;                                                                   \
            }                                                                                  \
            o[i] = y;                                                                          \
            flag |= (FLAG_T)(y - y != y - y) & (FLAG_T)(x[i] - x[i] == x[i] - x[i]);           \
        }                                                                                      \
        return flag != 0;                                                                      \
    }                                                                                          \
    MULTIVERSION static int NAME(const void *x, void *o, Py_ssize_t n, double off, double sc,  \
                                 int decode) {                                                 \
        if (decode) {                                                                          \
            return NAME##_loop((const T *)x, (T *)o, n, (T)off, (T)sc, 1);                     \
        }                                                                                      \
        return NAME##_loop((const T *)x, (T *)o, n, (T)off, (T)sc, 0);                         \
    }

DEFINE_AFFINE(affine_f8, double, int64_t)
#ifndef NO_FLOAT32
DEFINE_AFFINE(affine_f4, float, int32_t)
#endif

PyDoc_STRVAR(affine_doc,
"affine(x, out, size, decode, offset, scale) -> bool\n\n"
"``out = (x - offset) * scale`` (``decode``: ``x / scale + offset``) for native float32 (size 4)\n"
"or float64 (size 8) buffers that do not overlap. Returns True if a finite input gave an\n"
"infinite result (an overflow; ``out`` is then incomplete).");

static PyObject *affine(PyObject *self, PyObject *args) {
    Py_buffer x, out;
    int size, decode;
    double off, sc;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*ipdd", &x, &out, &size, &decode, &off, &sc)) {
        return NULL;
    }
    PyObject *result = NULL;
    int overflow = 0;
    Py_ssize_t n = size > 0 ? x.len / size : 0;
#ifdef NO_FLOAT32
    if (size != 8) {
#else
    if (size != 4 && size != 8) {
#endif
        PyErr_Format(PyExc_ValueError, "affine: unsupported size %d", size);
        goto done;
    }
    if (x.len % size || out.len != x.len || !aligned(&x, size) || !aligned(&out, size)) {
        PyErr_SetString(PyExc_ValueError, "affine: x and out must be aligned and of equal length");
        goto done;
    }
    if ((const char *)x.buf < (const char *)out.buf + out.len &&
        (const char *)out.buf < (const char *)x.buf + x.len) {
        PyErr_SetString(PyExc_ValueError, "affine: x and out must not overlap");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
#ifndef NO_FLOAT32
    if (size == 4) {
        overflow = affine_f4(x.buf, out.buf, n, off, sc, decode);
    } else
#endif
    {
        overflow = affine_f8(x.buf, out.buf, n, off, sc, decode);
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(overflow);
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&out);
    return result;
}

#define DEFINE_TAKE(NAME, CODE_T, ITEM_T)                                                       \
    MULTIVERSION static void NAME(const void *codes, const void *table, void *out,            \
                                  Py_ssize_t n) {                                              \
        const CODE_T *c = (const CODE_T *)codes;                                               \
        const ITEM_T *t = (const ITEM_T *)table;                                               \
        ITEM_T *o = (ITEM_T *)out;                                                             \
        for (Py_ssize_t i = 0; i < n; i++) {                                                   \
            o[i] = t[c[i]];                                                                    \
        }                                                                                      \
    }

DEFINE_TAKE(take_1_1, uint8_t, uint8_t)
DEFINE_TAKE(take_1_2, uint8_t, uint16_t)
DEFINE_TAKE(take_1_4, uint8_t, uint32_t)
DEFINE_TAKE(take_1_8, uint8_t, uint64_t)
DEFINE_TAKE(take_2_1, uint16_t, uint8_t)
DEFINE_TAKE(take_2_2, uint16_t, uint16_t)
DEFINE_TAKE(take_2_4, uint16_t, uint32_t)
DEFINE_TAKE(take_2_8, uint16_t, uint64_t)

typedef void (*take_fn)(const void *, const void *, void *, Py_ssize_t);

PyDoc_STRVAR(take_doc,
"take(codes, table, out, code_size, item_size) -> None\n\n"
"``out[i] = table[codes[i]]``: ``codes`` are one- or two-byte codes read as native unsigned\n"
"integers, ``table`` has an item (1, 2, 4 or 8 bytes) for every possible code.");

static PyObject *take(PyObject *self, PyObject *args) {
    Py_buffer codes, table, out;
    int code_size, item_size;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*w*ii", &codes, &table, &out, &code_size, &item_size)) {
        return NULL;
    }
    static const take_fn fns[2][4] = {{take_1_1, take_1_2, take_1_4, take_1_8},
                                      {take_2_1, take_2_2, take_2_4, take_2_8}};
    PyObject *result = NULL;
    int k = item_size == 1 ? 0 : item_size == 2 ? 1 : item_size == 4 ? 2 : item_size == 8 ? 3 : -1;
    Py_ssize_t n = (code_size == 1 || code_size == 2) ? codes.len / code_size : 0;
    if (k < 0 || n * code_size != codes.len || (code_size != 1 && code_size != 2)) {
        PyErr_SetString(PyExc_ValueError, "take: code_size must be 1 or 2, item_size 1/2/4/8");
        goto done;
    }
    if (table.len != ((Py_ssize_t)1 << (8 * code_size)) * item_size || out.len != n * item_size ||
        !aligned(&codes, code_size) || !aligned(&table, item_size) || !aligned(&out, item_size)) {
        PyErr_SetString(PyExc_ValueError, "take: table or out has the wrong size or alignment");
        goto done;
    }
    take_fn fn = fns[code_size - 1][k];
    Py_BEGIN_ALLOW_THREADS
    fn(codes.buf, table.buf, out.buf, n);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&codes);
    PyBuffer_Release(&table);
    PyBuffer_Release(&out);
    return result;
}

/* transpose's tiled copy, in _permute.c; zfp's look at the values, in _scan.c */
extern PyObject *permute(PyObject *self, PyObject *args);
extern const char permute_doc[];
extern PyObject *permute_plan(PyObject *self, PyObject *args);
extern const char permute_plan_doc[];
extern PyObject *scan(PyObject *self, PyObject *args);
extern const char scan_doc[];
/* _zfpcall.c */
extern PyObject *zfp_api(PyObject *self, PyObject *args);
extern const char zfp_api_doc[];
extern PyObject *zfp_max_size(PyObject *self, PyObject *args);
extern const char zfp_max_size_doc[];
extern PyObject *zfp_encode(PyObject *self, PyObject *args);
extern const char zfp_encode_doc[];
extern PyObject *zfp_decode(PyObject *self, PyObject *args);
extern const char zfp_decode_doc[];
/* bitround's rounding, in _bitround.c */
extern PyObject *bitround(PyObject *self, PyObject *args);
extern const char bitround_doc[];

static PyMethodDef methods[] = {
    {"affine", affine, METH_VARARGS, affine_doc},
    {"bitround", bitround, METH_VARARGS, bitround_doc},
    {"f2i", f2i, METH_VARARGS, f2i_doc},
    {"permute", permute, METH_VARARGS, permute_doc},
    {"permute_plan", permute_plan, METH_VARARGS, permute_plan_doc},
    {"scan", scan, METH_VARARGS, scan_doc},
    {"take", take, METH_VARARGS, take_doc},
    {"zfp_api", zfp_api, METH_VARARGS, zfp_api_doc},
    {"zfp_decode", zfp_decode, METH_VARARGS, zfp_decode_doc},
    {"zfp_encode", zfp_encode, METH_VARARGS, zfp_encode_doc},
    {"zfp_max_size", zfp_max_size, METH_VARARGS, zfp_max_size_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels",
    "Optional compiled kernels for scale_offset, cast_value, transpose, zfp and bitround (see _kernels.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

/* a compiler that reassociates float arithmetic (e.g. -ffast-math) breaks the rounding */
static int self_test(void) {
    static const double in[] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999999999999996,
                                4503599627370495.5, -4503599627370495.5, 0.49999999999999994};
    static const double even[] = {0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 2.0,
                                  4503599627370496.0, -4503599627370496.0, 0.0};
    static const double away[] = {1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 2.0,
                                  4503599627370496.0, -4503599627370496.0, 0.0};
    volatile double v; /* keeps the compiler from folding the test at build time */
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        v = in[i];
        if (round_int(v, NEAREST_EVEN) != even[i] || round_int(v, NEAREST_AWAY) != away[i] ||
            round_int(v, TOWARDS_ZERO) != trunc(v) || round_int(v, TOWARDS_POSITIVE) != ceil(v) ||
            round_int(v, TOWARDS_NEGATIVE) != floor(v)) {
            return -1;
        }
    }
    static const float in_f[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4999998f, 8388607.5f,
                                 -8388607.5f, 0.49999997f, 16777215.0f};
    volatile float w;
    for (size_t i = 0; i < sizeof in_f / sizeof in_f[0]; i++) {
        w = in_f[i];
        double d = w; /* the float lanes must give the double lanes' result */
        if (round_int_f(w, NEAREST_EVEN) != round_int(d, NEAREST_EVEN) ||
            round_int_f(w, NEAREST_AWAY) != round_int(d, NEAREST_AWAY) ||
            round_int_f(w, TOWARDS_ZERO) != round_int(d, TOWARDS_ZERO) ||
            round_int_f(w, TOWARDS_POSITIVE) != round_int(d, TOWARDS_POSITIVE) ||
            round_int_f(w, TOWARDS_NEGATIVE) != round_int(d, TOWARDS_NEGATIVE)) {
            return -1;
        }
    }
    return 0;
}

PyMODINIT_FUNC PyInit__kernels(void) {
    if (self_test() < 0) {
        PyErr_SetString(PyExc_ImportError,
                        "numcodecs_ext.core._kernels: rounding self-test failed (built with "
                        "unsafe float optimisations?); the numpy kernels will be used");
        return NULL;
    }
    return PyModule_Create(&module);
}
