// loom benchmarks: Eigen SpMM peer (see eigen_spmm.h).
#include "eigen_spmm.h"

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

namespace {

typedef Eigen::SparseMatrix<float, Eigen::RowMajor, int> SpMat;
typedef Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> DenseRM;

double now_seconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

extern "C" double loom_bench_eigen_spmm(int64_t n, int64_t k, const int32_t *pos, const int32_t *crd,
                                        const float *vals, int64_t F, const float *B, float *C,
                                        double min_seconds)
{
    if (n <= 0 || k <= 0 || F <= 0 || !pos || !B || !C)
        return -1.0;
    const int64_t nnz = pos[n];
    if (nnz < 0 || (nnz > 0 && (!crd || !vals)))
        return -1.0;
    try {
        // Setup (untimed): copy the CSR arrays into an owned, compressed
        // Eigen matrix -- the same layout, so no conversion cost is hidden.
        Eigen::Map<const SpMat> amap(n, k, nnz, pos, crd, vals);
        SpMat A(amap);
        A.makeCompressed();
        DenseRM Bm = Eigen::Map<const DenseRM>(B, k, F);
        DenseRM Cm(n, F);

        Cm.noalias() = A * Bm;  // warm-up
        std::vector<double> times;
        double total = 0;
        while (times.size() < 3 || (total < min_seconds && times.size() < 100000)) {
            double t0 = now_seconds();
            Cm.noalias() = A * Bm;
            double t = now_seconds() - t0;
            times.push_back(t);
            total += t;
        }
        std::memcpy(C, Cm.data(), sizeof(float) * (size_t)n * (size_t)F);
        std::sort(times.begin(), times.end());
        size_t m = times.size();
        return m % 2 ? times[m / 2] : 0.5 * (times[m / 2 - 1] + times[m / 2]);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "eigen_spmm: %s\n", e.what());
        return -1.0;
    }
}

extern "C" int loom_bench_eigen_threads(void)
{
    return Eigen::nbThreads();
}

extern "C" const char *loom_bench_eigen_version(void)
{
#define LOOM_STR2(x) #x
#define LOOM_STR(x) LOOM_STR2(x)
    return LOOM_STR(EIGEN_WORLD_VERSION) "." LOOM_STR(EIGEN_MAJOR_VERSION) "." LOOM_STR(EIGEN_MINOR_VERSION);
}
