/*
 * permute(): the tiled copy behind transpose, in one call with the GIL released.
 *
 * The source is any strided N-d view (already permuted into output order); the destination is a
 * C-contiguous buffer of the same shape. Copying element by element in output order reads the
 * source with a long stride, fetching each cache line many times; instead the copy goes tile by
 * tile over two axes: output axis p (the one the source is densest along) and the last output
 * axis (the one the destination is contiguous along), so both sides of a tile stay in L1. All
 * other axes are walked outside the tiles, in the destination's order.
 *
 * It copies bytes: items are moved as 1-, 2-, 4- or 8-byte words (or with memcpy for other
 * sizes), never interpreted, so the result is numpy's copy bit for bit for every data type.
 * Part of the _kernels extension (see _kernels.c); the limited C API only.
 */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x030B0000
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* One tile: rows along output axis p, columns along the last output axis. The inner loop runs
 * along the columns, writing the destination contiguously; the source is read from ``cols``
 * lines, each advancing contiguously (when the source is dense along p) as the rows go by. */
#define DEFINE_TILE(name, T)                                                                       \
    static void name(const char *src, char *dst, Py_ssize_t rows, Py_ssize_t cols,                 \
                     Py_ssize_t s_row, Py_ssize_t s_col, Py_ssize_t d_row) {                       \
        for (Py_ssize_t i = 0; i < rows; i++) {                                                    \
            const char *s = src + i * s_row;                                                       \
            char *d = dst + i * d_row;                                                             \
            for (Py_ssize_t j = 0; j < cols; j++) {                                                \
                T v;                                                                               \
                memcpy(&v, s + j * s_col, sizeof(T));                                              \
                memcpy(d + j * (Py_ssize_t)sizeof(T), &v, sizeof(T));                              \
            }                                                                                      \
        }                                                                                          \
    }

DEFINE_TILE(tile_1, uint8_t)
DEFINE_TILE(tile_2, uint16_t)
DEFINE_TILE(tile_4, uint32_t)
DEFINE_TILE(tile_8, uint64_t)
typedef struct { uint64_t lo, hi; } item16_t;
DEFINE_TILE(tile_16, item16_t)

static void tile_any(const char *src, char *dst, Py_ssize_t rows, Py_ssize_t cols,
                     Py_ssize_t s_row, Py_ssize_t s_col, Py_ssize_t d_row, Py_ssize_t item) {
    for (Py_ssize_t j = 0; j < cols; j++) {
        for (Py_ssize_t i = 0; i < rows; i++) {
            memcpy(dst + i * d_row + j * item, src + i * s_row + j * s_col, (size_t)item);
        }
    }
}

#define MAX_DIMS 64

typedef struct {
    int ndim, p;
    Py_ssize_t item;
    Py_ssize_t shape[MAX_DIMS], s_strides[MAX_DIMS], d_strides[MAX_DIMS];
} plan_t;

/* A 2-d plane (axis p by the last axis) at the given source and destination, tile by tile. */
static void copy_plane(const plan_t *pl, const char *src, char *dst) {
    const int q = pl->ndim - 1, p = pl->p;
    const Py_ssize_t item = pl->item;
    /* 512 rows by 8 columns: the 8 source lines being read stay in L1 even when the source
     * stride is a multiple of 4 KiB (all 8 in one cache set, which has 8 ways), and each
     * destination row gets 8 items at a time. Measured fastest on 1- to 16-byte items. */
    const Py_ssize_t edge_r = 512, edge_c = 8;
    const Py_ssize_t rows = pl->shape[p], cols = pl->shape[q];
    const Py_ssize_t s_row = pl->s_strides[p], s_col = pl->s_strides[q], d_row = pl->d_strides[p];
    for (Py_ssize_t i0 = 0; i0 < rows; i0 += edge_r) {
        const Py_ssize_t r = rows - i0 < edge_r ? rows - i0 : edge_r;
        for (Py_ssize_t j0 = 0; j0 < cols; j0 += edge_c) {
            const Py_ssize_t c = cols - j0 < edge_c ? cols - j0 : edge_c;
            const char *s = src + i0 * s_row + j0 * s_col;
            char *d = dst + i0 * d_row + j0 * item;
            switch (item) {
            case 1: tile_1(s, d, r, c, s_row, s_col, d_row); break;
            case 2: tile_2(s, d, r, c, s_row, s_col, d_row); break;
            case 4: tile_4(s, d, r, c, s_row, s_col, d_row); break;
            case 8: tile_8(s, d, r, c, s_row, s_col, d_row); break;
            case 16: tile_16(s, d, r, c, s_row, s_col, d_row); break;
            default: tile_any(s, d, r, c, s_row, s_col, d_row, item);
            }
        }
    }
}

