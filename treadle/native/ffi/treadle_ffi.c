/* Treadle's generic XLA FFI dispatcher: one handler per platform for every kernel and Python callable.
 *
 * Built once on first use (treadle/_src/interop/jax_ffi.py) with the system compiler against the XLA FFI C API
 * header that ships in jaxlib (jax.ffi.include_dir()), cached next to compiled kernels, and registered with
 * jax.ffi.register_ffi_target as "treadle_ffi". Only the C API is used, so it compiles in a fraction of a second.
 *
 * Every call carries two int64 attributes:
 *   plan   address of a treadle_ffi_plan built and kept alive (for the whole process) by Python;
 *   token  the process token Python gave treadle_ffi_set_token(). An executable restored from JAX's persistent
 *          compilation cache in another process carries a stale plan address: the token no longer matches and
 *          the call fails with a message instead of touching freed memory.
 *
 * A plan describes one launch for fixed (unbatched) shapes. Python precomputes the kernel's Args struct as a
 * byte template: static scalars, and for each array parameter an ArrayDesc with shape, byte strides and ndim
 * already filled in. Per call, the handler copies the template and writes only the data / grad pointers of each
 * array slot, taken from the XLA buffers, then calls the kernel entry point `entry(bounds, args, nthreads)`.
 *
 * Batching (jax.vmap with vmap_method "broadcast_all" or "expand_dims"): XLA passes buffers with extra leading
 * dimensions. Each buffer's unbatched rank is known, so the leading (rank - base_rank) dimensions are batch
 * dimensions; a batch dimension of size 1 is broadcast (stride 0). The handler launches once per batch element
 * with the data pointers offset accordingly. ("sequential" needs nothing: JAX then loops itself.)
 *
 * Buffers flagged zero_fill (pure outputs, gradients of inputs) are set to zero before the launches, so kernels
 * that accumulate (atomic_add, adjoints) see a clean buffer and results never depend on stale memory.
 *
 * Callable plans (jax_callable) call back into Python through a ctypes function pointer with the per-batch-element
 * data pointers of all buffers; the callback wraps them as Treadle arrays and runs the user's function.
 *
 * CUDA (treadle_ffi_cuda_handler, registered for platform "CUDA"): the buffers are device pointers and the work
 * must be queued on XLA's stream, taken from the call's execution context with XLA_FFI_Stream_Get (a CUstream; only
 * ever passed along, so no CUDA header is needed), and the device ordinal with XLA_FFI_DeviceOrdinal_Get (-1 when
 * the running XLA is too old to have it). CUDA kernel plans (kind 2) fill the same Args bytes per batch element and
 * hand them to plan->cuda_launch, a ctypes callback into Treadle's CUDA launch path (cuLaunchKernel on that stream;
 * the driver copies the parameters during the call). Zero-filled buffers are cleared through the same callback
 * (phase 0: cuMemsetD8Async on the stream) instead of memset, which cannot touch device memory.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xla/ffi/api/c_api.h"

#if defined(_WIN32)
#define TREADLE_FFI_EXPORT __declspec(dllexport)
#else
#define TREADLE_FFI_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define TREADLE_FFI_MAX_BUFFERS 256
#define TREADLE_FFI_MAX_BATCH_DIMS 8
#define TREADLE_FFI_STACK_ARGS 4096
#define TREADLE_FFI_PLAN_MAGIC 0x5452454144464649LL /* "TREADFFI" */

typedef void (*treadle_entry_fn)(const void* bounds, const void* args, int32_t nthreads);
/* Returns 0 on success; otherwise writes a message into err (errlen bytes, NUL-terminated). */
typedef int32_t (*treadle_callback_fn)(int64_t ctx, int64_t nbufs, void** data, char* err, int64_t errlen);
/* CUDA: phase 0 zeroes sizes[i] bytes at ((void**)data)[i] for each of the nbufs buffers (0: leave it); phase 1
 * launches the kernel with data = the filled Args struct (sizes unused). stream: the CUstream; ordinal: the device. */
