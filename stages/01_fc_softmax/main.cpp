// Stage 01 trainer: an MLP on one CPU thread.
//
//   s01_train_exercise --model mlp --epochs 10        (your code, from exercises/)
//   s01_train_solution --layers 784,256:tanh,128,10   (the reference, from solutions/)
#include "01_fc_softmax/cpu_engine.hpp"
#include "common/train/trainer.hpp"

int main(int argc, char** argv) {
  // Dense layers only: --help offers no CNN, and a CNN's model file is refused as one.
  const course::StageInfo stage{"01_fc_softmax", "dense layers and softmax cross-entropy, one CPU thread",
                                /*has_threads=*/false, /*dense_only=*/true};
  return course::run_trainer(argc, argv, stage, [](const course::EngineConfig& cfg) {
    return std::make_unique<course::CpuEngine>(cfg);
  });
}