/* Every plane, walking the other axes as an odometer in the destination's (C) order. */
static void copy_all(const plan_t *pl, const char *src, char *dst) {
    Py_ssize_t index[MAX_DIMS] = {0};
    const int q = pl->ndim - 1;
    for (;;) {
        copy_plane(pl, src, dst);
        int ax = q - 1;
        for (; ax >= 0; ax--) {
            if (ax == pl->p) {
                continue;
            }
            if (++index[ax] < pl->shape[ax]) {
                src += pl->s_strides[ax];
                dst += pl->d_strides[ax];
                break;
            }
            src -= (pl->shape[ax] - 1) * pl->s_strides[ax];
            dst -= (pl->shape[ax] - 1) * pl->d_strides[ax];
            index[ax] = 0;
        }
        if (ax < 0) {
            return;
        }
    }
}

const char permute_doc[] =
    "permute(src, dst, p) -> None\n\n"
    "Copy the strided N-d buffer ``src`` into the C-contiguous buffer ``dst`` of the same shape\n"
    "and item size, tile by tile over axis ``p`` and the last axis (``0 <= p < ndim - 1``).";

PyObject *permute(PyObject *self, PyObject *args) {
    PyObject *src_obj;
    Py_buffer src, dst;
    int p;
    (void)self;
    if (!PyArg_ParseTuple(args, "Ow*i", &src_obj, &dst, &p)) {
        return NULL;
    }
    if (PyObject_GetBuffer(src_obj, &src, PyBUF_STRIDED_RO) < 0) {
        PyBuffer_Release(&dst);
        return NULL;
    }
    PyObject *result = NULL;
    plan_t pl;
    pl.ndim = src.ndim;
    pl.p = p;
    pl.item = src.itemsize;
    if (src.ndim < 2 || src.ndim > MAX_DIMS || p < 0 || p >= src.ndim - 1 || src.itemsize < 1 ||
        src.suboffsets != NULL) {
        PyErr_SetString(PyExc_ValueError, "permute: src must be 2- to 64-d, 0 <= p < ndim - 1");
        goto done;
    }
    Py_ssize_t stride = src.itemsize;
    for (int ax = src.ndim - 1; ax >= 0; ax--) {
        pl.shape[ax] = src.shape[ax];
        pl.s_strides[ax] = src.strides[ax];
        pl.d_strides[ax] = stride;
        stride *= src.shape[ax];
    }
    if (dst.len != src.len) {
        PyErr_SetString(PyExc_ValueError, "permute: dst must have as many bytes as src");
        goto done;
    }
    if (src.len > 0) {
        Py_BEGIN_ALLOW_THREADS
        copy_all(&pl, (const char *)src.buf, (char *)dst.buf);
        Py_END_ALLOW_THREADS
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return result;
}

const char permute_plan_doc[] =
    "permute_plan(src, dst, plan) -> None\n\n"
    "permute() for a C-contiguous ``src`` whose strided view is described by ``plan``: native\n"
    "int64 values ndim, p, item size, then ndim sizes and ndim non-negative source strides\n"
    "(bytes), in output order. The view must lie inside ``src``; ``dst`` must hold it exactly.\n"
    "It spares the caller building the view and exporting its strides for every chunk.";

PyObject *permute_plan(PyObject *self, PyObject *args) {
    Py_buffer src, dst, plan;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*y*", &src, &dst, &plan)) {
        return NULL;
    }
    PyObject *result = NULL;
    plan_t pl;
    const int64_t *v = (const int64_t *)plan.buf;
    const Py_ssize_t count = plan.len / (Py_ssize_t)sizeof(int64_t);
    if (plan.len % (Py_ssize_t)sizeof(int64_t) || count < 3 || v[0] < 2 || v[0] > MAX_DIMS ||
        count != 3 + 2 * v[0] || v[1] < 0 || v[1] >= v[0] - 1 || v[2] < 1) {
        PyErr_SetString(PyExc_ValueError, "permute_plan: malformed plan");
        goto done;
    }
    pl.ndim = (int)v[0];
    pl.p = (int)v[1];
    pl.item = (Py_ssize_t)v[2];
    Py_ssize_t stride = pl.item, last = 0; /* the offset of the view's last item */
    for (int ax = pl.ndim - 1; ax >= 0; ax--) {
        const int64_t n = v[3 + ax], s = v[3 + pl.ndim + ax];
        if (n < 1 || s < 0 || n > PY_SSIZE_T_MAX / stride ||
            (n > 1 && s > (PY_SSIZE_T_MAX - last) / (n - 1))) {
            PyErr_SetString(PyExc_ValueError, "permute_plan: sizes must be positive, strides non-negative");
            goto done;
        }
        pl.shape[ax] = (Py_ssize_t)n;
        pl.s_strides[ax] = (Py_ssize_t)s;
        pl.d_strides[ax] = stride;
        stride *= (Py_ssize_t)n;
        last += (Py_ssize_t)((n - 1) * s);
    }
    if (last > src.len - pl.item || dst.len != stride) {
        PyErr_SetString(PyExc_ValueError, "permute_plan: the view does not fit src, or dst is not its size");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    copy_all(&pl, (const char *)src.buf, (char *)dst.buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    PyBuffer_Release(&plan);
    return result;
}