typedef int32_t (*treadle_cuda_fn)(int64_t ctx, int64_t stream, int64_t ordinal, int64_t phase, void* data,
                                   const int64_t* sizes, int64_t nbufs, char* err, int64_t errlen);

/* One array parameter of the kernel: where its ArrayDesc lives in Args and which buffers feed it. */
typedef struct treadle_ffi_slot {
    int64_t offset;   /* byte offset of the ArrayDesc in the Args struct */
    int32_t data_buf; /* buffer index for .data (0..nargs-1: arguments, nargs..: results), -1: keep template */
    int32_t grad_buf; /* buffer index for .grad, -1: none (null) */
} treadle_ffi_slot;

/* One XLA buffer (arguments first, then results), unbatched. */
typedef struct treadle_ffi_buffer {
    int64_t base_bytes; /* bytes of one unbatched buffer */
    int32_t base_rank;  /* rank of one unbatched buffer (kernel dims + element dims) */
    int32_t zero_fill;  /* 1: set to zero before launching */
} treadle_ffi_buffer;

/* Must match _Plan in treadle/_src/interop/jax_ffi.py field for field. */
typedef struct treadle_ffi_plan {
    int64_t magic;
    int32_t kind; /* 0: CPU kernel launch, 1: Python callback (CPU), 2: CUDA kernel launch */
    int32_t nargs;
    int32_t nrets;
    int32_t nslots;
    const treadle_ffi_slot* slots;
    const treadle_ffi_buffer* buffers; /* nargs + nrets entries */
    const unsigned char* args_template;
    int64_t args_size;
    const void* bounds; /* treadle::launch_bounds_t */
    int64_t launch_size;
    int32_t nthreads;
    int32_t pad;
    treadle_entry_fn entry;
    treadle_callback_fn callback;
    int64_t callback_ctx;
    treadle_cuda_fn cuda_launch; /* kind 2 */
    int64_t cuda_ctx;
} treadle_ffi_plan;

/* ArrayDesc (treadle::array_t): data and grad are the first two fields. */
typedef struct treadle_array_head {
    uint64_t data;
    uint64_t grad;
} treadle_array_head;

static volatile int64_t g_token = 0;

TREADLE_FFI_EXPORT void treadle_ffi_set_token(int64_t token) { g_token = token; }

TREADLE_FFI_EXPORT int64_t treadle_ffi_plan_size(void) { return (int64_t)sizeof(treadle_ffi_plan); }

static XLA_FFI_Error* make_error(const XLA_FFI_Api* api, XLA_FFI_Error_Code code, const char* message) {
    XLA_FFI_Error_Create_Args args;
    memset(&args, 0, sizeof(args));
    args.struct_size = XLA_FFI_Error_Create_Args_STRUCT_SIZE;
    args.extension_start = NULL;
    args.message = message;
    args.errc = code;
    return api->XLA_FFI_Error_Create(&args);
}

static int name_is(const XLA_FFI_ByteSpan* name, const char* s) {
    size_t n = strlen(s);
    return name->len == n && memcmp(name->ptr, s, n) == 0;
}

static int find_i64_attr(const XLA_FFI_CallFrame* frame, const char* key, int64_t* out) {
    for (int64_t i = 0; i < frame->attrs.size; ++i) {
        if (!name_is(frame->attrs.names[i], key)) continue;
        if (frame->attrs.types[i] != XLA_FFI_AttrType_SCALAR) return 0;
        const XLA_FFI_Scalar* s = (const XLA_FFI_Scalar*)frame->attrs.attrs[i];
        switch (s->dtype) {
            case XLA_FFI_DataType_S64: *out = *(const int64_t*)s->value; return 1;
            case XLA_FFI_DataType_U64: *out = (int64_t)*(const uint64_t*)s->value; return 1;
            case XLA_FFI_DataType_S32: *out = *(const int32_t*)s->value; return 1;
            default: return 0;
        }
    }
    return 0;
}

