// The native launch fast path: a small CPython extension module (not kernel code, not part of CUDA builds).
//
// treadle/_src/runtime/fastlaunch.py compiles this file once per Python ABI, toolchain and source version into the
// shared cache and loads it as the module `_treadle_fastlaunch`. It does in C what the Python fast path of
// `wp.launch` (treadle/_src/lang/launch.py, backends/cpu/launch.py) does for a kernel launched before from the same thread:
// the same checks in the same order, packing of the arguments that changed since the last launch into the plan's
// frame, and the call into the runtime library's `treadle_rt_run1`. Anything unusual (a recording tape, a graph
// capture, print_launches, checked mode, another thread, another device, a dim that is not an int or a tuple or
// list of ints, a changed configuration...) makes `launch` return False, and the caller takes the Python path, which
// raises the same errors as before. Argument values that C cannot pack itself go through the plan's Python packer,
// so every check and error message stays in one place.
//
// The process-wide state a launch depends on is a C struct the Python side keeps up to date (LaunchState below,
// mirrored by runtime/state.py: LaunchState): a configuration epoch (bumped by every write to wp.config), the
// counts of active graph captures and tapes, print_launches, num_threads, deterministic, and the default device and
// devices by name of the held device runtime. A plan remembers the
// epoch it was checked at; a launch with another epoch goes to the Python path, which checks the plan and stamps it.
//
//   init(run1_address, cpus, gil_threshold, state_address, array_type, desc_type)
//   run1(cmd_address)                  run one launch command (the ctypes-free replacement of treadle_rt_run1)
//   launch(kernel, dim, inputs, outputs, device, record_tape) -> bool     the wp.launch fast path
//   counts()                           (launches done natively, launches handed to the Python path)
//   Plan(...)                          the native state of one LaunchPlan (frame layout, memo of packed arguments)
//   Plan.run(args, device, bounds, nthreads)   the owner thread's packing + run for the Python path
//   Plan.stamp()                       the plan holds for the current configuration epoch
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <stdint.h>
#include <string.h>

#include "threads.h"

