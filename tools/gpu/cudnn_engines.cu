// What cuDNN offers for the `cnn`'s two convolutions at batch 64, and how each
// choice rounds: a measuring tool for lesson 06, not lesson code.
//
//   nvcc -O2 -arch=sm_90 -o cudnn_engines tools/gpu/cudnn_engines.cu -lcudnn && ./cudnn_engines
//
// For conv1 (1 -> 16 channels, 28x28) and conv2 (16 -> 32, 14x14), 3x3, padding 1:
// - the legacy API's cudnnFind tables of the three directions (algorithm, status,
//   time, determinism, math type, workspace), FMA math as stage 06 sets it;
// - the filter gradient of ALGO_1 and ALGO_0, each timed alone (CUDA events, median of 30);
// - every engine of cuDNN's graph (backend) API for each direction: its numerical
//   notes (TENSOR_CORE, FFT, WINOGRAD, NONDET, ...), its median time, its workspace,
//   its largest difference from the legacy direct algorithm (IMPLICIT_GEMM forward,
//   ALGO_1 backward) on the same random inputs, and whether two runs give the same bits.
// Inputs are uniform in [-0.5, 0.5). Engines a shape does not support print
// "not supported".
#include <cudnn.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <string>
#include <cmath>
#include <algorithm>
#include <functional>

#define CK(x) do { cudnnStatus_t s_ = (x); if (s_ != CUDNN_STATUS_SUCCESS) { printf("cudnn error %s at %s:%d: %s\n", cudnnGetErrorString(s_), __FILE__, __LINE__, #x); exit(1);} } while (0)
#define CC(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("cuda error %s at %d\n", cudaGetErrorString(e_), __LINE__); exit(1);} } while (0)

struct Shape { int N, C, H, W, K, OC, P; };
cudnnHandle_t h;

std::vector<float> rnd(size_t n, unsigned seed) { std::vector<float> v(n); srand(seed); for (auto& x : v) x = (rand() / (float)RAND_MAX) - 0.5f; return v; }
float* up(const std::vector<float>& v) { float* p; CC(cudaMalloc(&p, v.size() * 4)); CC(cudaMemcpy(p, v.data(), v.size() * 4, cudaMemcpyHostToDevice)); return p; }
std::vector<float> down(const float* p, size_t n) { std::vector<float> v(n); CC(cudaMemcpy(v.data(), p, n * 4, cudaMemcpyDeviceToHost)); return v; }

const char* det(cudnnDeterminism_t d) { return d == CUDNN_DETERMINISTIC ? "det" : "NONDET"; }
const char* mt(cudnnMathType_t m) { return m == CUDNN_FMA_MATH ? "FMA" : m == CUDNN_DEFAULT_MATH ? "DEFAULT" : m == CUDNN_TENSOR_OP_MATH ? "TENSOR" : "TENSOR_CONV"; }

cudnnBackendDescriptor_t tensor(int64_t uid, std::vector<int64_t> dims) {
  cudnnBackendDescriptor_t t; CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t));
  std::vector<int64_t> st(4); st[3] = 1; for (int i = 2; i >= 0; --i) st[i] = st[i + 1] * dims[i + 1];
  cudnnDataType_t dt = CUDNN_DATA_FLOAT; int64_t al = 16;
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data()));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, st.data()));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &al));
  CK(cudnnBackendFinalize(t));
  return t;
}

float time_it(std::function<void()> f, int reps = 30) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> ts;
  for (int r = 0; r < reps; ++r) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); ts.push_back(ms * 1000); }
  std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
}

// One line of a cudnnFind table: algorithm, status, time, determinism, math type, workspace.
template <typename Perf>
void print_find(const char* direction, const Perf* r, int n) {
  printf(" legacy %s:", direction);
  for (int i = 0; i < n; ++i)
    printf(" [%d %s %.1fus %s %s %zuB]", r[i].algo, cudnnGetErrorString(r[i].status), r[i].time * 1000,
           det(r[i].determinism), mt(r[i].mathType), r[i].memory);
  printf("\n");
}

