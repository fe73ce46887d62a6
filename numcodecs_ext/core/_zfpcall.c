/*
 * A whole libzfp session in one call with the GIL released: zfp_encode(), zfp_decode(),
 * zfp_max_size().
 *
 * Through ctypes, one chunk takes about a dozen foreign calls (open a zfp_stream, set its mode,
 * open a zfp_field and a bitstream, rewind, compress, close all three), each a few microseconds
 * of Python with the GIL held, plus a GIL hand-off around the compress itself. Here the same
 * calls run back to back in C: the GIL is given up once per chunk, and for a float chunk in a
 * lossy mode the pass that checks its values (see _scan.c) runs in the same stretch.
 *
 * The extension is not linked against libzfp: libzfp is found and loaded at run time (see
 * _libzfp.py), and zfp_api() receives the addresses of its functions, taken from that ctypes
 * handle, in the order of API_NAMES in _libzfp.py. The capsule it returns holds them. The calls
 * and their arguments are those of the ctypes path in zfp.py, which runs when this extension is
 * not built; the streams are the same bytes. Part of the _kernels extension (see _kernels.c).
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    void *(*stream_open)(void *, size_t);
    void (*stream_close)(void *);
    void *(*zfp_stream_open)(void *);
    void (*zfp_stream_close)(void *);
    void (*set_bit_stream)(void *, void *);
    void (*rewind)(void *);
    void (*set_reversible)(void *);
    double (*set_rate)(void *, double, int, unsigned, int);
    unsigned (*set_precision)(void *, unsigned);
    double (*set_accuracy)(void *, double);
    int (*set_params)(void *, unsigned, unsigned, unsigned, int);
    size_t (*maximum_size)(const void *, const void *);
    void *(*field_1d)(void *, int, size_t);
    void *(*field_2d)(void *, int, size_t, size_t);
    void *(*field_3d)(void *, int, size_t, size_t, size_t);
    void *(*field_4d)(void *, int, size_t, size_t, size_t, size_t);
    void (*field_free)(void *);
    size_t (*compress)(void *, const void *);
    size_t (*decompress)(void *, void *);
} zfp_api_t;

#define API_FUNCTIONS ((Py_ssize_t)(sizeof(zfp_api_t) / sizeof(void (*)(void))))
#define CAPSULE_NAME "numcodecs_ext.zfp_api"

/* The mode, type and shape of one session. Modes: 0 reversible, 1 fixed_rate (a = rate),
 * 2 fixed_precision (b = precision), 3 fixed_accuracy (a = tolerance), 4 expert (a = maxprec,
 * b = minbits, c = maxbits, d = minexp), as zfp.py's _Mode holds them. */
typedef struct {
    int ztype, mode, ndim;
    double a;
    unsigned b, c;
    int d;
    Py_ssize_t n[4]; /* x (fastest) first */
} spec_t;

typedef struct {
    void *zs, *field, *bs;
} session_t;

static void close_session(const zfp_api_t *api, session_t *s) {
    if (s->bs) api->stream_close(s->bs);
    if (s->field) api->field_free(s->field);
    if (s->zs) api->zfp_stream_close(s->zs);
    s->bs = s->field = s->zs = NULL;
}