namespace {

typedef void (*run1_fn)(const treadle_cmd_t*);

// runtime/state.py: LaunchState (field for field).
struct LaunchState {
    int64_t epoch;           // bumped by every write to wp.config
    int32_t captures;        // active CPU graph captures (all threads)
    int32_t tapes;           // tapes recording (all threads)
    int32_t print_launches;  // wp.config.print_launches
    int32_t num_threads;     // wp.config.num_threads (0: every core)
    int32_t deterministic;   // wp.config.deterministic
    int32_t reserved;
    PyObject* default_device;  // the held device runtime's default device (NULL: no runtime yet); borrowed
    PyObject* devices;         // its devices by name (a dict); borrowed
};

// Layout of treadle::launch_bounds_t (mirrored by abi.LaunchBounds) and array_t (abi.ArrayDesc).
const Py_ssize_t BOUNDS_SIZE = 48;
const Py_ssize_t BOUNDS_NDIM = 32;
const Py_ssize_t BOUNDS_TOTAL = 40;
const Py_ssize_t DESC_SIZE = 88;
const Py_ssize_t DESC_NDIM = 80;
const int MAX_DIMS = 4;

run1_fn g_run1 = nullptr;
unsigned long long g_launched = 0, g_fell_back = 0;  // launch() outcomes (counts(), for tests)
long g_cpus = 1;
long long g_gil_threshold = 0;
const LaunchState* g_state = nullptr;  // filled by the Python side (runtime/state.py: LAUNCH)
PyObject* g_array_type = nullptr;   // treadle's array class
PyObject* g_desc_type = nullptr;    // abi.ArrayDesc

PyObject *s_launch_fast, *s_fast, *s_deterministic, *s_module, *s_options, *s_ctype, *s_dtype, *s_device;

// A run of the runtime: the GIL is released only for launches big enough that other Python threads should run
// meanwhile (releasing and taking it back costs more than a small launch).
inline void run_cmd(const treadle_cmd_t* cmd) {
    const long long size = *reinterpret_cast<const long long*>(static_cast<const char*>(cmd->bounds) + BOUNDS_TOTAL);
    if (size >= g_gil_threshold) {
        Py_BEGIN_ALLOW_THREADS g_run1(cmd);
        Py_END_ALLOW_THREADS
    } else {
        g_run1(cmd);
    }
}

// getattr that returns NULL without an exception set when the attribute is missing or raising.
inline PyObject* attr_opt(PyObject* o, PyObject* name) {
    PyObject* r = PyObject_GetAttr(o, name);
    if (!r)
        PyErr_Clear();
    return r;
}

enum Kind { GENERIC = 0, ARRAY = 1, F32 = 2, F64 = 3, I32 = 4, I64 = 5, U32 = 6, U64 = 7 };
enum Memo { UNSET = 0, SAME = 1, SAME_ARRAY = 2 };

struct Arg {
    int kind;
    int ndim;             // ARRAY: the declared dimension count
    Py_ssize_t offset;    // within the argument struct
    PyObject* name;       // field name (for setattr on the ctypes argument struct)
    PyObject* packer;     // the Python packer (value, device) -> ctypes value
    PyObject* dtype;      // ARRAY: the declared dtype, or None for any
    int memo;
    PyObject* last;       // SAME: the object packed last (kept alive so its identity stays meaningful)
    uintptr_t last_id;    // SAME_ARRAY: id() of the array packed last (not kept alive)
    PyObject* last_desc;  // SAME_ARRAY: its descriptor (kept alive: a new array cannot reuse it)
};

struct Plan {
    PyObject_HEAD
    char* frame;  // cmd, then bounds, then args
    char* bounds;
    char* args;
    PyObject* keep;    // the Python _Frame owning the memory
    PyObject* fargs;   // the ctypes argument struct inside the frame
    PyObject* kernel;
    PyObject* inst;
    int64_t epoch;     // the configuration epoch the plan was checked at
    PyObject* device;  // the device the memo belongs to (NULL before the first launch)
    int debug;
    int order_dependent;
    unsigned long owner;
    long long last_shape[MAX_DIMS];
    int last_ndim;  // -1: the bounds in the frame are unknown
    int cur_nt;
    Py_ssize_t nargs;
    Arg* a;
};

void forget(Plan* p) {
    for (Py_ssize_t i = 0; i < p->nargs; ++i) {
        Arg& a = p->a[i];
        Py_CLEAR(a.last);
        Py_CLEAR(a.last_desc);
        a.memo = UNSET;
        a.last_id = 0;
    }
}

void set_same(Arg& a, PyObject* v) {
    Py_INCREF(v);
    Py_XSETREF(a.last, v);
    Py_CLEAR(a.last_desc);
    a.memo = SAME;
}

void set_array(Arg& a, PyObject* v, PyObject* desc) {
    Py_INCREF(desc);
    Py_XSETREF(a.last_desc, desc);
    Py_CLEAR(a.last);
    a.last_id = reinterpret_cast<uintptr_t>(v);
    a.memo = SAME_ARRAY;
}

// Copies the bytes of a ctypes object of exactly `size` bytes to `dst`; false (no exception) when it is not one.
bool copy_ctypes(PyObject* obj, char* dst, Py_ssize_t size) {
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return false;
    }
    const bool ok = view.len == size;
    if (ok)
        memcpy(dst, view.buf, size);
    PyBuffer_Release(&view);
    return ok;
}

