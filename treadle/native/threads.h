// Treadle's CPU runtime: a persistent pool of worker threads and the launch trampoline.
//
// This header is NOT included by kernel code. Python compiles it once per toolchain into a small shared library
// (treadle/_src/runtime/threadpool.py defines TREADLE_RT_IMPLEMENTATION and includes it), loads it with RTLD_GLOBAL
// before any kernel library, and calls it through ctypes:
//
//   treadle_rt_run(cmds, count)       run launch commands in order (one ctypes call for a whole captured graph)
//   treadle_rt_parallel_for(...)      one parallel launch; kernel libraries reach it through a weak symbol so that
//                                     their `<sym>_cpu_forward(bounds, args, nthreads)` entries run in parallel too
//   treadle_rt_configure(...)         worker count, serial threshold, how long idle workers spin before sleeping
//
// A command names a kernel's range entry `fn(bounds, args, begin, end)`, which runs threads [begin, end) of a launch.
// The calling thread takes part in the work. Work is split into chunks claimed from one atomic ticket that carries the
// job's epoch, so a worker that wakes late can never take a chunk of a later job, and the caller never waits for a
// worker that has not started: it waits only for workers that claimed a chunk. Idle workers spin for `spin_ns`
// (a launch right after another one starts in about a microsecond) and then sleep on a condition variable (no CPU
// burnt while Python does other things; waking them costs tens of microseconds, not milliseconds).
//
// One job runs at a time. A launch that finds the pool busy (another Python thread is launching) runs on its own
// calling thread instead of waiting: concurrent launches are safe and never deadlock.
#pragma once

#include <stdint.h>

typedef void (*treadle_range_fn)(const void* bounds, const void* args, int64_t begin, int64_t end);

// One launch: the layout is mirrored by ctypes in treadle/_src/runtime/threadpool.py.
struct treadle_cmd_t {
    treadle_range_fn fn;
    const void* bounds;  // treadle::launch_bounds_t (its `size` field, at byte 40, is the thread count)
    const void* args;
    int32_t nthreads;    // upper bound on threads for this launch (1: serial on the calling thread)
    int32_t flags;       // TREADLE_CMD_* bits
};

#define TREADLE_CMD_HEAVY 1  // the kernel's threads may each do much work (loops, tiles): probed below the threshold

#if defined(TREADLE_RT_IMPLEMENTATION)

// Plain pthreads and compiler atomics (no C++ library headers): this file compiles in a few tens of milliseconds,
// which matters because a cold first launch has to build it.
#include <pthread.h>
#include <sched.h>
#include <time.h>
#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace treadle_rt {

static inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

static inline int64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t launch_size(const void* bounds) {
    return *reinterpret_cast<const int64_t*>(static_cast<const char*>(bounds) + 40);
}

