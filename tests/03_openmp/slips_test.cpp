// The slips catalog of stage 03: every slip of tests/slips.def for this stage, planted in a
// learner's wrong copy of the task's code (the lesson's parallel loops below, one line mutated per
// slip; never computed from the tests' known-slip lists), run through the very checks its task
// tests run (shard_checks.hpp, reduction_checks.hpp, ...), and its message held against the row's
// words. The layers the replicas run are stage 01's and 02's: this catalog needs their lessons.
#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "01_fc_softmax/loss.hpp"
#include "01_fc_softmax/sgd.hpp"
#include "01_fc_softmax/train.hpp"
#include "03_openmp/first_error.hpp"
#include "03_openmp/param_chunks.hpp"
#include "03_openmp/replica.hpp"
#include "03_openmp/shard.hpp"
#include "common/core/not_implemented.hpp"
#include "evaluate_checks.hpp"
#include "reduction_checks.hpp"
#include "shard_checks.hpp"
#include "slip_catalog.hpp"
#include "sliced_layer_checks.hpp"

using namespace course;
using namespace course::s03test;

namespace {

using Replicas = std::vector<std::unique_ptr<Replica<float>>>;

// ---- Task 3.1: one shard per replica, in parallel ---------------------------------------------

enum class ShardSlip { OwnWeights, XNotAdvanced, RowsNotAdvanced, MeanLoss, RowsFromTTimesSize, NoAbsoluteErrors };

template <ShardSlip slip>
std::vector<ShardResult> shards_with(Replicas& replicas, const float* x, const int* labels, int B,
                                     const std::string& loss) {
  const int R = static_cast<int>(replicas.size());
  const long in = replicas[0]->net.input_shape().size();
  const int K = replicas[0]->net.classes();
  std::vector<ShardResult> results(static_cast<std::size_t>(R));
  FirstError error;
#pragma omp parallel for num_threads(R) schedule(static, 1)
  for (int t = 0; t < R; ++t) {
    error.guard([&] {
      const Shard s = shard_of(B, R, t);
      if (s.size() == 0) return;
      Replica<float>& r = *replicas[t];
      if (t > 0 && slip != ShardSlip::OwnWeights) copy_weights(replicas[0]->params, r.params);
      const int begin = slip == ShardSlip::RowsFromTTimesSize ? t * s.size() : s.begin;
      const int x_row = slip == ShardSlip::XNotAdvanced || slip == ShardSlip::RowsNotAdvanced ? 0 : begin;
      const int label_row = slip == ShardSlip::RowsNotAdvanced ? 0 : begin;
      const float* logits = r.net.forward(x + x_row * in, s.size());
      long correct = 0;
      for (int n = 0; n < s.size(); ++n) correct += argmax(logits + n * K, K) == labels[label_row + n];
      r.probs.resize(static_cast<std::size_t>(s.size()) * K);
      r.dlogits.resize(r.probs.size());
      double abs_error = 0;
      const float mean = loss_forward_backward(loss, logits, labels + label_row, r.probs.data(), r.dlogits.data(),
                                               s.size(), K, slip == ShardSlip::NoAbsoluteErrors ? nullptr : &abs_error);
      r.net.backward(r.dlogits.data(), s.size());
      results[t] = {s.size(), slip == ShardSlip::MeanLoss ? double(mean) : double(mean) * s.size(), correct, abs_error};
    });
  }
  error.rethrow();
  return results;
}

// ---- Task 3.2: the reduction over chunks, then one SGD step ------------------------------------

enum class ReduceSlip { PlainSum, EqualWeights, ShardZeroTwice, LastShardLeftOut, EmptyShardsAdded, WBeforeV };

template <ReduceSlip slip>
void reduce_with(Replicas& replicas, const std::vector<ShardResult>& shards, int B, float lr, float momentum) {
  const int R = static_cast<int>(replicas.size());
  int nonempty = 0;
  for (const ShardResult& s : shards) nonempty += s.size > 0;
  const auto weight = [&](int t) {
    if (slip == ReduceSlip::PlainSum) return 1.0f;
    if (slip == ReduceSlip::EqualWeights) return 1.0f / float(nonempty);
    return float(shards[t].size) / float(B);
  };
  const std::vector<ParamChunk> chunks = param_chunks(replicas[0]->params);
#pragma omp parallel for num_threads(R) schedule(static)
  for (long c = 0; c < static_cast<long>(chunks.size()); ++c) {
    const ParamChunk& k = chunks[c];
    Param<float>& master = *replicas[0]->params[k.param];
    float* g = master.grad.ptr();
    const float w0 = weight(0);
    for (long i = k.begin; i < k.end; ++i) g[i] *= w0;
    const int first = slip == ReduceSlip::ShardZeroTwice ? 0 : 1, last = slip == ReduceSlip::LastShardLeftOut ? R - 1 : R;
    for (int t = first; t < last; ++t) {
      if (shards[t].size == 0 && slip != ReduceSlip::EmptyShardsAdded) continue;
      const float wt = weight(t);
      const float* gt = replicas[t]->params[k.param]->grad.ptr();  // t = 0 (ShardZeroTwice): g itself, scaled
      for (long i = k.begin; i < k.end; ++i) g[i] += wt * gt[i];
    }
    float* w = master.value.ptr();
    float* v = master.velocity.ptr();
    if (slip == ReduceSlip::WBeforeV) {
      for (long i = k.begin; i < k.end; ++i) {
        w[i] -= lr * v[i];
        v[i] = momentum * v[i] + g[i];
      }
    } else {
      sgd_update(w + k.begin, g + k.begin, v + k.begin, k.end - k.begin, lr, momentum);
    }
  }
}

// ---- Task 3.3: a layer split over slices of the batch ------------------------------------------

enum class SliceSlip { OwnWeights, PartialsNotAdded, CopyZeroTwice, LastSliceLeftOut };

template <SliceSlip slip>
class SlicedWith : public Layer<float> {
 public:
  SlicedWith(std::vector<std::unique_ptr<Layer<float>>> copies, Shape3 in) : copies_(std::move(copies)), in_(in) {
    for (auto& c : copies_) params_.push_back(c->params());
  }
  std::string name() const override { return copies_[0]->name(); }
  std::string token() const override { return copies_[0]->token(); }
  Shape3 out_shape() const override { return copies_[0]->out_shape(); }
  std::vector<Param<float>*> params() override { return params_[0]; }

