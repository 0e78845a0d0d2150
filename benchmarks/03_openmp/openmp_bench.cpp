// Stage 03 benchmarks: stage 02's operations and training steps on several threads.
//
//   build/bin/s03_bench                                          all of them
//   build/bin/s03_bench --benchmark_filter='TrainStep_CNN/data'   the data-parallel thread sweep
//
// Names are stage 02's (model_layers.hpp, train_step.hpp), so Google
// Benchmark's compare.py lines the two stages up:
//
//   BM_TrainStep_CNN, BM_TrainStep_MLP          one data-parallel step on every core (--parallel data)
//   BM_TrainStep_<M>/data/threads:T             the same on T threads
//   BM_TrainStep_<M>/loops/threads:T            one loop-level step on T threads (--parallel loops)
//   BM_DataStepPhase_<M>/<phase>/threads:T     one phase of the data-parallel step (see data_step_phase)
//   BM_ConvForward/conv1, ... BM_MaxPoolBackward/pool2
//                                               the layer split over the batch on every core (loop level)
//   BM_ConvForward/conv1/threads:T, ...         the same on T threads
//
// T runs over 1, 2, 4, ... and the number of cores (omp_get_max_threads(), so
// OMP_NUM_THREADS caps it). Batch 64 on 1x28x28, as in stage 02. Items are
// images: items_per_second is images/s. Times are wall-clock (UseRealTime):
// the work runs on OpenMP's threads, not on the benchmark's.
#include <benchmark/benchmark.h>

#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../01_fc_softmax/train_step.hpp"
#include "../02_conv_pool/model_layers.hpp"
#include "02_conv_pool/cnn.hpp"
#include "02_conv_pool/conv.hpp"
#include "02_conv_pool/pool.hpp"
#include "03_openmp/data_parallel.hpp"
#include "03_openmp/replica.hpp"
#include "03_openmp/shard.hpp"
#include "03_openmp/sliced_layer.hpp"
#include "common/data/data.hpp"
#include "common/core/rng.hpp"

namespace {

using course::Shard;
using course::shard_of;
using course::bench::ConvLayerShape;
using course::bench::PoolLayerShape;

constexpr int kBatch = 64;
constexpr int kClasses = 10;
const course::Shape3 kInput{1, 28, 28};

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::vector<float> v(n);
  course::Rng rng(seed);
  rng.fill_normal(v.data(), n, 1.0);
  return v;
}

/// 1, 2, 4, ... below the number of cores, then the number of cores.
std::vector<int> thread_counts() {
  const int cores = omp_get_max_threads();
  std::vector<int> out;
  for (int t = 1; t < cores; t *= 2) out.push_back(t);
  out.push_back(cores);
  return out;
}

std::string suffix(int threads, bool named) { return named ? "/threads:" + std::to_string(threads) : std::string(); }

// ---- training steps -----------------------------------------------------------------------

/// One data-parallel step (Tasks 3.1 and 3.2) on a synthetic batch.
class DataParallelStep {
 public:
  DataParallelStep(const std::string& model, int threads)
      : arch_(course::parse_arch(course::named_model_spec(model))),
        master_(arch_, kInput, kClasses, course::make_cnn_layer<float>),
        set_(course::make_replicas(master_, threads, arch_, kInput, kClasses,
                                   course::LayerFactory<float>(course::make_cnn_layer<float>))),
        data_(course::make_synthetic(kBatch, kInput, kClasses, 1)) {
    master_.init(42);
  }
  double run() {
    const auto shards = forward_backward(kBatch);
    course::reduce_and_update(set_.replicas, shards, kBatch, 0.01f, 0.9f);
    return shards[0].loss_sum;
  }
  /// Phase 1 alone (Task 3.1): weights to the replicas, forward, loss and backward of every shard.
  /// With B < kBatch it runs the first B images only (one replica on B images: one thread's share).
  std::vector<course::ShardResult> forward_backward(int B) {
    return course::forward_backward_shards(set_.replicas, data_.images.data(), data_.labels.data(), B,
                                           "cross-entropy");
  }
  /// Phase 2 alone (Task 3.2): the reduction of the replicas' gradients and the update.
  void reduce_and_update(const std::vector<course::ShardResult>& shards) {
    course::reduce_and_update(set_.replicas, shards, kBatch, 0.01f, 0.9f);
  }
  /// The master's weights into replica 1, on this thread: what each replica does first in phase 1.
  void copy_weights() { course::copy_weights(set_.replicas[0]->params, set_.replicas[1]->params); }

 private:
  course::Arch arch_;
  course::Network<float> master_;
  course::ReplicaSet<float> set_;
  course::Dataset data_;
};

void train_step_data(benchmark::State& state, const std::string& model, int threads) {
  DataParallelStep step(model, threads);
  for (auto _ : state) benchmark::DoNotOptimize(step.run());
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(model + " batch " + std::to_string(kBatch) + ", data-parallel, " + std::to_string(threads) + " threads");
}