/* 0, or -1 (out of memory) or -2 (libzfp refused the expert parameters); nothing left open */
static int open_session(const zfp_api_t *api, const spec_t *p, void *data, session_t *s) {
    s->zs = s->field = s->bs = NULL;
    s->zs = api->zfp_stream_open(NULL);
    if (!s->zs) return -1;
    switch (p->mode) {
    case 0: api->set_reversible(s->zs); break;
    /* zarrs' quirk, kept on purpose: dims = 3 for every chunk, no word alignment */
    case 1: api->set_rate(s->zs, p->a, p->ztype, 3, 0); break;
    case 2: api->set_precision(s->zs, p->b); break;
    case 3: api->set_accuracy(s->zs, p->a); break;
    default:
        if (!api->set_params(s->zs, p->b, p->c, (unsigned)p->a, p->d)) {
            close_session(api, s);
            return -2;
        }
    }
    const size_t x = (size_t)p->n[0], y = (size_t)p->n[1], z = (size_t)p->n[2],
                 w = (size_t)p->n[3];
    switch (p->ndim) {
    case 1: s->field = api->field_1d(data, p->ztype, x); break;
    case 2: s->field = api->field_2d(data, p->ztype, x, y); break;
    case 3: s->field = api->field_3d(data, p->ztype, x, y, z); break;
    default: s->field = api->field_4d(data, p->ztype, x, y, z, w); break;
    }
    if (!s->field) {
        close_session(api, s);
        return -1;
    }
    return 0;
}

static int attach(const zfp_api_t *api, session_t *s, void *buffer, size_t size) {
    s->bs = api->stream_open(buffer, size);
    if (!s->bs) return -1;
    api->set_bit_stream(s->zs, s->bs);
    api->rewind(s->zs);
    return 0;
}

static PyObject *session_error(int code) {
    if (code == -2) {
        PyErr_SetString(PyExc_ValueError, "libzfp refused the expert parameters");
    } else {
        PyErr_NoMemory();
    }
    return NULL;
}

static void free_api(PyObject *capsule) { free(PyCapsule_GetPointer(capsule, CAPSULE_NAME)); }

const char zfp_api_doc[] =
    "zfp_api(addresses) -> capsule\n\n"
    "The libzfp functions the other zfp_* calls use, from their addresses (in the order of\n"
    "API_NAMES in _libzfp.py). The library must stay loaded while the capsule is used.";

PyObject *zfp_api(PyObject *self, PyObject *args) {
    PyObject *seq;
    (void)self;
    if (!PyArg_ParseTuple(args, "O", &seq)) return NULL;
    if (!PyTuple_Check(seq) || PyTuple_Size(seq) != API_FUNCTIONS) {
        PyErr_Format(PyExc_ValueError, "zfp_api: a tuple of %zd addresses is needed",
                     API_FUNCTIONS);
        return NULL;
    }
    zfp_api_t *api = malloc(sizeof *api);
    if (!api) return PyErr_NoMemory();
    void (**slot)(void) = (void (**)(void))api;
    for (Py_ssize_t i = 0; i < API_FUNCTIONS; i++) {
        void *address = PyLong_AsVoidPtr(PyTuple_GetItem(seq, i));
        if (address == NULL) {
            free(api);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "zfp_api: a NULL address");
            return NULL;
        }
        memcpy(&slot[i], &address, sizeof address);
    }
    PyObject *capsule = PyCapsule_New(api, CAPSULE_NAME, free_api);
    if (!capsule) free(api);
    return capsule;
}

#define SPEC_FORMAT "OiiidIIinnnn"
#define SPEC_ARGS(cap, p) \
    &cap, &p.ztype, &p.mode, &p.ndim, &p.a, &p.b, &p.c, &p.d, &p.n[0], &p.n[1], &p.n[2], &p.n[3]

/* The capsule's functions, after checking the spec and, unless ``values`` is NULL, that the
 * buffer holds exactly the field's values (libzfp reads and writes the whole field blindly). */
static const zfp_api_t *api_of(PyObject *capsule, const spec_t *p, const Py_buffer *values) {
    const zfp_api_t *api = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    if (!api) return NULL;
    if (p->ndim < 1 || p->ndim > 4 || p->mode < 0 || p->mode > 4 || p->ztype < 1 ||
        p->ztype > 4) {
        PyErr_SetString(PyExc_ValueError, "zfp: ndim must be 1-4, mode 0-4 and ztype 1-4");
        return NULL;
    }
    Py_ssize_t count = 1;
    for (int i = 0; i < p->ndim; i++) {
        if (p->n[i] <= 0 || count > PY_SSIZE_T_MAX / p->n[i]) {
            PyErr_SetString(PyExc_ValueError, "zfp: sizes must be positive");
            return NULL;
        }
        count *= p->n[i];
    }
    const Py_ssize_t item = (p->ztype == 1 || p->ztype == 3) ? 4 : 8;
    if (values && (count > PY_SSIZE_T_MAX / item || values->len != count * item)) {
        PyErr_SetString(PyExc_ValueError, "zfp: the values buffer does not match the shape");
        return NULL;
    }
    return api;
}