// A Treadle array packed natively: exactly `array`, its cached descriptor, dtype and device as the packer requires.
// 1: packed, 0: not handled here (no exception), -1: error.
int pack_array_native(Arg& a, PyObject* v, PyObject* device, char* dst) {
    if (Py_TYPE(v) != reinterpret_cast<PyTypeObject*>(g_array_type))
        return 0;
    PyObject* desc = attr_opt(v, s_ctype);
    if (!desc)
        return 0;
    int done = 0;
    if (Py_TYPE(desc) == reinterpret_cast<PyTypeObject*>(g_desc_type)) {
        PyObject* dt = a.dtype == Py_None ? nullptr : attr_opt(v, s_dtype);
        PyObject* dev = attr_opt(v, s_device);
        if ((a.dtype == Py_None || dt == a.dtype) && dev == device) {
            char tmp[DESC_SIZE];
            if (copy_ctypes(desc, tmp, DESC_SIZE) && *reinterpret_cast<int32_t*>(tmp + DESC_NDIM) == a.ndim) {
                memcpy(dst, tmp, DESC_SIZE);
                set_array(a, v, desc);
                done = 1;
            }
        }
        Py_XDECREF(dt);
        Py_XDECREF(dev);
    }
    Py_DECREF(desc);
    return done;
}

// Packs argument i (a value that differs from the last launch's) through the plan's Python packer.
int pack_generic(Plan* p, Arg& a, PyObject* v, PyObject* device) {
    PyObject* packed = PyObject_CallFunctionObjArgs(a.packer, v, device, nullptr);
    if (!packed)
        return -1;
    if (PyObject_SetAttr(p->fargs, a.name, packed) < 0) {
        Py_DECREF(packed);
        return -1;
    }
    PyTypeObject* tv = Py_TYPE(v);
    if (tv == &PyFloat_Type || tv == &PyLong_Type || tv == &PyBool_Type || v == Py_None) {
        set_same(a, v);
    } else {
        PyObject* desc = packed != Py_None ? attr_opt(v, s_ctype) : nullptr;
        if (desc && desc == packed) {
            set_array(a, v, desc);
        } else {  // mutable values (vectors, structs, NumPy arrays...) are packed every time
            Py_CLEAR(a.last);
            Py_CLEAR(a.last_desc);
            a.memo = UNSET;
        }
        Py_XDECREF(desc);
    }
    Py_DECREF(packed);
    return 0;
}

// Packs what changed since the last launch (the memo rules of LaunchPlan.run). 0 or -1 (exception set).
int pack_args(Plan* p, PyObject* const* items, PyObject* device) {
    for (Py_ssize_t i = 0; i < p->nargs; ++i) {
        Arg& a = p->a[i];
        PyObject* v = items[i];
        if (a.memo == SAME && a.last == v)
            continue;
        if (a.memo == SAME_ARRAY && a.last_id == reinterpret_cast<uintptr_t>(v)) {
            PyObject* d = attr_opt(v, s_ctype);
            const bool same = d == a.last_desc;
            Py_XDECREF(d);
            if (same)
                continue;
        }
        char* dst = p->args + a.offset;
        PyTypeObject* tv = Py_TYPE(v);
        switch (a.kind) {
        case F32:
            if (tv == &PyFloat_Type) {
                *reinterpret_cast<float*>(dst) = static_cast<float>(PyFloat_AS_DOUBLE(v));
                set_same(a, v);
                continue;
            }
            break;
        case F64:
            if (tv == &PyFloat_Type) {
                *reinterpret_cast<double*>(dst) = PyFloat_AS_DOUBLE(v);
                set_same(a, v);
                continue;
            }
            break;
        case I32:
        case U32:
        case I64:
        case U64:
            if (tv == &PyLong_Type) {
                // ctypes stores the low bits of any int into an integer field; so does this.
                const unsigned long long bits = PyLong_AsUnsignedLongLongMask(v);
                if (bits == static_cast<unsigned long long>(-1) && PyErr_Occurred())
                    return -1;
                if (a.kind == I32 || a.kind == U32)
                    *reinterpret_cast<uint32_t*>(dst) = static_cast<uint32_t>(bits);
                else
                    *reinterpret_cast<uint64_t*>(dst) = bits;
                set_same(a, v);
                continue;
            }
            break;
        case ARRAY: {
            const int r = pack_array_native(a, v, device, dst);
            if (r < 0)
                return -1;
            if (r > 0)
                continue;
            break;
        }
        default:
            break;
        }
        if (pack_generic(p, a, v, device) < 0)
            return -1;
    }
    return 0;
}