static XLA_FFI_Error* dispatch(XLA_FFI_CallFrame* frame, int cuda) {
    const XLA_FFI_Api* api = frame->api;
    if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return NULL;

    int64_t plan_addr = 0, token = 0;
    if (!find_i64_attr(frame, "plan", &plan_addr) || !find_i64_attr(frame, "token", &token))
        return make_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                          "treadle_ffi: the call has no int64 'plan' / 'token' attributes");
    if (token != g_token || plan_addr == 0)
        return make_error(api, XLA_FFI_Error_Code_FAILED_PRECONDITION,
                          "treadle_ffi: this executable was compiled in another process (e.g. restored from JAX's "
                          "persistent compilation cache); Treadle kernel calls must be traced in the running process");
    const treadle_ffi_plan* plan = (const treadle_ffi_plan*)(intptr_t)plan_addr;
    if (plan->magic != TREADLE_FFI_PLAN_MAGIC)
        return make_error(api, XLA_FFI_Error_Code_INTERNAL, "treadle_ffi: corrupted launch plan");
    if (cuda && plan->kind != 2)
        return make_error(api, XLA_FFI_Error_Code_FAILED_PRECONDITION,
                          "treadle_ffi: this call was traced for the CPU but runs on a CUDA device (trace it with "
                          "the CUDA device as JAX's default device, or put its inputs on that device)");
    if (!cuda && plan->kind == 2)
        return make_error(api, XLA_FFI_Error_Code_FAILED_PRECONDITION,
                          "treadle_ffi: this call was traced for a CUDA device but runs on the CPU");
    int64_t stream = 0, ordinal = -1;
    if (cuda) {
        XLA_FFI_Stream_Get_Args sa;
        memset(&sa, 0, sizeof(sa));
        sa.struct_size = XLA_FFI_Stream_Get_Args_STRUCT_SIZE;
        sa.ctx = frame->ctx;
        XLA_FFI_Error* e = api->XLA_FFI_Stream_Get(&sa);
        if (e != NULL) return e;
        stream = (int64_t)(intptr_t)sa.stream;
        if (api->struct_size >= XLA_FFI_Api_STRUCT_SIZE && api->XLA_FFI_DeviceOrdinal_Get != NULL) {
            XLA_FFI_DeviceOrdinal_Get_Args oa;
            memset(&oa, 0, sizeof(oa));
            oa.struct_size = XLA_FFI_DeviceOrdinal_Get_Args_STRUCT_SIZE;
            oa.ctx = frame->ctx;
            e = api->XLA_FFI_DeviceOrdinal_Get(&oa);
            if (e != NULL) return e;
            ordinal = oa.device_ordinal;
        }
    }

    const int64_t nargs = frame->args.size, nrets = frame->rets.size, nbufs = nargs + nrets;
    if (nargs != plan->nargs || nrets != plan->nrets || nbufs > TREADLE_FFI_MAX_BUFFERS)
        return make_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                          "treadle_ffi: buffer count does not match the launch plan");

    XLA_FFI_Buffer* bufs[TREADLE_FFI_MAX_BUFFERS];
    for (int64_t i = 0; i < nargs; ++i) bufs[i] = (XLA_FFI_Buffer*)frame->args.args[i];
    for (int64_t i = 0; i < nrets; ++i) bufs[nargs + i] = (XLA_FFI_Buffer*)frame->rets.rets[i];

    /* Batch dimensions: the leading dims beyond each buffer's unbatched rank (same count for every buffer). */
    int64_t batch_rank = -1;
    int64_t batch_shape[TREADLE_FFI_MAX_BATCH_DIMS];
    for (int64_t i = 0; i < nbufs; ++i) {
        int64_t br = bufs[i]->rank - plan->buffers[i].base_rank;
        if (batch_rank < 0) {
            batch_rank = br;
            if (br < 0 || br > TREADLE_FFI_MAX_BATCH_DIMS)
                return make_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                                  "treadle_ffi: unsupported buffer rank (too many vmap dimensions?)");
            for (int64_t d = 0; d < br; ++d) batch_shape[d] = 1;
        } else if (br != batch_rank) {
            return make_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                              "treadle_ffi: buffers have different numbers of batch dimensions");
        }
        for (int64_t d = 0; d < br; ++d) {
            int64_t n = bufs[i]->dims[d];
            if (n != 1) {
                if (batch_shape[d] != 1 && batch_shape[d] != n)
                    return make_error(api, XLA_FFI_Error_Code_INVALID_ARGUMENT,
                                      "treadle_ffi: batch dimensions of the buffers do not match");
                batch_shape[d] = n;
            }
        }
    }
    if (batch_rank < 0) batch_rank = 0;
    int64_t nbatch = 1;
    for (int64_t d = 0; d < batch_rank; ++d) nbatch *= batch_shape[d];

    /* Per-buffer byte stride of each batch dimension (0 where the buffer broadcasts). */
    int64_t bstride[TREADLE_FFI_MAX_BUFFERS][TREADLE_FFI_MAX_BATCH_DIMS];
    int64_t zero_bytes[TREADLE_FFI_MAX_BUFFERS];
    void* base_ptrs[TREADLE_FFI_MAX_BUFFERS];
    int any_zero = 0;
    char err[2048];
    for (int64_t i = 0; i < nbufs; ++i) {
        int64_t s = plan->buffers[i].base_bytes;
        int64_t total = s;
        for (int64_t d = batch_rank - 1; d >= 0; --d) {
            int64_t n = bufs[i]->dims[d];
            bstride[i][d] = n == 1 ? 0 : s;
            s *= n;
            total *= n;
        }
        base_ptrs[i] = bufs[i]->data;
        zero_bytes[i] = (plan->buffers[i].zero_fill && total > 0 && bufs[i]->data != NULL) ? total : 0;
        if (zero_bytes[i] == 0) continue;
        any_zero = 1;
        if (!cuda) memset(bufs[i]->data, 0, (size_t)total);
    }
    if (cuda && any_zero) {
        err[0] = '\0';
        if (plan->cuda_launch(plan->cuda_ctx, stream, ordinal, 0, base_ptrs, zero_bytes, nbufs, err,
                              (int64_t)sizeof(err)) != 0) {
            err[sizeof(err) - 1] = '\0';
            return make_error(api, XLA_FFI_Error_Code_INTERNAL, err[0] ? err : "treadle_ffi: clearing a buffer failed");
        }
    }

    if (plan->kind == 1) { /* Python callable */
        void* ptrs[TREADLE_FFI_MAX_BUFFERS];
        for (int64_t b = 0; b < nbatch; ++b) {
            int64_t rem = b;
            int64_t idx[TREADLE_FFI_MAX_BATCH_DIMS];
            for (int64_t d = batch_rank - 1; d >= 0; --d) {
                idx[d] = rem % batch_shape[d];
                rem /= batch_shape[d];
            }
            for (int64_t i = 0; i < nbufs; ++i) {
                int64_t off = 0;
                for (int64_t d = 0; d < batch_rank; ++d) off += idx[d] * bstride[i][d];
                ptrs[i] = (char*)bufs[i]->data + off;
            }
            err[0] = '\0';
            if (plan->callback(plan->callback_ctx, nbufs, ptrs, err, (int64_t)sizeof(err)) != 0) {
                err[sizeof(err) - 1] = '\0';
                return make_error(api, XLA_FFI_Error_Code_INTERNAL, err[0] ? err : "treadle jax_callable failed");
            }
        }
        return NULL;
    }

    if (plan->launch_size <= 0) return NULL;
    unsigned char stack_args[TREADLE_FFI_STACK_ARGS];
    unsigned char* args = stack_args;
    if (plan->args_size > TREADLE_FFI_STACK_ARGS) {
        args = (unsigned char*)malloc((size_t)plan->args_size);
        if (args == NULL) return make_error(api, XLA_FFI_Error_Code_RESOURCE_EXHAUSTED, "treadle_ffi: out of memory");
    }
    memcpy(args, plan->args_template, (size_t)plan->args_size);
    for (int64_t b = 0; b < nbatch; ++b) {
        int64_t rem = b;
        int64_t idx[TREADLE_FFI_MAX_BATCH_DIMS];
        for (int64_t d = batch_rank - 1; d >= 0; --d) {
            idx[d] = rem % batch_shape[d];
            rem /= batch_shape[d];
        }
        for (int32_t k = 0; k < plan->nslots; ++k) {
            const treadle_ffi_slot* s = &plan->slots[k];
            treadle_array_head* head = (treadle_array_head*)(args + s->offset);
            if (s->data_buf >= 0) {
                int64_t off = 0;
                for (int64_t d = 0; d < batch_rank; ++d) off += idx[d] * bstride[s->data_buf][d];
                head->data = (uint64_t)(uintptr_t)((char*)bufs[s->data_buf]->data + off);
            }
            if (s->grad_buf >= 0) {
                int64_t off = 0;
                for (int64_t d = 0; d < batch_rank; ++d) off += idx[d] * bstride[s->grad_buf][d];
                head->grad = (uint64_t)(uintptr_t)((char*)bufs[s->grad_buf]->data + off);
            }
        }
        if (!cuda) {
            plan->entry(plan->bounds, args, plan->nthreads);
            continue;
        }
        err[0] = '\0';
        if (plan->cuda_launch(plan->cuda_ctx, stream, ordinal, 1, args, NULL, nbufs, err, (int64_t)sizeof(err)) != 0) {
            err[sizeof(err) - 1] = '\0';
            if (args != stack_args) free(args);
            return make_error(api, XLA_FFI_Error_Code_INTERNAL, err[0] ? err : "treadle_ffi: CUDA launch failed");
        }
    }
    if (args != stack_args) free(args);
    return NULL;
}

