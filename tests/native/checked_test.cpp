// Compiled with -DTREADLE_CHECKED by test_headers.py: out-of-bounds indices are reported, never dereferenced.
#include "treadle.h"

#include <cstdio>

static int g_reports = 0, g_last_dim = -99;
static long long g_last_index = 0, g_last_extent = 0;

extern "C" void treadle_report_oob(int dim, long long index, long long extent) {
    ++g_reports;
    g_last_dim = dim;
    g_last_index = index;
    g_last_extent = extent;
}

static int g_failures = 0;
#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) {                                                      \
            ++g_failures;                                                   \
            std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
        }                                                                   \
    } while (0)
#define EXPECT_REPORT(dim, index, extent) \
    CHECK(g_reports == 1 && g_last_dim == (dim) && g_last_index == (index) && g_last_extent == (extent))

int main() {
    using namespace treadle;
    float buf[6] = {0, 1, 2, 3, 4, 5}, gbuf[6] = {};
    array_t<float> a = {};
    a.data = buf;
    a.grad = gbuf;
    a.ndim = 2;
    a.shape[0] = 2;
    a.shape[1] = 3;
    a.strides[0] = 12;
    a.strides[1] = 4;

    CHECK(load(a, 1, 2) == 5.0f && g_reports == 0);  // in bounds: silent

    CHECK(address(a, 2, 0) == buf);  // past the end of dim 0: reported, element 0 used
    EXPECT_REPORT(0, 2, 2);
    g_reports = 0;
    CHECK(load(a, 0, -1) == 2.0f && g_reports == 0);  // a negative index counts from the end: silent
    CHECK(load(a, 0, -4) == 0.0f);  // below minus the extent: reported, element 0 used
    EXPECT_REPORT(1, -4, 3);
    g_reports = 0;
    store(a, 0, 7, 42.0f);
    EXPECT_REPORT(1, 7, 3);
    CHECK(buf[0] == 42.0f);
    g_reports = 0;
    CHECK(grad_address(a, 5, 0) == gbuf);
    EXPECT_REPORT(0, 5, 2);
    g_reports = 0;

    array_t<int> b = {};
    int ib[4] = {1, 2, 3, 4};
    b.data = ib;
    b.ndim = 1;
    b.shape[0] = 4;
    b.strides[0] = 4;
    CHECK(load(b, 3) == 4 && g_reports == 0);
    CHECK(load(b, 4) == 1);
    EXPECT_REPORT(0, 4, 4);
    g_reports = 0;

    // vector and matrix components report dim -1
    const vec_t<3, float> v(1.0f, 2.0f, 3.0f);
    CHECK(extract(v, 3) == 1.0f);
    EXPECT_REPORT(-1, 3, 3);
    g_reports = 0;
    const mat_t<2, 2, float> m(1.0f, 2.0f, 3.0f, 4.0f);
    CHECK(extract(m, 1, 5) == 3.0f);
    EXPECT_REPORT(-1, 5, 2);
    g_reports = 0;
    CHECK(extract(m, 1, 1) == 4.0f && g_reports == 0);

    // integer division and modulo by zero report dim -2 and give 0 instead of trapping
    volatile int zero = 0;
    CHECK(div(7, (int)zero) == 0);
    EXPECT_REPORT(-2, 7, 0);
    g_reports = 0;
    CHECK(mod(int64(-9), int64(zero)) == 0 && floordiv(uint8(5), uint8(zero)) == 0);
    CHECK(g_reports == 2);
    g_reports = 0;
    CHECK(div(7, 2) == 3 && mod(7, 2) == 1 && div(1.0f, 0.0f) > 1e30f && g_reports == 0);
    // a 64-bit component index that would truncate to a valid 32-bit one is still caught by the adjoints
    vec_t<3, float> adj_v;
    int64 big = (int64(1) << 32) + 1, adj_big = 0;
    adj_extract(v, big, adj_v, adj_big, 1.0f);
    EXPECT_REPORT(-1, big, 3);
    g_reports = 0;

    std::printf("checked: %d failures\n", g_failures);
    return g_failures ? 1 : 0;
}