const char zfp_max_size_doc[] =
    "zfp_max_size(api, ztype, mode, ndim, a, b, c, d, nx, ny, nz, nw) -> int\n\n"
    "zfp_stream_maximum_size() for this mode, type and shape.";

PyObject *zfp_max_size(PyObject *self, PyObject *args) {
    PyObject *capsule;
    spec_t p;
    session_t s;
    (void)self;
    if (!PyArg_ParseTuple(args, SPEC_FORMAT, SPEC_ARGS(capsule, p))) return NULL;
    const zfp_api_t *api = api_of(capsule, &p, NULL);
    if (!api) return NULL;
    int code = open_session(api, &p, NULL, &s);
    if (code) return session_error(code);
    size_t size = api->maximum_size(s.zs, s.field);
    close_session(api, &s);
    return PyLong_FromSize_t(size);
}

/* what _scan.c's scan() finds, reduced to "may these values be compressed as they are" */
/* compiled for AVX-512, AVX2, SSE4.2 and baseline x86-64 (the loader picks): the check is a pass
 * over the whole chunk before libzfp's, 0.37 ms per 4 MiB of float32 in baseline code, 0.16 with
 * AVX-512 (measured); comparisons only, so every clone gives the same answer */
#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && \
    (!defined(__clang__) || __clang_major__ >= 14)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "arch=x86-64-v2", "default")))
#endif
static int values_ok(const void *data, Py_ssize_t n, int item, double limit, double tiny) {
    if (item == 4) {
        const float *x = data;
        const float lim = (float)limit, small = (float)tiny;
        int bad = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            const float a = x[i] < 0 ? -x[i] : x[i];
            /* NaN fails both comparisons: !(a < lim) catches it with the too-large values */
            bad |= (!(a < lim)) | ((a > 0.0f) & (a < small));
        }
        return !bad;
    }
    const double *x = data;
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const double a = x[i] < 0 ? -x[i] : x[i];
        bad |= (!(a < limit)) | ((a > 0.0) & (a < tiny));
    }
    return !bad;
}

const char zfp_encode_doc[] =
    "zfp_encode(api, ztype, mode, ndim, a, b, c, d, nx, ny, nz, nw, data, scratch, check_item,\n"
    "           limit, tiny) -> bytes | None\n\n"
    "Compress the C-contiguous ``data`` through the writable ``scratch`` (at least\n"
    "zfp_max_size() bytes) and return the stream. With check_item 4 or 8 (float32, float64),\n"
    "first check that every value v has |v| < limit and is not 0 < |v| < tiny (NaN and\n"
    "infinity fail); if any does not, compress nothing and return None (the caller's checks then\n"
    "decide, and word the error).";

/* streams up to this size are copied into their bytes object with the GIL held: below it a
 * second hand-off costs more than the copy */
#define COPY_HELD_BYTES 65536