/* Registration-time query (both platforms): report the FFI API version this handler was built against. */
static int answer_metadata(XLA_FFI_CallFrame* frame) {
    if (frame->extension_start == NULL || frame->extension_start->type != XLA_FFI_Extension_Metadata) return 0;
    XLA_FFI_Metadata_Extension* ext = (XLA_FFI_Metadata_Extension*)frame->extension_start;
    ext->metadata->api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
    ext->metadata->api_version.extension_start = NULL;
    ext->metadata->api_version.major_version = XLA_FFI_API_MAJOR;
    ext->metadata->api_version.minor_version = XLA_FFI_API_MINOR;
    ext->metadata->traits = 0; /* not command-buffer compatible: XLA never captures the call into a CUDA graph */
    return 1;
}

TREADLE_FFI_EXPORT XLA_FFI_Error* treadle_ffi_handler(XLA_FFI_CallFrame* frame) {
    if (answer_metadata(frame)) return NULL;
    return dispatch(frame, 0);
}

TREADLE_FFI_EXPORT XLA_FFI_Error* treadle_ffi_cuda_handler(XLA_FFI_CallFrame* frame) {
    if (answer_metadata(frame)) return NULL;
    return dispatch(frame, 1);
}

/* ---- Self-test entry (tests only): runs a handler on a call frame built here, with a stand-in for XLA's API whose
 * Stream_Get / DeviceOrdinal_Get return the given stream and ordinal. Lets the CUDA handler be exercised end to end
 * (against Treadle's fake CUDA driver) on machines without a GPU or a CUDA-enabled jaxlib. Not used by XLA. */