// Where a data-parallel step's time goes, phase by phase, for the lesson's profile:
//   BM_DataStepPhase_<M>/forward_backward/threads:T   Task 3.1 alone (weights copied, shards run)
//   BM_DataStepPhase_<M>/reduce_update/threads:T      Task 3.2 alone (gradients summed, one update)
//   BM_DataStepPhase_<M>/one_shard/threads:T          ONE thread running the shard a thread gets on T
//                                                     threads (B / T images), nothing else running:
//                                                     forward_backward at T threads minus this is
//                                                     what running side by side costs
//   BM_DataStepPhase_<M>/copy_weights                 one replica's copy of the master's weights
void data_step_phase(benchmark::State& state, const std::string& model, int threads, const std::string& phase) {
  if (phase == "one_shard") {
    DataParallelStep step(model, 1);
    const int B = shard_of(kBatch, threads, 0).size();
    for (auto _ : state) benchmark::DoNotOptimize(step.forward_backward(B));
    state.SetItemsProcessed(state.iterations() * B);
  } else if (phase == "copy_weights") {
    DataParallelStep step(model, 2);
    for (auto _ : state) step.copy_weights();
    state.SetItemsProcessed(state.iterations());
  } else {
    DataParallelStep step(model, threads);
    const auto shards = step.forward_backward(kBatch);
    for (auto _ : state) {
      if (phase == "forward_backward")
        benchmark::DoNotOptimize(step.forward_backward(kBatch));
      else
        step.reduce_and_update(shards);
    }
    state.SetItemsProcessed(state.iterations() * kBatch);
  }
  state.SetLabel(model + " batch " + std::to_string(kBatch) + ", " + phase + ", " + std::to_string(threads) +
                 " threads");
}

void train_step_loops(benchmark::State& state, const std::string& model, int threads) {
  // Stage 01's training step on a network whose layers are sliced (Task 3.3).
  course::bench::TrainStep step(model, kInput, kBatch, course::sliced_layers<float>(course::make_cnn_layer<float>, threads));
  for (auto _ : state) benchmark::DoNotOptimize(step.run());
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(model + " batch " + std::to_string(kBatch) + ", loop-level, " + std::to_string(threads) + " threads");
}

// ---- single layers, split over the batch ---------------------------------------------------

/// Runs op(begin, count) for the R slices of the batch in parallel.
template <typename Op>
void over_slices(int R, Op&& op) {
#pragma omp parallel for num_threads(R) schedule(static, 1)
  for (int t = 0; t < R; ++t) {
    const Shard s = shard_of(kBatch, R, t);
    if (s.size() > 0) op(t, s.begin, s.size());
  }
}

course::ConvGeometry geometry(const ConvLayerShape& s) { return {s.C_in, s.H, s.W, s.C_out, s.K, s.P, s.S}; }
course::PoolGeometry geometry(const PoolLayerShape& s) { return {s.C, s.H, s.W, s.K, s.S, s.P}; }

