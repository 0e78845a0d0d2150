// Every kernel a CUDA program runs, with its GPU start and end times, traced by
// CUPTI's activity API while the program runs at full speed: a library the CUDA
// driver loads into the program at start-up (CUDA_INJECTION64_PATH), so the
// program itself is not changed or rebuilt.
//
//   g++ -O2 -shared -fPIC -I$CUDA/include tools/gpu/kernel_trace.cpp -o kernel_trace.so -L$CUPTI_LIB -lcupti
//   CUDA_INJECTION64_PATH=$PWD/kernel_trace.so KERNEL_TRACE_OUT=trace.csv build/gpu/bin/s06_train_solution ...
//   python3 tools/gpu/kernel_table.py trace.csv
//
// Why not Nsight Compute: ncu runs every kernel alone with the host in between,
// which slows a program's own measurements (stage 06's cudnnFind then picks other
// algorithms) and hides the gaps between kernels. CUPTI only records the
// timestamps the GPU writes anyway: the program's timing and choices stay as they
// are, CUDA graph replays included (each kernel node is one record).
//
// Output: one CSV line per kernel, in start order: start_ns,end_ns,stream,graph,name
// (name demangled, commas replaced). Written when the program exits. A "%p" in
// KERNEL_TRACE_OUT becomes the process id: each rank of stage 09 writes its own file.
#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

struct KernelRecord {
  unsigned long long start, end;
  unsigned stream, graph;
  std::string name;
};

std::mutex mutex;
std::vector<KernelRecord> records;
constexpr size_t kBufferBytes = 8 << 20;

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "kernel_trace: %s failed: %s\n", what, text ? text : "unknown CUPTI error");
}

std::string demangled(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  std::replace(out.begin(), out.end(), ',', ';');  // the CSV stays five columns
  return out;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    records.push_back({k->start, k->end, k->streamId, k->graphId, demangled(k->name)});
  }
  std::free(buffer);
}

void write_trace() {
  check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "cuptiActivityFlushAll");
  const char* given = std::getenv("KERNEL_TRACE_OUT");
  std::string path = given ? given : "kernel_trace.csv";
  if (const std::size_t at = path.find("%p"); at != std::string::npos) path.replace(at, 2, std::to_string(getpid()));
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "kernel_trace: cannot write %s\n", path.c_str());
    return;
  }
  std::lock_guard<std::mutex> lock(mutex);
  std::sort(records.begin(), records.end(), [](const KernelRecord& a, const KernelRecord& b) { return a.start < b.start; });
  std::fprintf(f, "start_ns,end_ns,stream,graph,name\n");
  for (const KernelRecord& r : records)
    std::fprintf(f, "%llu,%llu,%u,%u,%s\n", r.start, r.end, r.stream, r.graph, r.name.c_str());
  std::fclose(f);
  std::fprintf(stderr, "kernel_trace: %zu kernels written to %s\n", records.size(), path.c_str());
}

}  // namespace

// Called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH).
extern "C" int InitializeInjection() {
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)");
  std::atexit(write_trace);
  return 1;
}
