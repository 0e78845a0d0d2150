// The slips catalog of stage 01: every slip of tests/slips.def for this stage, planted in a
// learner's wrong copy of the task's code (written below, one mutation each, never computed from
// the tests' known-slip lists), run through the very checks its task tests run
// (dense_checks.hpp, activation_checks.hpp, ...), and its message held against the row's words.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "activation_checks.hpp"
#include "dense_checks.hpp"
#include "init_checks.hpp"
#include "loss_checks.hpp"
#include "sgd_checks.hpp"
#include "slip_catalog.hpp"

using namespace course;
using namespace course::s01test;

namespace {

// ---- Task 1.1: dense forward, y[n][o] = b[o] + sum_i W[o][i] x[n][i] ------------------------

template <typename T>
void dense_W_read_as_in_by_out(const T* x, const T* W, const T* b, T* y, int B, int IN, int OUT) {
  for (int n = 0; n < B; ++n)
    for (int o = 0; o < OUT; ++o) {
      T acc = 0;
      for (int i = 0; i < IN; ++i) acc += W[i * OUT + o] * x[n * IN + i];  // slip: W[o * IN + i]
      y[n * OUT + o] = acc + b[o];
    }
}

template <typename T>
void dense_without_bias(const T* x, const T* W, const T*, T* y, int B, int IN, int OUT) {
  for (int n = 0; n < B; ++n)
    for (int o = 0; o < OUT; ++o) {
      T acc = 0;
      for (int i = 0; i < IN; ++i) acc += W[o * IN + i] * x[n * IN + i];
      y[n * OUT + o] = acc;  // slip: + b[o]
    }
}

template <typename T>
void dense_bias_by_example(const T* x, const T* W, const T* b, T* y, int B, int IN, int OUT) {
  for (int n = 0; n < B; ++n)
    for (int o = 0; o < OUT; ++o) {
      T acc = 0;
      for (int i = 0; i < IN; ++i) acc += W[o * IN + i] * x[n * IN + i];
      y[n * OUT + o] = acc + b[n];  // slip: b[o]
    }
}

// ---- Task 1.4: dense backward (its gradient checks differentiate through a right forward) ------

template <typename T>
void dense_forward_right(const T* x, const T* W, const T* b, T* y, int B, int IN, int OUT) {
  for (int n = 0; n < B; ++n)
    for (int o = 0; o < OUT; ++o) {
      T acc = 0;
      for (int i = 0; i < IN; ++i) acc += W[o * IN + i] * x[n * IN + i];
      y[n * OUT + o] = acc + b[o];
    }
}

template <typename Backward>
void plant_dense_backward(const Backward& backward) {
  check_dense_backward(backward, [](auto... a) { dense_forward_right(a...); });
}

// The learner's backward with one of its lines mutated, chosen by `slip`; the loops are the lesson's.
enum class BackwardSlip { DWTransposed, DbOverwritten, DWOverwritten, DxWithW, NotZeroed };

template <BackwardSlip slip>
void dense_backward_with(const double* x, const double* W, const double* dy, double* dW, double* db, double* dx, int B,
                         int IN, int OUT) {
  if (slip != BackwardSlip::NotZeroed) {
    std::fill(dW, dW + OUT * IN, 0.0);
    std::fill(db, db + OUT, 0.0);
  }
  for (int n = 0; n < B; ++n)
    for (int o = 0; o < OUT; ++o) {
      const double g = dy[n * OUT + o];
      if (slip == BackwardSlip::DbOverwritten) db[o] = g;
      else db[o] += g;
      for (int i = 0; i < IN; ++i) {
        if (slip == BackwardSlip::DWTransposed) dW[i * OUT + o] += g * x[n * IN + i];
        else if (slip == BackwardSlip::DWOverwritten) dW[o * IN + i] = g * x[n * IN + i];
        else dW[o * IN + i] += g * x[n * IN + i];
      }
    }
  if (dx == nullptr) return;
  for (int n = 0; n < B; ++n) {
    if (slip != BackwardSlip::NotZeroed) std::fill(dx + n * IN, dx + (n + 1) * IN, 0.0);
    for (int o = 0; o < OUT; ++o)
      for (int i = 0; i < IN; ++i)
        dx[n * IN + i] += dy[n * OUT + o] * (slip == BackwardSlip::DxWithW ? W[i * OUT + o] : W[o * IN + i]);
  }
}

// ---- Task 1.2: activations -------------------------------------------------------------------

// A learner's right answer, written plainly; each slip below rewrites one case of it.
struct Activations {
  template <typename T>
  void forward(Activation f, const T* x, T* y, long n, double slope = kLeakySlope) const {
    for (long i = 0; i < n; ++i) switch (f) {
        case Activation::ReLU: y[i] = x[i] > 0 ? x[i] : T(0); break;
        case Activation::LeakyReLU: y[i] = x[i] > 0 ? x[i] : T(slope) * x[i]; break;
        case Activation::Sigmoid: y[i] = T(1) / (T(1) + std::exp(-x[i])); break;
        case Activation::Tanh: y[i] = std::tanh(x[i]); break;
        case Activation::Softplus: y[i] = std::max(x[i], T(0)) + std::log1p(std::exp(-std::fabs(x[i]))); break;
      }
  }
  template <typename T>
  void backward(Activation f, const T* x, const T* y, const T* dy, T* dx, long n, double slope = kLeakySlope) const {
    for (long i = 0; i < n; ++i) switch (f) {
        case Activation::ReLU: dx[i] = x[i] > 0 ? dy[i] : T(0); break;
        case Activation::LeakyReLU: dx[i] = x[i] > 0 ? dy[i] : T(slope) * dy[i]; break;
        case Activation::Sigmoid: dx[i] = dy[i] * y[i] * (T(1) - y[i]); break;
        case Activation::Tanh: dx[i] = dy[i] * (T(1) - y[i] * y[i]); break;
        case Activation::Softplus: dx[i] = dy[i] / (T(1) + std::exp(-x[i])); break;
      }
  }
};

struct ReluMaskInverted : Activations {
  template <typename T>
  void backward(Activation f, const T* x, const T* y, const T* dy, T* dx, long n, double slope = kLeakySlope) const {
    if (f != Activation::ReLU) return Activations::backward(f, x, y, dy, dx, n, slope);
    for (long i = 0; i < n; ++i) dx[i] = x[i] < 0 ? dy[i] : T(0);  // slip: x[i] > 0
  }
};

struct ReluMaskAtZero : Activations {
  template <typename T>
  void backward(Activation f, const T* x, const T* y, const T* dy, T* dx, long n, double slope = kLeakySlope) const {
    if (f != Activation::ReLU) return Activations::backward(f, x, y, dy, dx, n, slope);
    for (long i = 0; i < n; ++i) dx[i] = x[i] >= 0 ? dy[i] : T(0);  // slip: x[i] > 0
  }
};

struct ReluMaskMissing : Activations {
  template <typename T>
  void backward(Activation f, const T* x, const T* y, const T* dy, T* dx, long n, double slope = kLeakySlope) const {
    if (f != Activation::ReLU) return Activations::backward(f, x, y, dy, dx, n, slope);
    for (long i = 0; i < n; ++i) dx[i] = dy[i];  // slip: x[i] > 0 ? dy[i] : 0
  }
};

struct SigmoidDerivativeOfX : Activations {
  template <typename T>
  void backward(Activation f, const T* x, const T* y, const T* dy, T* dx, long n, double slope = kLeakySlope) const {
    if (f != Activation::Sigmoid) return Activations::backward(f, x, y, dy, dx, n, slope);
    for (long i = 0; i < n; ++i) dx[i] = dy[i] * x[i] * (T(1) - x[i]);  // slip: y[i] (1 - y[i])
  }
};

struct TanhDerivativeOfX : Activations {
  template <typename T>
  void backward(Activation f, const T* x, const T* y, const T* dy, T* dx, long n, double slope = kLeakySlope) const {
    if (f != Activation::Tanh) return Activations::backward(f, x, y, dy, dx, n, slope);
    for (long i = 0; i < n; ++i) dx[i] = dy[i] * (T(1) - x[i] * x[i]);  // slip: 1 - y[i]^2
  }
};

struct TanhDerivativeWithoutDy : Activations {
  template <typename T>
  void backward(Activation f, const T* x, const T* y, const T* dy, T* dx, long n, double slope = kLeakySlope) const {
    if (f != Activation::Tanh) return Activations::backward(f, x, y, dy, dx, n, slope);
    for (long i = 0; i < n; ++i) dx[i] = T(1) - y[i] * y[i];  // slip: dy[i] * (...)
  }
};

struct LeakyDefaultSlope : Activations {
  template <typename T>
  void forward(Activation f, const T* x, T* y, long n, double slope = kLeakySlope) const {
    if (f != Activation::LeakyReLU) return Activations::forward(f, x, y, n, slope);
    for (long i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : T(kLeakySlope) * x[i];  // slip: T(slope)
  }
  template <typename T>
  void backward(Activation f, const T* x, const T* y, const T* dy, T* dx, long n, double slope = kLeakySlope) const {
    if (f != Activation::LeakyReLU) return Activations::backward(f, x, y, dy, dx, n, slope);
    for (long i = 0; i < n; ++i) dx[i] = x[i] > 0 ? dy[i] : T(kLeakySlope) * dy[i];  // slip: T(slope)
  }
};

struct SoftplusNaive : Activations {
  template <typename T>
  void forward(Activation f, const T* x, T* y, long n, double slope = kLeakySlope) const {
    if (f != Activation::Softplus) return Activations::forward(f, x, y, n, slope);
    for (long i = 0; i < n; ++i) y[i] = std::log(T(1) + std::exp(x[i]));  // slip: max(x, 0) + log1p(e^-|x|)
  }
};

struct SigmoidExponentSign : Activations {
  template <typename T>
  void forward(Activation f, const T* x, T* y, long n, double slope = kLeakySlope) const {
    if (f != Activation::Sigmoid) return Activations::forward(f, x, y, n, slope);
    for (long i = 0; i < n; ++i) y[i] = T(1) / (T(1) + std::exp(x[i]));  // slip: e^-x
  }
};

// ---- Task 1.3: softmax cross-entropy and mean squared error -----------------------------------

struct Losses {
  template <typename T>
  T forward(const T* logits, const int* labels, T* probs, int B, int K) const {
    T total = 0;
    for (int n = 0; n < B; ++n) {
      const T* z = logits + n * K;
      T* p = probs + n * K;
      const T m = *std::max_element(z, z + K);
      T sum = 0;
      for (int k = 0; k < K; ++k) sum += p[k] = std::exp(z[k] - m);
      for (int k = 0; k < K; ++k) p[k] /= sum;
      total += std::log(sum) - (z[labels[n]] - m);
    }
    return total / T(B);
  }
  template <typename T>
  void backward(const T* probs, const int* labels, T* dlogits, int B, int K) const {
    for (int n = 0; n < B; ++n) {
      for (int k = 0; k < K; ++k) dlogits[n * K + k] = probs[n * K + k] / T(B);
      dlogits[n * K + labels[n]] -= T(1) / T(B);
    }
  }
  template <typename T>
  T mse(const T* outputs, const int* labels, T* dlogits, int B, int K) const {
    T total = 0;
    for (int i = 0; i < B * K; ++i) {
      const T diff = outputs[i] - (i % K == labels[i / K] ? T(1) : T(0));
      total += diff * diff;
      dlogits[i] = T(2) * diff / T(B * K);
    }
    return total / T(B * K);
  }
};

struct SoftmaxWithoutMax : Losses {
  template <typename T>
  T forward(const T* logits, const int* labels, T* probs, int B, int K) const {
    T total = 0;
    for (int n = 0; n < B; ++n) {
      const T* z = logits + n * K;
      T* p = probs + n * K;
      T sum = 0;
      for (int k = 0; k < K; ++k) sum += p[k] = std::exp(z[k]);  // slip: e^(z - max z)
      for (int k = 0; k < K; ++k) p[k] /= sum;
      total += std::log(sum) - z[labels[n]];
    }
    return total / T(B);
  }
};

struct LossAsMinusLogP : Losses {
  template <typename T>
  T forward(const T* logits, const int* labels, T* probs, int B, int K) const {
    Losses::forward(logits, labels, probs, B, K);
    T total = 0;
    for (int n = 0; n < B; ++n) total -= std::log(probs[n * K + labels[n]]);  // slip: log-sum-exp - z_y
    return total / T(B);
  }
};

struct LossSummed : Losses {
  template <typename T>
  T forward(const T* logits, const int* labels, T* probs, int B, int K) const {
    return Losses::forward(logits, labels, probs, B, K) * T(B);  // slip: the mean's / B undone
  }
};

struct GradientWithoutLabel : Losses {
  template <typename T>
  void backward(const T* probs, const int*, T* dlogits, int B, int K) const {
    for (int i = 0; i < B * K; ++i) dlogits[i] = probs[i] / T(B);  // slip: no -1/B at the label
  }
};

struct GradientNotDivided : Losses {
  template <typename T>
  void backward(const T* probs, const int* labels, T* dlogits, int B, int K) const {
    for (int n = 0; n < B; ++n) {
      for (int k = 0; k < K; ++k) dlogits[n * K + k] = probs[n * K + k];  // slip: / B
      dlogits[n * K + labels[n]] -= T(1);
    }
  }
};

struct MseOverRows : Losses {
  template <typename T>
  T mse(const T* outputs, const int* labels, T* dlogits, int B, int K) const {
    T total = 0;
    for (int i = 0; i < B * K; ++i) {
      const T diff = outputs[i] - (i % K == labels[i / K] ? T(1) : T(0));
      total += diff * diff;
      dlogits[i] = T(2) * diff / T(B * K);
    }
    return total / T(B);  // slip: / (B K)
  }
};

// ---- Task 1.5: He initialisation -------------------------------------------------------------

// The learner's he_init with one of its lines mutated, chosen by `slip`.
enum class HeSlip { LeCun, Variance, FanOut, BiasesKept, OwnRng };

template <HeSlip slip>
void he_init_with(float* W, long w_count, float* b, long b_count, int fan_in, Rng& rng) {
  double sd = std::sqrt(2.0 / fan_in);
  if (slip == HeSlip::LeCun) sd = std::sqrt(1.0 / fan_in);
  if (slip == HeSlip::Variance) sd = 2.0 / fan_in;
  if (slip == HeSlip::FanOut) sd = std::sqrt(2.0 / (static_cast<double>(w_count) / fan_in));
  Rng own(1);  // OwnRng: a generator of its own, not the one passed in
  (slip == HeSlip::OwnRng ? own : rng).fill_normal(W, static_cast<std::size_t>(w_count), sd);
  if (slip != HeSlip::BiasesKept) std::fill(b, b + b_count, 0.f);
}

// ---- Task 1.6: SGD with momentum -------------------------------------------------------------

void sgd_w_before_v(double* w, const double* g, double* v, long n, double lr, double momentum) {
  for (long i = 0; i < n; ++i) {
    w[i] -= lr * v[i];  // slip: after v's update
    v[i] = momentum * v[i] + g[i];
  }
}

void sgd_lr_inside_v(double* w, const double* g, double* v, long n, double lr, double momentum) {
  for (long i = 0; i < n; ++i) {
    v[i] = momentum * v[i] + lr * g[i];  // slip: lr belongs in w's update
    w[i] -= v[i];
  }
}

void sgd_ascent(double* w, const double* g, double* v, long n, double lr, double momentum) {
  for (long i = 0; i < n; ++i) {
    v[i] = momentum * v[i] + g[i];
    w[i] += lr * v[i];  // slip: -=
  }
}

void sgd_without_lr(double* w, const double* g, double* v, long n, double, double momentum) {
  for (long i = 0; i < n; ++i) {
    v[i] = momentum * v[i] + g[i];
    w[i] -= v[i];  // slip: lr * v[i]
  }
}

void sgd_dampened(double* w, const double* g, double* v, long n, double lr, double momentum) {
  for (long i = 0; i < n; ++i) {
    v[i] = momentum * v[i] + (1 - momentum) * g[i];  // slip: + g[i]
    w[i] -= lr * v[i];
  }
}

}  // namespace

TEST(Stage01_Slips, EveryListedSlipIsNamed) {
  testkit::expect_every_slip_named(
      "01",
      {
          {"dense_W_transposed", [] { check_dense_forward([](auto... a) { dense_W_read_as_in_by_out(a...); }); }},
          {"dense_no_bias", [] { check_dense_forward([](auto... a) { dense_without_bias(a...); }); }},
          {"dense_bias_by_n", [] { check_dense_forward([](auto... a) { dense_bias_by_example(a...); }); }},
          {"relu_mask_inverted", [] { check_activations(ReluMaskInverted{}); }},
          {"relu_mask_at_zero", [] { check_activations(ReluMaskAtZero{}); }},
          {"relu_mask_missing", [] { check_activations(ReluMaskMissing{}); }},
          {"sigmoid_grad_of_x", [] { check_activations(SigmoidDerivativeOfX{}); }},
          {"tanh_grad_of_x", [] { check_activations(TanhDerivativeOfX{}); }},
          {"grad_without_dy", [] { check_activations(TanhDerivativeWithoutDy{}); }},
          {"leaky_default_slope", [] { check_activations(LeakyDefaultSlope{}); }},
          {"softplus_overflows", [] { check_activations(SoftplusNaive{}); }},
          {"sigmoid_exponent_sign", [] { check_activations(SigmoidExponentSign{}); }},
          {"softmax_no_max", [] { check_losses(SoftmaxWithoutMax{}); }},
          {"xent_minus_log_p", [] { check_losses(LossAsMinusLogP{}); }},
          {"xent_summed", [] { check_losses(LossSummed{}); }},
          {"xent_grad_no_label", [] { check_losses(GradientWithoutLabel{}); }},
          {"xent_grad_not_divided", [] { check_losses(GradientNotDivided{}); }},
          {"mse_over_rows", [] { check_losses(MseOverRows{}); }},
          {"dW_transposed", [] { plant_dense_backward(dense_backward_with<BackwardSlip::DWTransposed>); }},
          {"db_overwritten", [] { plant_dense_backward(dense_backward_with<BackwardSlip::DbOverwritten>); }},
          {"dW_overwritten", [] { plant_dense_backward(dense_backward_with<BackwardSlip::DWOverwritten>); }},
          {"dx_W_not_transposed", [] { plant_dense_backward(dense_backward_with<BackwardSlip::DxWithW>); }},
          {"backward_not_zeroed", [] { plant_dense_backward(dense_backward_with<BackwardSlip::NotZeroed>); }},
          {"he_lecun", [] { check_he_init(he_init_with<HeSlip::LeCun>); }},
          {"he_variance", [] { check_he_init(he_init_with<HeSlip::Variance>); }},
          {"he_fan_out", [] { check_he_init(he_init_with<HeSlip::FanOut>); }},
          {"he_biases_kept", [] { check_he_init(he_init_with<HeSlip::BiasesKept>); }},
          {"he_own_rng", [] { check_he_init(he_init_with<HeSlip::OwnRng>); }},
          {"sgd_w_before_v", [] { check_sgd(sgd_w_before_v); }},
          {"sgd_lr_inside_v", [] { check_sgd(sgd_lr_inside_v); }},
          {"sgd_ascent", [] { check_sgd(sgd_ascent); }},
          {"sgd_no_lr", [] { check_sgd(sgd_without_lr); }},
          {"sgd_dampened", [] { check_sgd(sgd_dampened); }},
      });
}