PyObject *zfp_encode(PyObject *self, PyObject *args) {
    PyObject *capsule;
    spec_t p;
    Py_buffer data, scratch;
    int check_item;
    double limit, tiny;
    (void)self;
    if (!PyArg_ParseTuple(args, SPEC_FORMAT "y*w*idd", SPEC_ARGS(capsule, p), &data, &scratch,
                          &check_item, &limit, &tiny)) {
        return NULL;
    }
    PyObject *result = NULL;
    const zfp_api_t *api = api_of(capsule, &p, &data);
    if (!api) goto done;
    if (check_item && (check_item != 4 && check_item != 8)) {
        PyErr_SetString(PyExc_ValueError, "zfp_encode: check_item must be 0, 4 or 8");
        goto done;
    }
    int ok = 1, code = 0;
    size_t size = 0, capacity = 0;
    session_t s;
    Py_BEGIN_ALLOW_THREADS
    if (check_item) ok = values_ok(data.buf, data.len / check_item, check_item, limit, tiny);
    if (ok) {
        code = open_session(api, &p, data.buf, &s);
        if (!code) {
            capacity = api->maximum_size(s.zs, s.field);
            if (capacity > (size_t)scratch.len || attach(api, &s, scratch.buf, capacity)) {
                code = capacity > (size_t)scratch.len ? -3 : -1;
            } else {
                size = api->compress(s.zs, s.field);
            }
            close_session(api, &s);
        }
    }
    Py_END_ALLOW_THREADS
    if (!ok) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (code == -3) {
        PyErr_SetString(PyExc_ValueError, "zfp_encode: the scratch buffer is too small");
        goto done;
    }
    if (code) {
        session_error(code);
        goto done;
    }
    if (size == 0 || size > capacity) {
        PyErr_Format(PyExc_RuntimeError, "zfp_compress failed (returned %zu, capacity %zu)", size,
                     capacity);
        goto done;
    }
    result = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (result) {
        char *target = PyBytes_AsString(result);
        if (size <= COPY_HELD_BYTES) {
            memcpy(target, scratch.buf, size);
        } else {
            /* the new bytes object is ours alone until we return it */
            Py_BEGIN_ALLOW_THREADS
            memcpy(target, scratch.buf, size);
            Py_END_ALLOW_THREADS
        }
    }
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&scratch);
    return result;
}

const char zfp_decode_doc[] =
    "zfp_decode(api, ztype, mode, ndim, a, b, c, d, nx, ny, nz, nw, stream, padded, out) -> int\n\n"
    "Copy ``stream`` into the writable ``padded`` (libzfp reads past the end of a truncated or\n"
    "corrupt stream, so it gets a buffer at least zfp_max_size() + 8 bytes long), decompress it\n"
    "into the C-contiguous writable ``out`` and return the bytes the stream took (the caller\n"
    "checks that against the stream's length).";

PyObject *zfp_decode(PyObject *self, PyObject *args) {
    PyObject *capsule;
    spec_t p;
    Py_buffer stream, padded, out;
    (void)self;
    if (!PyArg_ParseTuple(args, SPEC_FORMAT "y*w*w*", SPEC_ARGS(capsule, p), &stream, &padded,
                          &out)) {
        return NULL;
    }
    PyObject *result = NULL;
    const zfp_api_t *api = api_of(capsule, &p, &out);
    if (!api) goto done;
    if (padded.len < stream.len + 8) {
        PyErr_SetString(PyExc_ValueError, "zfp_decode: the padded buffer is too small");
        goto done;
    }
    int code;
    size_t consumed = 0, capacity = 0;
    session_t s;
    Py_BEGIN_ALLOW_THREADS
    code = open_session(api, &p, out.buf, &s);
    if (!code) {
        capacity = api->maximum_size(s.zs, s.field);
        if ((size_t)padded.len < capacity + 8) {
            code = -3;
        } else {
            memcpy(padded.buf, stream.buf, (size_t)stream.len);
            code = attach(api, &s, padded.buf, (size_t)padded.len);
            if (!code) consumed = api->decompress(s.zs, s.field);
        }
        close_session(api, &s);
    }
    Py_END_ALLOW_THREADS
    if (code == -3) {
        PyErr_SetString(PyExc_ValueError, "zfp_decode: the padded buffer is too small");
    } else if (code) {
        session_error(code);
    } else {
        result = PyLong_FromSize_t(consumed);
    }
done:
    PyBuffer_Release(&stream);
    PyBuffer_Release(&padded);
    PyBuffer_Release(&out);
    return result;
}