  void forward(const float* x, float* y, int B) override {
    const int R = static_cast<int>(copies_.size());
    const long in = in_.size(), out = out_shape().size();
    FirstError error;
#pragma omp parallel for num_threads(R) schedule(static, 1)
    for (int t = 0; t < R; ++t) {
      error.guard([&] {
        const Shard s = shard_of(B, R, t);
        if (s.size() == 0) return;
        if (t > 0 && slip != SliceSlip::OwnWeights) copy_weights(params_[0], params_[t]);
        copies_[t]->forward(x + s.begin * in, y + s.begin * out, s.size());
      });
    }
    error.rethrow();
  }

  void backward(const float* x, const float* y, const float* dy, float* dx, int B) override {
    const int R = static_cast<int>(copies_.size());
    const long in = in_.size(), out = out_shape().size();
    FirstError error;
#pragma omp parallel for num_threads(R) schedule(static, 1)
    for (int t = 0; t < R; ++t) {
      error.guard([&] {
        const Shard s = shard_of(B, R, t);
        if (s.size() == 0) return;
        copies_[t]->backward(x + s.begin * in, y + s.begin * out, dy + s.begin * out, dx ? dx + s.begin * in : nullptr,
                             s.size());
      });
    }
    error.rethrow();
    if (slip == SliceSlip::PartialsNotAdded) return;
    const int first = slip == SliceSlip::CopyZeroTwice ? 0 : 1;
    const int last = std::min(B, R) - (slip == SliceSlip::LastSliceLeftOut ? 1 : 0);
    for (const ParamChunk& k : param_chunks(params_[0])) {
      float* g = params_[0][k.param]->grad.ptr();
      for (int t = first; t < last; ++t) {
        const float* gt = params_[t][k.param]->grad.ptr();
        for (long i = k.begin; i < k.end; ++i) g[i] += gt[i];
      }
    }
  }