struct XLA_FFI_Error {
    XLA_FFI_Error_Code code;
    char message[2048];
};

static int64_t st_stream = 0;
static int32_t st_ordinal = 0;

static XLA_FFI_Error* st_error_create(XLA_FFI_Error_Create_Args* args) {
    XLA_FFI_Error* e = (XLA_FFI_Error*)calloc(1, sizeof(XLA_FFI_Error));
    if (e == NULL) return NULL;
    e->code = args->errc;
    snprintf(e->message, sizeof(e->message), "%s", args->message ? args->message : "");
    return e;
}

static XLA_FFI_Error* st_stream_get(XLA_FFI_Stream_Get_Args* args) {
    args->stream = (void*)(intptr_t)st_stream;
    return NULL;
}

static XLA_FFI_Error* st_ordinal_get(XLA_FFI_DeviceOrdinal_Get_Args* args) {
    args->device_ordinal = st_ordinal;
    return NULL;
}

/* Returns 0 on success, else the error code (message in err). with_ordinal = 0 mimics an XLA without
 * XLA_FFI_DeviceOrdinal_Get (a shorter XLA_FFI_Api). dims: 8 entries per buffer. */
TREADLE_FFI_EXPORT int32_t treadle_ffi_selftest(int32_t cuda, int64_t plan, int64_t token, int64_t nargs, int64_t nrets,
                                                void** data, const int64_t* ranks, int64_t* dims, int64_t stream,
                                                int32_t ordinal, int32_t with_ordinal, char* err, int64_t errlen) {
    XLA_FFI_Api api;
    memset(&api, 0, sizeof(api));
    api.struct_size = with_ordinal ? XLA_FFI_Api_STRUCT_SIZE : offsetof(XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get);
    api.XLA_FFI_Error_Create = st_error_create;
    api.XLA_FFI_Stream_Get = st_stream_get;
    if (with_ordinal) api.XLA_FFI_DeviceOrdinal_Get = st_ordinal_get;
    st_stream = stream;
    st_ordinal = ordinal;
    if (nargs + nrets > TREADLE_FFI_MAX_BUFFERS) return -1;
    XLA_FFI_Buffer bufs[TREADLE_FFI_MAX_BUFFERS];
    void* argp[TREADLE_FFI_MAX_BUFFERS];
    void* retp[TREADLE_FFI_MAX_BUFFERS];
    for (int64_t i = 0; i < nargs + nrets; ++i) {
        memset(&bufs[i], 0, sizeof(bufs[i]));
        bufs[i].struct_size = XLA_FFI_Buffer_STRUCT_SIZE;
        bufs[i].data = data[i];
        bufs[i].rank = ranks[i];
        bufs[i].dims = dims + 8 * i;
        if (i < nargs) argp[i] = &bufs[i];
        else retp[i - nargs] = &bufs[i];
    }
    XLA_FFI_ByteSpan n_plan = {"plan", 4}, n_token = {"token", 5};
    XLA_FFI_ByteSpan* names[2] = {&n_plan, &n_token};
    XLA_FFI_AttrType types[2] = {XLA_FFI_AttrType_SCALAR, XLA_FFI_AttrType_SCALAR};
    XLA_FFI_Scalar s_plan = {XLA_FFI_DataType_S64, &plan}, s_token = {XLA_FFI_DataType_S64, &token};
    void* attrs[2] = {&s_plan, &s_token};
    XLA_FFI_CallFrame frame;
    memset(&frame, 0, sizeof(frame));
    frame.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
    frame.api = &api;
    frame.stage = XLA_FFI_ExecutionStage_EXECUTE;
    frame.args.size = nargs;
    frame.args.args = argp;
    frame.rets.size = nrets;
    frame.rets.rets = retp;
    frame.attrs.size = 2;
    frame.attrs.types = types;
    frame.attrs.names = names;
    frame.attrs.attrs = attrs;
    XLA_FFI_Error* e = cuda ? treadle_ffi_cuda_handler(&frame) : treadle_ffi_handler(&frame);
    if (e == NULL) return 0;
    int32_t code = (int32_t)e->code;
    if (errlen > 0) snprintf(err, (size_t)errlen, "%s", e->message);
    free(e);
    return code ? code : -1;
}

#ifdef __cplusplus
}
#endif
