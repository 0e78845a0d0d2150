// Stage 02 trainer: CNNs (and the MLP) on one CPU thread.
//
//   s02_train_exercise --model cnn --epochs 15        (your code, from exercises/)
//   s02_train_solution --model cnn-deep --profile     (the reference, from solutions/)
//   s02_train_solution --arch conv8k5p2,relu,pool2,flatten,fc10
//   s02_train_solution --model cnn --dataset cifar10  (3x32x32 input)
//
// Stage 01's engine, network and training loop run unchanged; the layer
// factory make_cnn_layer adds convolution, max-pooling and flatten.
#include "01_fc_softmax/cpu_engine.hpp"
#include "02_conv_pool/cnn.hpp"
#include "common/train/trainer.hpp"

int main(int argc, char** argv) {
  const course::StageInfo stage{"02_conv_pool", "Stage 02: convolution and max-pooling, one CPU thread"};
  return course::run_trainer(argc, argv, stage, [](const course::EngineConfig& cfg) {
    return std::make_unique<course::CpuEngine>(cfg, course::make_cnn_layer<float>);
  });
}
