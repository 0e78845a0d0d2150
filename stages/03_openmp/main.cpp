// Stage 03 trainer: CNNs and the MLP on every CPU core, with OpenMP.
//
//   s03_train_exercise --model cnn --epochs 5                    (your code, from exercises/)
//   s03_train_solution --model cnn --threads 8 --parallel data   (the reference, from solutions/)
//   s03_train_solution --model mlp --parallel loops --profile
//
// --threads N (0, the default, = every core) and --parallel data|loops pick
// the strategy; stage 02's layers run unchanged inside either.
#include <string>

#include "02_conv_pool/cnn.hpp"
#include "03_openmp/omp_engine.hpp"
#include "03_openmp/trainer_options.hpp"
#include "common/train/trainer.hpp"

int main(int argc, char** argv) {
  const course::StageInfo stage{"03_openmp", "Stage 03: data-parallel and loop-level training with OpenMP, every CPU core",
                                /*has_threads=*/true};
  std::string parallel = "data";
  return course::run_trainer(
      argc, argv, stage,
      [&parallel](const course::EngineConfig& cfg) {
        return course::make_omp_engine(cfg, course::parse_parallelism(parallel), course::make_cnn_layer<float>);
      },
      [&parallel](CLI::App& app) { course::add_parallel_option(app, parallel); });
}