// dir 0 fwd, 1 bwd data, 2 bwd filter
void backend(const Shape& s, int dir, float* x, float* w, float* y, const std::vector<float>& ref, size_t outn) {
  const char* names[] = {"forward", "bwd-data", "bwd-filter"};
  int OH = s.H, OW = s.W;  // pad 1, k3
  cudnnBackendDescriptor_t tx = tensor('x', {s.N, s.C, s.H, s.W}), tw = tensor('w', {s.OC, s.C, s.K, s.K}), ty = tensor('y', {s.N, s.OC, OH, OW});
  cudnnBackendDescriptor_t cd; CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &cd));
  cudnnDataType_t ct = CUDNN_DATA_FLOAT; cudnnConvolutionMode_t cm = CUDNN_CROSS_CORRELATION; int64_t sd = 2;
  int64_t dil[2] = {1, 1}, str[2] = {1, 1}, pad[2] = {s.P, s.P};
  CK(cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct));
  CK(cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &cm));
  CK(cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &sd));
  CK(cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
  CK(cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str));
  CK(cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
  CK(cudnnBackendSetAttribute(cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
  CK(cudnnBackendFinalize(cd));
  // The three operations take the same six attributes under their own names: their
  // tensors in the order x, w, y (dx, w, dy for backward data; x, dw, dy for backward filter).
  struct OpAttributes {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  const OpAttributes ops[3] = {
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
  };
  const OpAttributes& oa = ops[dir];
  cudnnBackendDescriptor_t op; float alpha = 1, beta = 0;
  CK(cudnnBackendCreateDescriptor(oa.type, &op));
  CK(cudnnBackendSetAttribute(op, oa.x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tx));
  CK(cudnnBackendSetAttribute(op, oa.w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tw));
  CK(cudnnBackendSetAttribute(op, oa.y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ty));
  CK(cudnnBackendSetAttribute(op, oa.conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd));
  CK(cudnnBackendSetAttribute(op, oa.alpha, CUDNN_TYPE_FLOAT, 1, &alpha));
  CK(cudnnBackendSetAttribute(op, oa.beta, CUDNN_TYPE_FLOAT, 1, &beta));
  CK(cudnnBackendFinalize(op));
  cudnnBackendDescriptor_t og; CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &og));
  CK(cudnnBackendSetAttribute(og, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
  CK(cudnnBackendSetAttribute(og, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  CK(cudnnBackendFinalize(og));
  int64_t count = 0, got = 0;
  CK(cudnnBackendGetAttribute(og, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &got, &count));
  // heuristics order
  {
    cudnnBackendDescriptor_t he; CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &he));
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    CK(cudnnBackendSetAttribute(he, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og));
    CK(cudnnBackendSetAttribute(he, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    CK(cudnnBackendFinalize(he));
    int64_t n = 0; CK(cudnnBackendGetAttribute(he, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, nullptr));
    std::vector<cudnnBackendDescriptor_t> cfgs(n);
    for (auto& c : cfgs) CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c));
    int64_t n2 = 0; CK(cudnnBackendGetAttribute(he, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &n2, cfgs.data()));
    printf("  heuristics A order:");
    for (int64_t i = 0; i < n2; ++i) {
      cudnnBackendDescriptor_t e; CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &e));
      int64_t k = 0; CK(cudnnBackendGetAttribute(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k, &e));
      int64_t gi = -1; CK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &k, &gi));
      printf(" %lld", (long long)gi);
    }
    printf("\n");
  }
  printf("  %s %dx%dx%dx%d -> %d: %lld engines\n", names[dir], s.N, s.C, s.H, s.W, s.OC, (long long)count);
  for (int64_t g = 0; g < count; ++g) {
    cudnnBackendDescriptor_t e; CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &e));
    CK(cudnnBackendSetAttribute(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &og));
    CK(cudnnBackendSetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &g));
    if (cudnnBackendFinalize(e) != CUDNN_STATUS_SUCCESS) { printf("    engine %lld: not supported\n", (long long)g); continue; }
    cudnnBackendNumericalNote_t notes[16]; int64_t nn = 0;
    CK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, 16, &nn, notes));
    std::string ns;
    const char* nm[] = {"TENSOR_CORE", "DOWN_CONVERT", "REDUCED_PREC_RED", "FFT", "NONDET", "WINOGRAD", "WINO4", "WINO6", "WINO13", "STRICT_NAN"};
    for (int i = 0; i < nn; ++i) ns += std::string(" ") + (notes[i] < 10 ? nm[notes[i]] : "?");
    cudnnBackendDescriptor_t cfg; CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg));
    CK(cudnnBackendSetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &e));
    if (cudnnBackendFinalize(cfg) != CUDNN_STATUS_SUCCESS) { printf("    engine %lld:%s cfg failed\n", (long long)g, ns.c_str()); continue; }
    cudnnBackendDescriptor_t plan; CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    CK(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    CK(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
    cudnnStatus_t ps = cudnnBackendFinalize(plan);
    if (ps != CUDNN_STATUS_SUCCESS) { printf("    engine %lld:%s plan: %s\n", (long long)g, ns.c_str(), cudnnGetErrorString(ps)); continue; }
    int64_t wsb = 0; CK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &got, &wsb));
    void* ws = nullptr; if (wsb) CC(cudaMalloc(&ws, wsb));
    cudnnBackendDescriptor_t vp; CK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
    int64_t uids[3] = {'x', 'w', 'y'}; void* ptrs[3] = {x, w, y};
    CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
    CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs));
    CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
    CK(cudnnBackendFinalize(vp));
    float* out = dir == 0 ? y : dir == 1 ? x : w;
    cudnnStatus_t es = cudnnBackendExecute(h, plan, vp); cudaError_t ce = cudaDeviceSynchronize();
    if (es != CUDNN_STATUS_SUCCESS || ce != cudaSuccess) { printf("    engine %lld:%s exec: %s %s\n", (long long)g, ns.c_str(), cudnnGetErrorString(es), cudaGetErrorString(ce)); cudaGetLastError(); continue; }
    std::vector<float> r1 = down(out, outn);
    float us = time_it([&] { cudnnBackendExecute(h, plan, vp); });
    CC(cudaDeviceSynchronize());
    std::vector<float> r2 = down(out, outn);
    double md = 0, mr = 0; for (size_t i = 0; i < outn; ++i) { md = std::max(md, (double)std::fabs(r1[i] - ref[i])); mr = std::max(mr, (double)std::fabs(ref[i])); }
    bool same = memcmp(r1.data(), r2.data(), outn * 4) == 0;
    printf("    engine %lld:%s  %.1f us  ws %lld  maxdiff %.2e (ref max %.2e)  %s\n", (long long)g, ns.c_str(), us, (long long)wsb, md, mr, same ? "bit-same twice" : "DIFFERS run to run");
    if (ws) cudaFree(ws);
  }
}

