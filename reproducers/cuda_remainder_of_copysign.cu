// CUDA C++ reproducer: remainder(copysign(a, a), c) comes out with the sign lost on an NVIDIA H200
// (CUDA 13.0, nvcc V13.0.88, driver 580.159), while remainder(a, c) is right.
// Found by the harness's GPU fuzz campaign (seed 1652; cases/fuzz-cuda-remainder-of-copysign.yaml).
// Build and run:  nvcc -arch=sm_90 -O3 -o rem rem.cu && ./rem
// Seen on 2026-12-02: "rem_of_copysign: 5 of 8 wrong" (every negative result printed positive),
// "rem_plain: 0 of 8 wrong".
// remainder(copysign(a, a), c) in CUDA C++: the same expression as numba-cuda's kernel.
#include <cstdio>
#include <cmath>
__global__ void rem_of_copysign(double *out, const double *a, const double *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = remainder(copysign(a[i], a[i]), c[i]);
}
__global__ void rem_plain(double *out, const double *a, const double *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = remainder(a[i], c[i]);
}
int main() {
    const int n = 8;
    double a[n] = {-1.3527, -0.4449, -0.506, -4.6903, 2.2387, 3.6639, -0.3024, 0.376};
    double c[n] = {0.952, 1.2084, 0.901, 1.3544, 0.9464, 0.9292, 1.8653, 0.9282};
    double *da, *dc, *dout, out[n];
    cudaMalloc(&da, sizeof a); cudaMalloc(&dc, sizeof c); cudaMalloc(&dout, sizeof out);
    cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice); cudaMemcpy(dc, c, sizeof c, cudaMemcpyHostToDevice);
    for (int k = 0; k < 2; k++) {
        if (k == 0) rem_of_copysign<<<1, 32>>>(dout, da, dc, n); else rem_plain<<<1, 32>>>(dout, da, dc, n);
        cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost);
        int wrong = 0;
        for (int i = 0; i < n; i++) {
            double want = std::remainder(std::copysign(a[i], a[i]), c[i]);
            if (std::fabs(out[i] - want) > 1e-12) wrong++;
            printf("  %s(%+.4f, %.4f): gpu %+.6f host %+.6f%s\n", k ? "remainder" : "remainder(copysign)", a[i], c[i],
                   out[i], want, std::fabs(out[i] - want) > 1e-12 ? "  WRONG" : "");
        }
        printf("%s: %d of %d wrong\n", k ? "rem_plain" : "rem_of_copysign", wrong, n);
    }
    return 0;
}