void set_bounds(Plan* p, const long long* shape, int ndim, long long size) {
    if (ndim == p->last_ndim) {
        bool same = true;
        for (int i = 0; i < ndim; ++i)
            same &= shape[i] == p->last_shape[i];
        if (same)
            return;
    }
    long long* s = reinterpret_cast<long long*>(p->bounds);
    for (int i = 0; i < MAX_DIMS; ++i)
        s[i] = i < ndim ? shape[i] : 1;
    *reinterpret_cast<int32_t*>(p->bounds + BOUNDS_NDIM) = ndim;
    *reinterpret_cast<int32_t*>(p->bounds + BOUNDS_NDIM + 4) = 0;
    *reinterpret_cast<long long*>(p->bounds + BOUNDS_TOTAL) = size;
    for (int i = 0; i < ndim; ++i)
        p->last_shape[i] = shape[i];
    p->last_ndim = ndim;
}

void use_device(Plan* p, PyObject* device) {
    if (device != p->device) {
        Py_INCREF(device);
        Py_XSETREF(p->device, device);
        forget(p);
    }
}

// ---- Plan type -------------------------------------------------------------------------------------------------

int Plan_traverse(Plan* p, visitproc visit, void* arg) {
    Py_VISIT(p->keep);
    Py_VISIT(p->fargs);
    Py_VISIT(p->kernel);
    Py_VISIT(p->inst);
    Py_VISIT(p->device);
    for (Py_ssize_t i = 0; i < p->nargs; ++i) {
        Py_VISIT(p->a[i].name);
        Py_VISIT(p->a[i].packer);
        Py_VISIT(p->a[i].dtype);
        Py_VISIT(p->a[i].last);
        Py_VISIT(p->a[i].last_desc);
    }
    return 0;
}

int Plan_clear(Plan* p) {
    Py_CLEAR(p->keep);
    Py_CLEAR(p->fargs);
    Py_CLEAR(p->kernel);
    Py_CLEAR(p->inst);
    Py_CLEAR(p->device);
    for (Py_ssize_t i = 0; i < p->nargs; ++i) {
        Py_CLEAR(p->a[i].name);
        Py_CLEAR(p->a[i].packer);
        Py_CLEAR(p->a[i].dtype);
        Py_CLEAR(p->a[i].last);
        Py_CLEAR(p->a[i].last_desc);
    }
    return 0;
}

void Plan_dealloc(Plan* p) {
    PyObject_GC_UnTrack(p);
    Plan_clear(p);
    PyMem_Free(p->a);
    Py_TYPE(p)->tp_free(reinterpret_cast<PyObject*>(p));
}