int main() {
  CK(cudnnCreate(&h));
  printf("cudnn %zu\n", cudnnGetVersion());
  Shape shapes[] = {{64, 1, 28, 28, 3, 16, 1}, {64, 16, 14, 14, 3, 32, 1}};
  for (const Shape& s : shapes) {
    printf("== conv %d->%d on %dx%d, batch %d\n", s.C, s.OC, s.H, s.W, s.N);
    size_t xn = (size_t)s.N * s.C * s.H * s.W, wn = (size_t)s.OC * s.C * s.K * s.K, yn = (size_t)s.N * s.OC * s.H * s.W;
    auto hx = rnd(xn, 1), hw = rnd(wn, 2), hy = rnd(yn, 3);
    float *x = up(hx), *w = up(hw), *y = up(hy);
    cudnnTensorDescriptor_t dx, dy; cudnnFilterDescriptor_t dw; cudnnConvolutionDescriptor_t cv;
    CK(cudnnCreateTensorDescriptor(&dx)); CK(cudnnCreateTensorDescriptor(&dy)); CK(cudnnCreateFilterDescriptor(&dw)); CK(cudnnCreateConvolutionDescriptor(&cv));
    CK(cudnnSetTensor4dDescriptor(dx, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.N, s.C, s.H, s.W));
    CK(cudnnSetTensor4dDescriptor(dy, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.N, s.OC, s.H, s.W));
    CK(cudnnSetFilter4dDescriptor(dw, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, s.OC, s.C, s.K, s.K));
    CK(cudnnSetConvolution2dDescriptor(cv, s.P, s.P, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CK(cudnnSetConvolutionMathType(cv, CUDNN_FMA_MATH));
    int n = 0;
    cudnnConvolutionFwdAlgoPerf_t f[16]; CK(cudnnFindConvolutionForwardAlgorithm(h, dx, dw, cv, dy, 8, &n, f));
    print_find("forward", f, n);
    cudnnConvolutionBwdDataAlgoPerf_t d[16]; CK(cudnnFindConvolutionBackwardDataAlgorithm(h, dw, dy, cv, dx, 6, &n, d));
    print_find("bwd-data", d, n);
    cudnnConvolutionBwdFilterAlgoPerf_t b[16]; CK(cudnnFindConvolutionBackwardFilterAlgorithm(h, dx, dy, cv, dw, 7, &n, b));
    print_find("bwd-filter", b, n);
    // references with legacy deterministic algos (IMPLICIT_GEMM fwd, ALGO_1 both backward)
    float one = 1, zero = 0;
    void* ws; CC(cudaMalloc(&ws, 64 << 20));
    CK(cudnnConvolutionForward(h, &one, dx, x, dw, w, cv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, ws, 64 << 20, &zero, dy, y));
    auto ref_y = down(y, yn);
    CC(cudaMemcpy(y, hy.data(), yn * 4, cudaMemcpyHostToDevice));
    CK(cudnnConvolutionBackwardData(h, &one, dw, w, dy, y, cv, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, ws, 64 << 20, &zero, dx, x));
    auto ref_dx = down(x, xn);
    CC(cudaMemcpy(x, hx.data(), xn * 4, cudaMemcpyHostToDevice));
    CK(cudnnConvolutionBackwardFilter(h, &one, dx, x, dy, y, cv, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, ws, 64 << 20, &zero, dw, w));
    auto ref_dw = down(w, wn);
    float us1 = time_it([&] { cudnnConvolutionBackwardFilter(h, &one, dx, x, dy, y, cv, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, ws, 64 << 20, &zero, dw, w); });
    float us0 = time_it([&] { cudnnConvolutionBackwardFilter(h, &one, dx, x, dy, y, cv, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, ws, 64 << 20, &zero, dw, w); });
    printf(" timed legacy wgrad: ALGO_1 %.1f us, ALGO_0 %.1f us\n", us1, us0);
    CC(cudaMemcpy(w, hw.data(), wn * 4, cudaMemcpyHostToDevice));
    // backend: forward writes y (x,w inputs), bwd-data writes x, bwd-filter writes w
    backend(s, 0, x, w, y, ref_y, yn);
    CC(cudaMemcpy(y, hy.data(), yn * 4, cudaMemcpyHostToDevice));
    backend(s, 1, x, w, y, ref_dx, xn);
    CC(cudaMemcpy(x, hx.data(), xn * 4, cudaMemcpyHostToDevice));
    backend(s, 2, x, w, y, ref_dw, wn);
    cudaFree(ws); cudaFree(x); cudaFree(w); cudaFree(y);
  }
  return 0;
}