template <typename T> static inline T load_acq(const T* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
template <typename T> static inline T load_seq(const T* p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }

// The ticket: epoch in the top 24 bits, chunks still unclaimed in the low 40.
static const int kEpochShift = 40;
static const uint64_t kCountMask = (uint64_t(1) << kEpochShift) - 1;
static const int kMaxWorkers = 255;

struct Pool {
    // Settings (written under `submit`; spin_ns is read by idle workers).
    int64_t serial_threshold = 4096;  // launches with fewer threads run on the caller
    int64_t spin_ns = 200000;         // idle workers spin this long before sleeping
    int64_t min_chunk = 256;          // smallest chunk of threads handed out at once
    int64_t wake_after_ns = 20000;    // sleeping workers are woken once a launch has run this long on the caller
    int64_t wake_now_size = 262144;   // ... or at once for launches of at least this many threads
    int64_t probe_ns = 50000;         // a launch below the threshold goes parallel once its rest looks this long

    pthread_t threads[kMaxWorkers];
    int nthreads = 0;                                    // workers 1..nthreads (the caller is worker 0)
    pthread_mutex_t submit = PTHREAD_MUTEX_INITIALIZER;  // one job at a time
    pthread_mutex_t sleep_mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t wake = PTHREAD_COND_INITIALIZER;

    // The current job: written before `state` is published and read only by threads that claimed a chunk of it
    // (the caller does not return, and so does not overwrite them, while any claimant is busy).
    treadle_range_fn fn = nullptr;
    const void* bounds = nullptr;
    const void* args = nullptr;
    int64_t first = 0;  // the job runs threads [first, n)
    int64_t n = 0;
    int64_t chunk = 0;
    uint32_t epoch = 0;

    alignas(64) uint64_t state = 0;  // epoch << 8 | participants
    alignas(64) uint64_t ticket = 0;
    alignas(64) int32_t busy = 0;
    alignas(64) int32_t sleepers = 0;
    uint32_t wake_seq = 0;  // bumped to wake sleepers (a futex word on Linux)
    int32_t stop = 0;

    // Claim one chunk of job `ep`; false when none is left (or a later job has started).
    bool claim(uint32_t ep, int64_t& begin, int64_t& end) {
        uint64_t t = load_acq(&ticket);
        for (;;) {
            if ((uint32_t)(t >> kEpochShift) != ep || (t & kCountMask) == 0)
                return false;
            if (__atomic_compare_exchange_n(&ticket, &t, t - 1, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                break;
        }
        const int64_t index = (int64_t)(t & kCountMask) - 1;  // chunks are handed out from the last one down
        begin = first + index * chunk;
        end = begin + chunk < n ? begin + chunk : n;
        return true;
    }

    void work(uint32_t ep) {
        int64_t b, e;
        __atomic_fetch_add(&busy, 1, __ATOMIC_SEQ_CST);
        while (claim(ep, b, e))
            fn(bounds, args, b, e);
        __atomic_fetch_sub(&busy, 1, __ATOMIC_RELEASE);
    }

    void worker(int index, uint64_t seen) {
        bool slept = false;
        for (;;) {
            if (load_seq(&stop))
                return;
            uint64_t s = load_acq(&state);
            if (s == seen) {
                // Spin a while for the next launch (not again right after a wake-up that brought nothing).
                const int64_t until = now_ns() + (slept ? 0 : __atomic_load_n(&spin_ns, __ATOMIC_RELAXED));
                for (int i = 1; (s = load_acq(&state)) == seen; ++i) {
                    cpu_relax();
                    if ((i & 63) == 0 && (now_ns() > until || __atomic_load_n(&stop, __ATOMIC_RELAXED)))
                        break;
                }
                if (s == seen) {
                    sleep_until_changed(seen);
                    slept = true;
                    continue;  // look again (wake-ups can be spurious)
                }
            }
            slept = false;
            seen = s;
            if (index < (int)(s & 0xff))
                work((uint32_t)(s >> 8));
        }
    }

    struct Start {
        Pool* pool;
        int index;
        uint64_t seen;  // the state when the worker was created: a job published after that is its first
    };
    static void* thread_main(void* p) {
        Start st = *static_cast<Start*>(p);
        delete static_cast<Start*>(p);
        st.pool->worker(st.index, st.seen);
        return nullptr;
    }

    void grow(int workers) {
        if (workers > kMaxWorkers)
            workers = kMaxWorkers;
        while (nthreads < workers) {
            Start* st = new Start{this, nthreads + 1, load_acq(&state)};
            if (pthread_create(&threads[nthreads], nullptr, thread_main, st) != 0) {
                delete st;
                return;
            }
            ++nthreads;
        }
    }

    // Sleeps until `state` moves on from `seen` (or a wake-up): no lost wake-ups, because a waker bumps `wake_seq`
    // after publishing the new state, and a sleeper reads `wake_seq` before checking the state.
    void sleep_until_changed(uint64_t seen) {
        const uint32_t seq = load_seq(&wake_seq);
        __atomic_fetch_add(&sleepers, 1, __ATOMIC_SEQ_CST);
        if (load_seq(&state) == seen && !load_seq(&stop)) {
#if defined(__linux__)
            syscall(SYS_futex, &wake_seq, FUTEX_WAIT_PRIVATE, seq, nullptr, nullptr, 0);
#else
            pthread_mutex_lock(&sleep_mutex);
            while (load_seq(&wake_seq) == seq)
                pthread_cond_wait(&wake, &sleep_mutex);
            pthread_mutex_unlock(&sleep_mutex);
#endif
        }
        __atomic_fetch_sub(&sleepers, 1, __ATOMIC_SEQ_CST);
    }

    // Wakes every sleeping worker; the caller never blocks here (one system call on Linux).
    void wake_all() {
        __atomic_fetch_add(&wake_seq, 1, __ATOMIC_SEQ_CST);
#if defined(__linux__)
        syscall(SYS_futex, &wake_seq, FUTEX_WAKE_PRIVATE, 0x7fffffff, nullptr, nullptr, 0);
#else
        pthread_mutex_lock(&sleep_mutex);
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&sleep_mutex);
#endif
    }

    // Runs threads [begin, end) of one launch with up to `nt` threads, in chunks of at least `min_ch` threads (all
    // workers woken at once with `wake_now`). Call with `submit` held.
    void run_locked(treadle_range_fn f, const void* bnd, const void* a, int64_t begin, int64_t end, int nt,
                    int64_t min_ch, bool wake_now) {
        grow(nt - 1);
        if (nt > nthreads + 1)
            nt = nthreads + 1;
        const int64_t size = end - begin;
        int64_t chunks = (size + min_ch - 1) / min_ch;
        if (chunks > (int64_t)nt * 16)  // enough chunks to even out threads that start late or run slower
            chunks = (int64_t)nt * 16;
        if (nt > chunks)
            nt = (int)chunks;
        if (nt <= 1) {
            f(bnd, a, begin, end);
            return;
        }
        fn = f;
        bounds = bnd;
        args = a;
        first = begin;
        n = end;
        chunk = (size + chunks - 1) / chunks;
        chunks = (size + chunk - 1) / chunk;
        epoch = (epoch + 1) & 0xffffff;
        __atomic_store_n(&ticket, ((uint64_t)epoch << kEpochShift) | (uint64_t)chunks, __ATOMIC_RELEASE);
        __atomic_store_n(&state, ((uint64_t)epoch << 8) | (uint64_t)nt, __ATOMIC_SEQ_CST);
        // Spinning workers see the job at once. Sleeping ones are woken only if it is worth a system call and their
        // wake-up latency: for a big launch at once, otherwise once the caller has worked on it for a while (a
        // short launch after an idle period then costs nothing extra).
        bool need_wake = load_seq(&sleepers) > 0;
        if (need_wake && (wake_now || size >= wake_now_size)) {
            wake_all();
            need_wake = false;
        }
        const int64_t t0 = need_wake ? now_ns() : 0;
        int64_t b, e;
        __atomic_fetch_add(&busy, 1, __ATOMIC_SEQ_CST);
        while (claim(epoch, b, e)) {
            fn(bounds, args, b, e);
            if (need_wake && now_ns() - t0 > wake_after_ns) {
                wake_all();
                need_wake = false;
            }
        }
        __atomic_fetch_sub(&busy, 1, __ATOMIC_RELEASE);
        // Every chunk is claimed; wait for the threads still running theirs (yielding the core if that takes long:
        // on a loaded machine the worker may be waiting for it).
        for (int i = 0; load_acq(&busy) != 0; ++i) {
            if (i < 4096)
                cpu_relax();
            else
                sched_yield();
        }
    }

    // One launch; `flags` is its command's (TREADLE_CMD_HEAVY: its threads may each do much work).
    void run(treadle_range_fn f, const void* bnd, const void* a, int nt, int32_t flags = 0) {
        run_sized(f, bnd, a, launch_size(bnd), nt, serial_threshold, (flags & TREADLE_CMD_HEAVY) != 0);
    }

    // Runs a growing prefix of threads [0, size) on the caller and returns where it stopped: at `size`, or earlier
    // once the rest looks at least `probe_ns` long. The first thread only warms up (its time includes cold code and
    // data) unless it alone took that long; then steps of 1, 4, 16... threads are timed, and a step of at least 2 us
    // gives the rate the rest is judged by.
    int64_t probe(treadle_range_fn f, const void* bnd, const void* a, int64_t size) {
        if (size <= 1) {
            f(bnd, a, 0, size);
            return size;
        }
        const int64_t t0 = now_ns();
        f(bnd, a, 0, 1);
        int64_t t = now_ns();
        if (t - t0 >= probe_ns)
            return 1;
        int64_t done = 1;
        for (int64_t step = 1; done < size; step *= 4) {
            const int64_t e = size - done < step ? size : done + step;
            f(bnd, a, done, e);
            const int64_t n_step = e - done;
            done = e;
            if (done >= size)
                break;
            const int64_t now = now_ns(), el = now - t;
            t = now;
            if (el >= 2000 && (double)el * (double)(size - done) >= (double)probe_ns * (double)n_step)
                break;
        }
        return done;
    }

    // `size` threads of `f` on up to `nt` threads; serially when another thread is launching, and below `threshold`
    // unless `heavy` (the kernel's threads may each do much: a tiled kernel's blocks, loops) and `probe` finds the
    // rest long: then the rest is handed out thread by thread.
    void run_sized(treadle_range_fn f, const void* bnd, const void* a, int64_t size, int nt, int64_t threshold,
                   bool heavy = false) {
        if (size <= 0)
            return;
        if (nt <= 1) {
            f(bnd, a, 0, size);
            return;
        }
        int64_t begin = 0;
        if (size < threshold) {
            if (!heavy) {
                f(bnd, a, 0, size);
                return;
            }
            begin = probe(f, bnd, a, size);
            if (begin >= size)
                return;
        }
        if (pthread_mutex_trylock(&submit) != 0) {
            f(bnd, a, begin, size);
            return;
        }
        run_locked(f, bnd, a, begin, size, nt, begin > 0 ? 1 : min_chunk, begin > 0);
        pthread_mutex_unlock(&submit);
    }

    void shutdown() {
        __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
        wake_all();
        for (int i = 0; i < nthreads; ++i)
            pthread_join(threads[i], nullptr);
        nthreads = 0;
        __atomic_store_n(&stop, 0, __ATOMIC_SEQ_CST);
    }
};

static Pool* g_pool = nullptr;
static pthread_mutex_t g_pool_mutex = PTHREAD_MUTEX_INITIALIZER;

// After fork() the child has none of the parent's worker threads: forget the pool (leaked on purpose: its mutexes
// may be held by threads that no longer exist) and start a new one on first use.
static void after_fork_child() {
    g_pool = nullptr;
    pthread_mutex_init(&g_pool_mutex, nullptr);
}

static Pool& pool() {
    Pool* p = __atomic_load_n(&g_pool, __ATOMIC_ACQUIRE);
    if (!p) {
        pthread_mutex_lock(&g_pool_mutex);
        p = g_pool;
        if (!p) {
            static bool atfork = false;
            if (!atfork) {
                pthread_atfork(nullptr, nullptr, after_fork_child);
                atfork = true;
            }
            p = new Pool();
            __atomic_store_n(&g_pool, p, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&g_pool_mutex);
    }
    return *p;
}

}  // namespace treadle_rt

#define TREADLE_RT_EXPORT extern "C" __attribute__((visibility("default")))

TREADLE_RT_EXPORT void treadle_rt_parallel_for(treadle_range_fn fn, const void* bounds, const void* args,
                                               int32_t nthreads) {
    treadle_rt::pool().run(fn, bounds, args, nthreads);
}

TREADLE_RT_EXPORT void treadle_rt_run(const treadle_cmd_t* cmds, int64_t count) {
    treadle_rt::Pool& p = treadle_rt::pool();
    for (int64_t i = 0; i < count; ++i)
        p.run(cmds[i].fn, cmds[i].bounds, cmds[i].args, cmds[i].nthreads, cmds[i].flags);
}

TREADLE_RT_EXPORT void treadle_rt_run1(const treadle_cmd_t* cmd) {
    treadle_rt::pool().run(cmd->fn, cmd->bounds, cmd->args, cmd->nthreads, cmd->flags);
}

// Settings; a negative value keeps the current one. `workers` > 0 starts that many worker threads now.
TREADLE_RT_EXPORT void treadle_rt_configure(int32_t workers, int64_t serial_threshold, int64_t spin_ns,
                                            int64_t min_chunk) {
    treadle_rt::Pool& p = treadle_rt::pool();
    pthread_mutex_lock(&p.submit);
    if (serial_threshold >= 0)
        p.serial_threshold = serial_threshold;
    if (spin_ns >= 0)
        __atomic_store_n(&p.spin_ns, spin_ns, __ATOMIC_RELAXED);
    if (min_chunk > 0)
        p.min_chunk = min_chunk;
    if (workers > 0)
        p.grow(workers);
    pthread_mutex_unlock(&p.submit);
}

// Stops the worker threads (they start again on the next parallel launch).
TREADLE_RT_EXPORT void treadle_rt_shutdown() {
    treadle_rt::Pool& p = treadle_rt::pool();
    pthread_mutex_lock(&p.submit);
    p.shutdown();
    pthread_mutex_unlock(&p.submit);
}

TREADLE_RT_EXPORT int32_t treadle_rt_workers() { return (int32_t)treadle_rt::pool().nthreads; }

namespace treadle_rt {
struct MemsetJob {
    char* dst;
    int64_t bytes;
    int value;
};
static const int64_t kMemsetUnit = 4096;  // bytes per "thread" of a memset job
static void memset_range(const void*, const void* a, int64_t begin, int64_t end) {
    const MemsetJob* j = static_cast<const MemsetJob*>(a);
    const int64_t lo = begin * kMemsetUnit;
    const int64_t hi = end * kMemsetUnit < j->bytes ? end * kMemsetUnit : j->bytes;
    if (hi > lo)
        __builtin_memset(j->dst + lo, j->value, (size_t)(hi - lo));
}
}  // namespace treadle_rt

// Sets `bytes` bytes at `dst` to `value` on up to `nthreads` threads of the pool (zero_() of large arrays: each
// thread clears part of the buffer, and the lines it clears stay in its own cache).
TREADLE_RT_EXPORT void treadle_rt_memset(void* dst, int32_t value, int64_t bytes, int32_t nthreads) {
    treadle_rt::Pool& p = treadle_rt::pool();
    treadle_rt::MemsetJob job{static_cast<char*>(dst), bytes, (int)value};
    const int64_t units = (bytes + treadle_rt::kMemsetUnit - 1) / treadle_rt::kMemsetUnit;
    p.run_sized(treadle_rt::memset_range, nullptr, &job, units, nthreads, 2 * p.min_chunk);
}

// Copies `bytes` (a multiple of 64) from `src` to `dst` (both 64-byte aligned) with non-temporal stores, which write
// whole cache lines without reading them first (launch_loop_streamed in launch.h); the caller ends its range with
// treadle_rt_stream_fence(). Compiler builtins rather than <emmintrin.h>: this file must stay quick to compile.
TREADLE_RT_EXPORT void treadle_rt_stream_copy(void* dst, const void* src, int64_t bytes) {
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
    typedef long long v2di __attribute__((vector_size(16)));
    const v2di* s = (const v2di*)src;
    v2di* d = (v2di*)dst;
    for (int64_t k = 0; k < bytes / 16; ++k) {
#if defined(__clang__)
        __builtin_nontemporal_store(s[k], d + k);
#else
        __builtin_ia32_movntdq(d + k, s[k]);
#endif
    }
#else
    __builtin_memcpy(dst, src, (size_t)bytes);
#endif
}

TREADLE_RT_EXPORT void treadle_rt_stream_fence() {
#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
    __builtin_ia32_sfence();
#endif
}

#endif  // TREADLE_RT_IMPLEMENTATION