// Plan(keep, frame_addr, bounds_addr, args_addr, fargs, names, packers, kinds, offsets, ndims, dtypes,
//      kernel, inst, epoch, debug, order_dependent, owner)
PyObject* Plan_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
    PyObject *keep, *fargs, *names, *packers, *kinds, *offsets, *ndims, *dtypes, *kernel, *inst;
    long long epoch;
    unsigned long long frame, bounds, argp;
    int debug, order_dependent;
    unsigned long owner;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Plan() takes positional arguments only");
        return nullptr;
    }
    if (!PyArg_ParseTuple(args, "OKKKOO!O!O!O!O!O!OOLppk", &keep, &frame, &bounds, &argp, &fargs, &PyList_Type,
                          &names, &PyList_Type, &packers, &PyList_Type, &kinds, &PyList_Type, &offsets, &PyList_Type,
                          &ndims, &PyList_Type, &dtypes, &kernel, &inst, &epoch, &debug, &order_dependent, &owner))
        return nullptr;
    const Py_ssize_t n = PyList_GET_SIZE(names);
    if (PyList_GET_SIZE(packers) != n || PyList_GET_SIZE(kinds) != n || PyList_GET_SIZE(offsets) != n ||
        PyList_GET_SIZE(ndims) != n || PyList_GET_SIZE(dtypes) != n) {
        PyErr_SetString(PyExc_ValueError, "Plan(): argument lists of different lengths");
        return nullptr;
    }
    Plan* p = reinterpret_cast<Plan*>(type->tp_alloc(type, 0));
    if (!p)
        return nullptr;
    p->a = static_cast<Arg*>(PyMem_Calloc(n ? n : 1, sizeof(Arg)));
    if (!p->a) {
        Py_DECREF(p);
        return PyErr_NoMemory();
    }
    p->nargs = n;
    for (Py_ssize_t i = 0; i < n; ++i) {
        Arg& a = p->a[i];
        a.kind = static_cast<int>(PyLong_AsLong(PyList_GET_ITEM(kinds, i)));
        a.offset = PyLong_AsSsize_t(PyList_GET_ITEM(offsets, i));
        a.ndim = static_cast<int>(PyLong_AsLong(PyList_GET_ITEM(ndims, i)));
        if (PyErr_Occurred()) {
            Py_DECREF(p);
            return nullptr;
        }
        a.name = Py_NewRef(PyList_GET_ITEM(names, i));
        a.packer = Py_NewRef(PyList_GET_ITEM(packers, i));
        a.dtype = Py_NewRef(PyList_GET_ITEM(dtypes, i));
    }
    p->frame = reinterpret_cast<char*>(frame);
    p->bounds = reinterpret_cast<char*>(bounds);
    p->args = reinterpret_cast<char*>(argp);
    p->keep = Py_NewRef(keep);
    p->fargs = Py_NewRef(fargs);
    p->kernel = Py_NewRef(kernel);
    p->inst = Py_NewRef(inst);
    p->epoch = epoch;
    p->device = nullptr;
    p->debug = debug;
    p->order_dependent = order_dependent;
    p->owner = owner;
    p->last_ndim = -1;
    p->cur_nt = -1;
    return reinterpret_cast<PyObject*>(p);
}

void set_nthreads(Plan* p, int nt) {
    if (nt != p->cur_nt) {
        reinterpret_cast<treadle_cmd_t*>(p->frame)->nthreads = nt;
        p->cur_nt = nt;
    }
}

// Plan.run(args, device, bounds, nthreads): the owner thread's launch for the Python path (bounds: a LaunchBounds).
PyObject* Plan_run(Plan* p, PyObject* const* argv, Py_ssize_t argc) {
    if (argc != 4) {
        PyErr_SetString(PyExc_TypeError, "Plan.run(args, device, bounds, nthreads)");
        return nullptr;
    }
    PyObject* seq = PySequence_Tuple(argv[0]);  // a copy: packers run Python code that could change a list
    if (!seq)
        return nullptr;
    if (PyTuple_GET_SIZE(seq) < p->nargs) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "Plan.run: too few arguments");
        return nullptr;
    }
    const int nt = static_cast<int>(PyLong_AsLong(argv[3]));
    if (nt == -1 && PyErr_Occurred()) {
        Py_DECREF(seq);
        return nullptr;
    }
    char b[BOUNDS_SIZE];
    if (!copy_ctypes(argv[2], b, BOUNDS_SIZE)) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_TypeError, "Plan.run: bounds must be a LaunchBounds");
        return nullptr;
    }
    use_device(p, argv[1]);
    if (pack_args(p, &PyTuple_GET_ITEM(seq, 0), argv[1]) < 0) {
        Py_DECREF(seq);
        return nullptr;
    }
    Py_DECREF(seq);
    const int ndim = *reinterpret_cast<int32_t*>(b + BOUNDS_NDIM);
    if (ndim >= 1 && ndim <= MAX_DIMS) {
        set_bounds(p, reinterpret_cast<long long*>(b), ndim, *reinterpret_cast<long long*>(b + BOUNDS_TOTAL));
    } else {
        memcpy(p->bounds, b, BOUNDS_SIZE);
        p->last_ndim = -1;
    }
    set_nthreads(p, nt);
    run_cmd(reinterpret_cast<treadle_cmd_t*>(p->frame));
    Py_RETURN_NONE;
}