void conv_counters(benchmark::State& state, const ConvLayerShape& s, int threads) {
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["FLOP/s"] = benchmark::Counter(s.flops_per_example() * kBatch * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
  state.SetLabel(geometry(s).str() + ", batch " + std::to_string(kBatch) + ", " + std::to_string(threads) + " threads");
}

void conv_forward(benchmark::State& state, const ConvLayerShape& s, int R) {
  const course::ConvGeometry g = geometry(s);
  const auto x = random_values(kBatch * g.in_size(), 1), W = random_values(g.weight_size(), 2),
             b = random_values(g.C_out, 3);
  std::vector<float> y(kBatch * g.out_size());
  for (auto _ : state) {
    over_slices(R, [&](int, int begin, int n) {
      course::conv2d_forward(x.data() + begin * g.in_size(), W.data(), b.data(), y.data() + begin * g.out_size(), n, g);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  conv_counters(state, s, R);
}

void conv_backward_data(benchmark::State& state, const ConvLayerShape& s, int R) {
  const course::ConvGeometry g = geometry(s);
  const auto dy = random_values(kBatch * g.out_size(), 1), W = random_values(g.weight_size(), 2);
  std::vector<float> dx(kBatch * g.in_size());
  for (auto _ : state) {
    over_slices(R, [&](int, int begin, int n) {
      course::conv2d_backward_input(dy.data() + begin * g.out_size(), W.data(), dx.data() + begin * g.in_size(), n, g);
    });
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
  conv_counters(state, s, R);
}

void conv_backward_filter(benchmark::State& state, const ConvLayerShape& s, int R) {
  // Each slice's dW and db into its own buffers (one heap allocation per thread), then their sum.
  const course::ConvGeometry g = geometry(s);
  const auto x = random_values(kBatch * g.in_size(), 1), dy = random_values(kBatch * g.out_size(), 2);
  std::vector<std::vector<float>> dW(static_cast<std::size_t>(R), std::vector<float>(g.weight_size())),
      db(static_cast<std::size_t>(R), std::vector<float>(g.C_out));
  for (auto _ : state) {
    over_slices(R, [&](int t, int begin, int n) {
      course::conv2d_backward_weight(x.data() + begin * g.in_size(), dy.data() + begin * g.out_size(),
                                     dW[t].data(), db[t].data(), n, g);
    });
    const int used = std::min(kBatch, R);
    for (int t = 1; t < used; ++t) {
      for (long i = 0; i < g.weight_size(); ++i) dW[0][i] += dW[t][i];
      for (int i = 0; i < g.C_out; ++i) db[0][i] += db[t][i];
    }
    benchmark::DoNotOptimize(dW[0].data());
    benchmark::ClobberMemory();
  }
  conv_counters(state, s, R);
}

void maxpool_forward(benchmark::State& state, const PoolLayerShape& s, int R) {
  const course::PoolGeometry g = geometry(s);
  const auto x = random_values(kBatch * g.in_size(), 1);
  std::vector<float> y(kBatch * g.out_size());
  std::vector<int> argmax(y.size());
  for (auto _ : state) {
    over_slices(R, [&](int, int begin, int n) {
      course::maxpool_forward(x.data() + begin * g.in_size(), y.data() + begin * g.out_size(),
                              argmax.data() + begin * g.out_size(), n, g);
    });
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(g.str() + ", batch " + std::to_string(kBatch) + ", " + std::to_string(R) + " threads");
}

void maxpool_backward(benchmark::State& state, const PoolLayerShape& s, int R) {
  const course::PoolGeometry g = geometry(s);
  const auto x = random_values(kBatch * g.in_size(), 1), dy = random_values(kBatch * g.out_size(), 2);
  std::vector<float> y(dy.size()), dx(x.size());
  std::vector<int> argmax(y.size());
  course::maxpool_forward(x.data(), y.data(), argmax.data(), kBatch, g);  // a real arg-max pattern
  for (auto _ : state) {
    over_slices(R, [&](int, int begin, int n) {
      course::maxpool_backward(dy.data() + begin * g.out_size(), argmax.data() + begin * g.out_size(),
                               dx.data() + begin * g.in_size(), n, g);
    });
    benchmark::DoNotOptimize(dx.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.SetLabel(g.str() + ", batch " + std::to_string(kBatch) + ", " + std::to_string(R) + " threads");
}

void register_all() {
  const int cores = omp_get_max_threads();
  const std::vector<int> sweep = thread_counts();
  // Each family: first the name of stage 02 on every core, then the sweep.
  auto each = [&](auto&& add) {
    add(cores, false);
    for (int t : sweep) add(t, true);
  };
  for (const std::string model : {"CNN", "MLP"}) {
    const std::string named = model == "CNN" ? "cnn" : "mlp";
    each([&](int t, bool with_threads) {
      benchmark::RegisterBenchmark(("BM_TrainStep_" + model + (with_threads ? "/data" : "") + suffix(t, with_threads)).c_str(),
                                   train_step_data, named, t)->UseRealTime()->Unit(benchmark::kMillisecond);
    });
    for (int t : sweep)
      benchmark::RegisterBenchmark(("BM_TrainStep_" + model + "/loops" + suffix(t, true)).c_str(), train_step_loops,
                                   named, t)->UseRealTime()->Unit(benchmark::kMillisecond);
  }
  for (const std::string model : {"CNN", "MLP"}) {
    const std::string named = model == "CNN" ? "cnn" : "mlp";
    for (const std::string phase : {"forward_backward", "reduce_update", "one_shard"})
      for (int t : sweep)
        benchmark::RegisterBenchmark(("BM_DataStepPhase_" + model + "/" + phase + suffix(t, true)).c_str(),
                                     data_step_phase, named, t, phase)->UseRealTime()->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("BM_DataStepPhase_" + model + "/copy_weights").c_str(), data_step_phase, named, 1,
                                 std::string("copy_weights"))->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
  std::vector<ConvLayerShape> convs;
  std::vector<PoolLayerShape> pools;
  course::bench::model_layers("cnn", kInput, kClasses, &convs, &pools);
  for (const auto& s : convs)
    each([&](int t, bool named) {
      benchmark::RegisterBenchmark(("BM_ConvForward/" + s.name + suffix(t, named)).c_str(), conv_forward, s, t)->UseRealTime()->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("BM_ConvBackwardData/" + s.name + suffix(t, named)).c_str(), conv_backward_data, s, t)->UseRealTime()->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("BM_ConvBackwardFilter/" + s.name + suffix(t, named)).c_str(), conv_backward_filter, s, t)->UseRealTime()->Unit(benchmark::kMicrosecond);
    });
  for (const auto& s : pools)
    each([&](int t, bool named) {
      benchmark::RegisterBenchmark(("BM_MaxPoolForward/" + s.name + suffix(t, named)).c_str(), maxpool_forward, s, t)->UseRealTime()->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("BM_MaxPoolBackward/" + s.name + suffix(t, named)).c_str(), maxpool_backward, s, t)->UseRealTime()->Unit(benchmark::kMicrosecond);
    });
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