 private:
  std::vector<std::unique_ptr<Layer<float>>> copies_;
  std::vector<std::vector<Param<float>*>> params_;
  Shape3 in_;
};

template <SliceSlip slip>
void plant_sliced_layer() {
  check_sliced_layers([](std::vector<std::unique_ptr<Layer<float>>> copies, Shape3 in) -> std::unique_ptr<Layer<float>> {
    return std::make_unique<SlicedWith<slip>>(std::move(copies), in);
  });
}

// ---- Task 3.4: whole batches on every thread ----------------------------------------------------

enum class EvaluateSlip { MeanLoss, NoAbsoluteErrors, LastBatchLeftOut };

template <EvaluateSlip slip>
EpochStats evaluate_with(Replicas& replicas, const Dataset& data, const EngineConfig& cfg, std::vector<int>* predictions) {
  const Batcher batcher(data, cfg.batch, cfg.seed, 0, /*shuffle=*/false);
  const int R = static_cast<int>(replicas.size());
  const int K = replicas[0]->net.classes();
  const int batches = batcher.num_batches();
  std::vector<int> predicted(static_cast<std::size_t>(data.size()), 0);
  std::vector<double> batch_loss(static_cast<std::size_t>(batches), 0.0), batch_abs_error(batch_loss.size(), 0.0);
#pragma omp parallel for num_threads(R) schedule(static, 1)
  for (int t = 1; t < R; ++t) copy_weights(replicas[0]->params, replicas[t]->params);
  const int evaluated = slip == EvaluateSlip::LastBatchLeftOut ? batches - 1 : batches;
  FirstError error;
#pragma omp parallel for num_threads(R) schedule(dynamic)
  for (int b = 0; b < evaluated; ++b) {
    error.guard([&] {
      Replica<float>& r = *replicas[omp_get_thread_num()];
      r.x.resize(static_cast<std::size_t>(cfg.batch) * data.shape.size());
      r.labels.resize(static_cast<std::size_t>(cfg.batch));
      r.probs.resize(static_cast<std::size_t>(cfg.batch) * K);
      r.dlogits.resize(r.probs.size());
      const int B = batcher.gather(b, r.x.data(), r.labels.data());
      const float* logits = r.net.forward(r.x.data(), B);
      const float loss = loss_forward_backward(cfg.loss, logits, r.labels.data(), r.probs.data(), r.dlogits.data(), B,
                                               K, slip == EvaluateSlip::NoAbsoluteErrors ? nullptr : &batch_abs_error[b]);
      for (int n = 0; n < B; ++n) predicted[batcher.order()[b * cfg.batch + n]] = argmax(logits + n * K, K);
      batch_loss[b] = slip == EvaluateSlip::MeanLoss ? double(loss) : double(loss) * B;
    });
  }
  error.rethrow();
  EpochStats stats;
  for (double l : batch_loss) stats.loss_sum += l;
  for (double a : batch_abs_error) stats.abs_error_sum += a;
  for (int i = 0; i < data.size(); ++i) stats.correct += predicted[i] == data.labels[i];
  stats.seen = data.size();
  if (predictions) *predictions = std::move(predicted);
  return stats;
}

// The replicas run stage 01's and 02's layers, loss and update: until those lessons are written (the
// exercises track), no slip of stage 03 can be planted. "" when they run, else what they throw.
std::string what_the_earlier_lessons_lack() {
  try {
    Network<float> net(parse_arch(kSmallCnn), kCnnInput, kClasses, make_cnn_layer<float>);
    random_weights(net.params(), 1);
    const std::vector<float> x(kCnnInput.size(), 0.5f);
    const int label = 3;
    std::vector<float> probs(kClasses), dlogits(kClasses);
    loss_forward_backward(std::string("cross-entropy"), net.forward(x.data(), 1), &label, probs.data(), dlogits.data(), 1,
                          kClasses);
    net.backward(dlogits.data(), 1);
    float w = 1, g = 1, v = 0;
    sgd_update(&w, &g, &v, 1, 0.1f, 0.9f);
  } catch (const NotImplemented& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Stage03_Slips, EveryListedSlipIsNamed) {
  const std::string lacking = what_the_earlier_lessons_lack();
  if (!lacking.empty()) GTEST_SKIP() << "the slips of stage 03 are planted in code that runs stages 01 and 02: " << lacking;
  testkit::expect_every_slip_named(
      "03",
      {
          {"shard_own_weights", [] { check_forward_backward_shards(shards_with<ShardSlip::OwnWeights>); }},
          {"shard_x_not_advanced", [] { check_forward_backward_shards(shards_with<ShardSlip::XNotAdvanced>); }},
          {"shard_rows_not_advanced", [] { check_forward_backward_shards(shards_with<ShardSlip::RowsNotAdvanced>); }},
          {"shard_mean_loss", [] { check_forward_backward_shards(shards_with<ShardSlip::MeanLoss>); }},
          {"shard_off_by_one", [] { check_forward_backward_shards(shards_with<ShardSlip::RowsFromTTimesSize>); }},
          {"shard_no_abs_errors", [] { check_forward_backward_shards(shards_with<ShardSlip::NoAbsoluteErrors>); }},
          {"reduce_plain_sum", [] { check_reduce_and_update(reduce_with<ReduceSlip::PlainSum>); }},
          {"reduce_equal_weights", [] { check_reduce_and_update(reduce_with<ReduceSlip::EqualWeights>); }},
          {"reduce_shard_0_twice", [] { check_reduce_and_update(reduce_with<ReduceSlip::ShardZeroTwice>); }},
          {"reduce_last_left_out", [] { check_reduce_and_update(reduce_with<ReduceSlip::LastShardLeftOut>); }},
          {"reduce_empty_added", [] { check_reduce_and_update(reduce_with<ReduceSlip::EmptyShardsAdded>); }},
          {"reduce_w_before_v", [] { check_reduce_and_update(reduce_with<ReduceSlip::WBeforeV>); }},
          {"sliced_own_weights", plant_sliced_layer<SliceSlip::OwnWeights>},
          {"sliced_partials_not_added", plant_sliced_layer<SliceSlip::PartialsNotAdded>},
          {"sliced_copy_0_twice", plant_sliced_layer<SliceSlip::CopyZeroTwice>},
          {"sliced_last_left_out", plant_sliced_layer<SliceSlip::LastSliceLeftOut>},
          {"evaluate_mean_loss", [] { check_evaluate_parallel(evaluate_with<EvaluateSlip::MeanLoss>); }},
          {"evaluate_no_abs_errors", [] { check_evaluate_parallel(evaluate_with<EvaluateSlip::NoAbsoluteErrors>); }},
          {"evaluate_last_batch_left_out",
           [] { check_evaluate_parallel(evaluate_with<EvaluateSlip::LastBatchLeftOut>); }},
      });
}