PyObject* Plan_stamp(Plan* p, PyObject*) {
    p->epoch = g_state ? g_state->epoch : 0;
    Py_RETURN_NONE;
}

PyObject* Plan_forget(Plan* p, PyObject*) {
    forget(p);
    p->last_ndim = -1;
    Py_RETURN_NONE;
}

PyMethodDef Plan_methods[] = {
    {"run", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(Plan_run)), METH_FASTCALL,
     "run(args, device, bounds, nthreads): pack what changed since the last launch and run"},
    {"forget", reinterpret_cast<PyCFunction>(Plan_forget), METH_NOARGS, "forget what was packed (repack next time)"},
    {"stamp", reinterpret_cast<PyCFunction>(Plan_stamp), METH_NOARGS,
     "the plan holds for the current configuration epoch"},
    {nullptr, nullptr, 0, nullptr},
};

PyTypeObject PlanType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---- module functions --------------------------------------------------------------------------------------------

PyObject* mod_init(PyObject*, PyObject* args) {
    unsigned long long run1, state;
    long cpus;
    long long threshold;
    PyObject *array_type, *desc_type;
    if (!PyArg_ParseTuple(args, "KlLKOO", &run1, &cpus, &threshold, &state, &array_type, &desc_type))
        return nullptr;
    if (!run1 || !state) {
        PyErr_SetString(PyExc_ValueError, "init(): null run1 or state");
        return nullptr;
    }
    g_run1 = reinterpret_cast<run1_fn>(run1);
    g_state = reinterpret_cast<const LaunchState*>(state);
    g_cpus = cpus;
    g_gil_threshold = threshold;
    Py_XSETREF(g_array_type, Py_NewRef(array_type));
    Py_XSETREF(g_desc_type, Py_NewRef(desc_type));
    Py_RETURN_NONE;
}

PyObject* mod_run1(PyObject*, PyObject* arg) {
    void* addr = PyLong_AsVoidPtr(arg);
    if (!addr) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "run1(): null command");
        return nullptr;
    }
    run_cmd(static_cast<const treadle_cmd_t*>(addr));
    Py_RETURN_NONE;
}

// The thread count of the next launch (LaunchPlan.nthreads): 1 for order-dependent kernels in deterministic mode
// (the module's option, else wp.config's), else config.num_threads, or every core when it is 0. -1 with an
// exception set.
int launch_nthreads(Plan* p) {
    if (p->order_dependent) {
        PyObject* module = PyObject_GetAttr(p->kernel, s_module);
        if (!module)
            return -1;
        PyObject* options = PyObject_GetAttr(module, s_options);
        Py_DECREF(module);
        if (!options)
            return -1;
        PyObject* opt = PyObject_CallMethod(options, "get", "O", s_deterministic);
        Py_DECREF(options);
        if (!opt)
            return -1;
        int det;
        if (opt == Py_None)
            det = g_state->deterministic != 0;
        else
            det = PyObject_IsTrue(opt);
        Py_DECREF(opt);
        if (det < 0)
            return -1;
        if (det)
            return 1;
    }
    const int n = g_state->num_threads;
    return n > 0 ? n : static_cast<int>(g_cpus);
}

// The launch grid of `dim` when it is an int or a tuple or list of 1..4 ints, all >= 0. 1: ok, 0: let Python decide.
int grid_of(PyObject* dim, long long* shape, int* ndim, long long* size) {
    if (PyLong_CheckExact(dim)) {
        int overflow = 0;
        const long long s = PyLong_AsLongLongAndOverflow(dim, &overflow);
        if (overflow || s < 0 || (s == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        shape[0] = s;
        *ndim = 1;
        *size = s;
        return 1;
    }
    const bool tuple = PyTuple_CheckExact(dim);
    if (!tuple && !PyList_CheckExact(dim))
        return 0;
    const Py_ssize_t n = tuple ? PyTuple_GET_SIZE(dim) : PyList_GET_SIZE(dim);
    if (n < 1 || n > MAX_DIMS)
        return 0;
    long long total = 1;
    for (Py_ssize_t i = 0; i < n; ++i) {  // reading an int runs no Python code: a list cannot change meanwhile
        PyObject* d = tuple ? PyTuple_GET_ITEM(dim, i) : PyList_GET_ITEM(dim, i);
        if (!PyLong_CheckExact(d))
            return 0;
        int overflow = 0;
        const long long s = PyLong_AsLongLongAndOverflow(d, &overflow);
        if (overflow || s < 0 || (s == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        if (s && total > (1LL << 62) / s)
            return 0;
        shape[i] = s;
        total *= s;
    }
    *ndim = static_cast<int>(n);
    *size = total;
    return 1;
}

#define CHECK(expr)          \
    do {                     \
        const int c_ = (expr); \
        if (c_ < 0)          \
            goto error;      \
        if (!c_)             \
            goto fallback;   \
    } while (0)

// launch(kernel, dim, inputs, outputs, device, record_tape) -> True when launched, False for the Python path.
PyObject* mod_launch(PyObject*, PyObject* const* argv, Py_ssize_t argc) {
    if (argc != 6) {
        PyErr_SetString(PyExc_TypeError, "launch(kernel, dim, inputs, outputs, device, record_tape)");
        return nullptr;
    }
    PyObject *kernel = argv[0], *dim = argv[1], *inputs = argv[2], *outputs = argv[3], *device = argv[4];
    PyObject *plan_py = nullptr, *fast = nullptr, *dev = nullptr;
    PyObject* items[64];
    long long shape[MAX_DIMS];
    int ndim = 0;
    long long size = 0;
    Py_ssize_t nin, nout;
    PyObject *const *in_items, *const *out_items;
    Plan* p;
    int nt;
    if (!g_run1 || !g_state)
        Py_RETURN_FALSE;
    plan_py = attr_opt(kernel, s_launch_fast);
    if (!plan_py || plan_py == Py_None)
        goto fallback;
    fast = attr_opt(plan_py, s_fast);
    if (!fast || Py_TYPE(fast) != &PlanType)
        goto fallback;
    p = reinterpret_cast<Plan*>(fast);
    // Another epoch: wp.config was written or kernels dropped their instances since the plan was checked (the
    // Python path checks it again and stamps it).
    if (p->debug || p->owner != PyThread_get_thread_ident() || p->nargs > 64 || p->epoch != g_state->epoch)
        goto fallback;
    if (PyList_CheckExact(inputs)) {
        nin = PyList_GET_SIZE(inputs);
        in_items = &PyList_GET_ITEM(inputs, 0);
    } else if (PyTuple_CheckExact(inputs)) {
        nin = PyTuple_GET_SIZE(inputs);
        in_items = &PyTuple_GET_ITEM(inputs, 0);
    } else {
        goto fallback;
    }
    if (PyList_CheckExact(outputs)) {
        nout = PyList_GET_SIZE(outputs);
        out_items = &PyList_GET_ITEM(outputs, 0);
    } else if (PyTuple_CheckExact(outputs)) {
        nout = PyTuple_GET_SIZE(outputs);
        out_items = &PyTuple_GET_ITEM(outputs, 0);
    } else {
        goto fallback;
    }
    if (nin + nout != p->nargs)
        goto fallback;
    if (device == Py_None) {  // get_device(): the runtime's default device
        dev = Py_XNewRef(g_state->default_device);
        if (!dev)
            goto fallback;
    } else if (PyUnicode_CheckExact(device)) {  // a name the runtime knows ("cpu"; anything else: Python decides)
        if (!g_state->devices || !PyDict_CheckExact(g_state->devices))
            goto fallback;
        dev = PyDict_GetItemWithError(g_state->devices, device);
        if (!dev) {
            if (PyErr_Occurred())
                goto error;
            goto fallback;
        }
        Py_INCREF(dev);
    } else {
        dev = Py_NewRef(device);
    }
    if (dev != p->device)
        goto fallback;
    {
        const int record = PyObject_IsTrue(argv[5]);
        if (record < 0)
            goto error;
        if (record && g_state->tapes > 0)  // a tape records on some thread: the Python path looks at this one's
            goto fallback;
    }
    if (!grid_of(dim, shape, &ndim, &size))
        goto fallback;
    if (g_state->print_launches || g_state->captures)
        goto fallback;
    if (size > 0) {
        // Copy the items first: packing runs Python code (packers) that could change the lists.
        for (Py_ssize_t i = 0; i < nin; ++i)
            items[i] = Py_NewRef(in_items[i]);
        for (Py_ssize_t i = 0; i < nout; ++i)
            items[nin + i] = Py_NewRef(out_items[i]);
        int rc = pack_args(p, items, dev);
        for (Py_ssize_t i = 0; i < p->nargs; ++i)
            Py_DECREF(items[i]);
        if (rc < 0)
            goto error;
        nt = launch_nthreads(p);
        if (nt < 0)
            goto error;
        set_bounds(p, shape, ndim, size);
        set_nthreads(p, nt);
        run_cmd(reinterpret_cast<treadle_cmd_t*>(p->frame));
    }
    Py_XDECREF(plan_py);
    Py_XDECREF(fast);
    Py_XDECREF(dev);
    ++g_launched;
    Py_RETURN_TRUE;
fallback:
    ++g_fell_back;
    Py_XDECREF(plan_py);
    Py_XDECREF(fast);
    Py_XDECREF(dev);
    Py_RETURN_FALSE;
error:
    Py_XDECREF(plan_py);
    Py_XDECREF(fast);
    Py_XDECREF(dev);
    return nullptr;
}

PyObject* mod_counts(PyObject*, PyObject*) {
    return Py_BuildValue("KK", g_launched, g_fell_back);
}

PyMethodDef module_methods[] = {
    {"counts", mod_counts, METH_NOARGS, "counts() -> (launched natively, handed to the Python path)"},
    {"init", mod_init, METH_VARARGS, "init(run1, cpus, gil_threshold, state_address, array_type, desc_type)"},
    {"run1", mod_run1, METH_O, "run1(cmd_address): run one launch command"},
    {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(mod_launch)), METH_FASTCALL,
     "launch(kernel, dim, inputs, outputs, device, record_tape) -> bool: the native fast path of wp.launch"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_treadle_fastlaunch", "Treadle's native launch fast path.", -1,
                          module_methods};

bool intern_all() {
    struct {
        PyObject** slot;
        const char* text;
    } names[] = {
        {&s_launch_fast, "_launch_fast"}, {&s_fast, "fast"},
        {&s_deterministic, "deterministic"},
        {&s_module, "module"},
        {&s_options, "options"},          {&s_ctype, "_ctype"},
        {&s_dtype, "dtype"},              {&s_device, "device"},
    };
    for (auto& n : names) {
        *n.slot = PyUnicode_InternFromString(n.text);
        if (!*n.slot)
            return false;
    }
    return true;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) PyObject* PyInit__treadle_fastlaunch(void) {
    if (!intern_all())
        return nullptr;
    PlanType.tp_name = "_treadle_fastlaunch.Plan";
    PlanType.tp_basicsize = sizeof(Plan);
    PlanType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
    PlanType.tp_doc = "The native state of one launch plan";
    PlanType.tp_new = Plan_new;
    PlanType.tp_dealloc = reinterpret_cast<destructor>(Plan_dealloc);
    PlanType.tp_traverse = reinterpret_cast<traverseproc>(Plan_traverse);
    PlanType.tp_clear = reinterpret_cast<inquiry>(Plan_clear);
    PlanType.tp_methods = Plan_methods;
    if (PyType_Ready(&PlanType) < 0)
        return nullptr;
    PyObject* m = PyModule_Create(&module_def);
    if (!m)
        return nullptr;
    if (PyModule_AddObjectRef(m, "Plan", reinterpret_cast<PyObject*>(&PlanType)) < 0) {
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
