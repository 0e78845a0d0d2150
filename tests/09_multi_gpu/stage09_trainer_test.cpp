// The stage 09 trainer as a learner runs it: alone, through its launcher, on
// two GPUs (skipped, saying so, with fewer), with a rank that dies, and
// resumed from a checkpoint on another number of GPUs.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "02_conv_pool/cnn.hpp"
#include "06_cudnn/cudnn_step.hpp"
#include "common/gpu/gpu_engine.hpp"
#include "common/multi_gpu/rendezvous.hpp"
#include "cnn_comparison.hpp"
#include "common/data/data.hpp"
#include "common/data/load_data.hpp"
#include "common/model/model_file.hpp"
#include "common/train/trainer.hpp"
#include "s09_support.hpp"

using namespace course;
using namespace course::s09test;

namespace {

#define EXPECT_CONTAINS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (text) << "' lacks '" << (part) << "'"

// The data of every run here: the built-in synthetic set, `limit` training images.
std::vector<std::string> data_args(long limit) {
  return {"--dataset", "synthetic", "--limit", std::to_string(limit), "--no-progress"};
}

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Expects a successful run; returns it.
Finished expect_ok(const Finished& f, const std::string& what) {
  EXPECT_EQ(f.exit_code, 0) << what << " failed:\n" << f.out << f.err;
  EXPECT_FALSE(f.timed_out) << what << " timed out";
  return f;
}

// The comparison of runs that add in another order (the 20-step tests of stages 05 and 06).
constexpr double kParamAtol = 5e-4, kParamRtol = 1e-3;

void expect_close_models(const fs::path& got_file, const fs::path& want_file, const std::string& what) {
  const std::vector<float> got = model_values(got_file), want = model_values(want_file);
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t worst = 0;
  double worst_ratio = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double ratio = std::fabs(got[i] - want[i]) / (kParamAtol + kParamRtol * std::fabs(want[i]));
    if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = i;
  }
  EXPECT_LE(worst_ratio, 1.0) << what << ": value " << worst << " is " << got[worst] << ", expected " << want[worst]
                              << " (|diff| " << std::fabs(got[worst] - want[worst]) << ", limit " << kParamAtol
                              << " + " << kParamRtol << " |want|)";
}

// The global batch and the start of the two-GPU comparison: 20 steps of 128 from
// weights spread away from ReLU's kinks, at lr 0.01 (stage 06's comparison, and
// why: tests/support/cnn_comparison.hpp).
constexpr int kGlobalBatch = 128;
constexpr long kTwentySteps = 20 * kGlobalBatch;

EngineConfig comparison_config() {
  EngineConfig cfg;
  cfg.arch = parse_arch(named_model_spec("cnn"));
  cfg.input = {1, 28, 28};
  cfg.classes = 10;
  cfg.batch = kGlobalBatch;
  cfg.lr = 0.01;
  cfg.momentum = 0.9;
  cfg.seed = 42;  // the trainer's default
  return cfg;
}

std::vector<NamedTensor> spread_start(const EngineConfig& cfg) {
  return testkit::spread_parameters(initial_parameters(cfg.arch, cfg.input, cfg.classes, cfg.seed, make_cnn_layer<float>),
                                    99);
}

// Writes the spread start as a model file the trainer can --load.
fs::path save_spread_start(const fs::path& dir) {
  const EngineConfig cfg = comparison_config();
  ModelFile m;
  m.arch = cfg.arch.spec();
  m.input = cfg.input;
  m.classes = cfg.classes;
  m.stage = "tests";
  m.tensors = spread_start(cfg);
  const fs::path file = dir / "spread_start.bin";
  save_model(file.string(), m);
  return file;
}

}  // namespace

// ---- without several GPUs -------------------------------------------------------

// On a machine with fewer than two GPUs, --gpus 2 stops with one line saying why.
// (A suite of its own: CTest counts a suite with a skipped test as skipped.)
TEST(Stage09_TooFewGpus, Gpus2SaysWhyItCannotRun) {
  const int gpus = gpu_count();
  if (gpus >= 2) GTEST_SKIP() << "CUDA shows " << gpus << " GPUs here: --gpus 2 can run";
  const fs::path dir = fresh_dir();
  const Finished f = run_trainer_binary(dir, "gpus2", std::vector<std::string>{"--gpus", "2"} + data_args(256), 120);
  if (gpus == 0) {
    EXPECT_EQ(f.exit_code, kExitError) << f.err;
    EXPECT_CONTAINS(f.err, "stage 09 trains on CUDA GPUs, and there is none");
  } else {
    EXPECT_EQ(f.exit_code, kExitUsage) << f.err;
    EXPECT_CONTAINS(f.err, "--gpus 2: a GPU per rank is needed, and rank 1 has none");
  }
}

// --step names the step model of every rank; another name stops the run with the list.
TEST(Stage09_StepFlag, AnUnknownStepIsAUsageErrorNamingTheSteps) {
  const fs::path dir = fresh_dir();
  const Finished f = run_trainer_binary(dir, "nostep", std::vector<std::string>{"--step", "winograd"} + data_args(256), 120);
  EXPECT_EQ(f.exit_code, kExitUsage) << f.err;
  EXPECT_CONTAINS(f.err, "unknown step 'winograd': stage 09 runs fused, cudnn, im2col, fast-gemm");
}

// ---- one GPU ----------------------------------------------------------------------------

// The MLP on stage 06's step (cuBLAS only: the same kernels in every process) trained
// alone, through the launcher with one rank, and by the one GPU engine: the same bits.
TEST(Stage09_Trainer, AloneThroughTheLauncherAndStage06GiveTheSameBits) {
  S09_SKIP_WITHOUT_GPUS(1);
  const fs::path dir = fresh_dir();
  const std::vector<std::string> common =
      std::vector<std::string>{"--model", "mlp", "--epochs", "2", "--batch", "64", "--step", "cudnn"} + data_args(1000);
  const Finished alone = expect_ok(
      run_trainer_binary(dir, "alone", common + std::vector<std::string>{"--save", (dir / "alone.bin").string(),
                                                                          "--json", (dir / "alone.json").string()}),
      "alone");
  const Finished spawned =
      expect_ok(run_trainer_binary(dir, "spawned", common + std::vector<std::string>{"--gpus", "1", "--spawn", "--save",
                                                                                    (dir / "spawned.bin").string()}),
                "--gpus 1 --spawn");
  EXPECT_CONTAINS(spawned.out, "launcher: 1 rank, one process per GPU");
  EXPECT_CONTAINS(alone.out, "ranks: 1 (this process alone)");
  EXPECT_EQ(differing_values(model_values(dir / "spawned.bin"), model_values(dir / "alone.bin")), 0u)
      << "the launcher's rank and the process alone disagree";

  // Stage 06's engine on the same data, the same schedule, in this process.
  DataOptions data;
  data.dataset = "synthetic";
  data.limit = 1000;
  const DataSplit split = load_data(data);
  EngineConfig cfg;
  cfg.arch = parse_arch(named_model_spec("mlp"));
  cfg.input = split.train.shape;
  cfg.classes = split.train.classes;
  cfg.batch = 64;
  cfg.lr = 0.02;
  GpuEngine reference(cfg, std::make_unique<CudnnStep>(cfg), {}, GpuEngineOptions{true});
  for (int e = 0; e < 2; ++e) {
    reference.set_learning_rate(scheduled_learning_rate(cfg.lr, "cosine", e, 2));
    reference.train_epoch(split.train, e, {});
  }
  std::vector<float> want;
  for (const NamedTensor& t : reference.get_parameters()) want.insert(want.end(), t.tensor.data.begin(), t.tensor.data.end());
  EXPECT_EQ(differing_values(model_values(dir / "alone.bin"), want), 0u) << "stage 09 alone is not stage 06";

  const nlohmann::json j = nlohmann::json::parse(slurp(dir / "alone.json"));
  EXPECT_EQ(j.at("stage_results").at("ranks"), 1);
  EXPECT_EQ(j.at("status"), "ok");
}

// Every step model stage 09 links trains in a rank, and the run says which one.
TEST(Stage09_Trainer, EveryStepTrainsAlone) {
  S09_SKIP_WITHOUT_GPUS(1);
  const fs::path dir = fresh_dir();
  for (const std::string step : {"fused", "cudnn", "im2col", "fast-gemm"}) {
    const Finished f = expect_ok(
        run_trainer_binary(dir, step, std::vector<std::string>{"--model", "cnn", "--epochs", "1", "--step", step} +
                                          data_args(512)),
        "--step " + step);
    EXPECT_CONTAINS(f.out, "step: " + step + " (");
  }
}

// The default step is stage 08's fused one: a spec it does not fuse stops the run (a usage
// error naming the layer, and the step that runs any spec), which --step cudnn then trains.
TEST(Stage09_Trainer, ASpecTheFusedStepCannotRunNamesTheStepThatCan) {
  S09_SKIP_WITHOUT_GPUS(1);
  const fs::path dir = fresh_dir();
  const std::vector<std::string> strided =
      std::vector<std::string>{"--arch", "conv8k3p1s2,relu,pool2,fc10", "--epochs", "1"} + data_args(256);
  const Finished refused = run_trainer_binary(dir, "unfused", strided, 120);
  EXPECT_EQ(refused.exit_code, kExitUsage) << refused.err;
  EXPECT_CONTAINS(refused.err, "layer 1 'conv8k3p1s2'");
  EXPECT_CONTAINS(refused.err, "--step cudnn runs any spec");
  expect_ok(run_trainer_binary(dir, "cudnn", strided + std::vector<std::string>{"--step", "cudnn"}), "--step cudnn");
}

TEST(Stage09_Trainer, AResumedRunContinuesBitForBit) {
  S09_SKIP_WITHOUT_GPUS(1);
  const fs::path dir = fresh_dir();
  const std::vector<std::string> common =
      std::vector<std::string>{"--model", "mlp", "--batch", "64", "--lr-schedule", "constant"} + data_args(1000);
  const std::string ckpt = (dir / "run.ckpt").string();
  expect_ok(run_trainer_binary(dir, "straight", common + std::vector<std::string>{"--epochs", "2", "--save",
                                                                                 (dir / "straight.bin").string()}),
            "two epochs");
  expect_ok(run_trainer_binary(dir, "first", common + std::vector<std::string>{"--epochs", "1", "--checkpoint-every",
                                                                              "1", "--checkpoint", ckpt}),
            "the first epoch");
  expect_ok(run_trainer_binary(dir, "resumed", common + std::vector<std::string>{"--epochs", "2", "--resume", ckpt,
                                                                                "--save", (dir / "resumed.bin").string()}),
            "the resumed run");
  EXPECT_EQ(differing_values(model_values(dir / "resumed.bin"), model_values(dir / "straight.bin")), 0u);
}

TEST(Stage09_Trainer, ProfileShowsTheAllReduce) {
  S09_SKIP_WITHOUT_GPUS(1);
  const fs::path dir = fresh_dir();
  const Finished f = expect_ok(
      run_trainer_binary(dir, "profile",
                         std::vector<std::string>{"--model", "cnn", "--epochs", "1", "--profile", "--step", "cudnn"} +
                             data_args(640)),
      "--profile");
  EXPECT_CONTAINS(f.out, "all-reduce, bucket 1: fc2-fc1");
  EXPECT_CONTAINS(f.out, "wait for the all-reduce");
  EXPECT_CONTAINS(f.out, "NCCL_NVLS_ENABLE=0");
}

// ---- two GPUs ----------------------------------------------------------------------------

// What the two-GPU comparison relies on, checked on the CPU: its 20 steps do not
// branch when the weights move by 1e-6 (cnn_comparison.hpp). Runs everywhere.
TEST(Stage09_CpuPremise, TwentyStepComparisonDoesNotBranch) {
  DataOptions data;
  data.dataset = "synthetic";
  data.limit = kTwentySteps;
  const DataSplit split = load_data(data);
  const EngineConfig cfg = comparison_config();
  testkit::expect_training_does_not_branch(cfg, split.train, spread_start(cfg), kParamAtol, kParamRtol);
}

// 2 GPUs x 64 examples against 1 GPU x 128, 20 steps: the same parameters, within
// the tolerance of two summation orders, with every schedule; and with two ranks the
// peer sum adds the same two rounded products as NCCL: the same bits as flat.
TEST(Stage09_Trainer, TwoGpusComputeWhatOneComputesWithTheGlobalBatch) {
  S09_SKIP_WITHOUT_GPUS(2);
  const fs::path dir = fresh_dir();
  const std::vector<std::string> common =
      std::vector<std::string>{"--model", "cnn", "--epochs", "1", "--batch", std::to_string(kGlobalBatch), "--lr",
                               "0.01", "--lr-schedule", "constant", "--load", save_spread_start(dir).string()} +
      data_args(kTwentySteps);
  for (const std::string allreduce : {"buckets", "flat", "peer"}) {
    SCOPED_TRACE(allreduce);
    const Finished one = expect_ok(
        run_trainer_binary(dir, "one_" + allreduce,
                           common + std::vector<std::string>{"--gpus", "1", "--allreduce", allreduce, "--save",
                                                             (dir / ("one_" + allreduce + ".bin")).string()}),
        "1 GPU");
    const Finished two = expect_ok(
        run_trainer_binary(dir, "two_" + allreduce,
                           common + std::vector<std::string>{"--gpus", "2", "--allreduce", allreduce, "--save",
                                                             (dir / ("two_" + allreduce + ".bin")).string()}),
        "2 GPUs");
    EXPECT_CONTAINS(two.out, "global batch 128 = 64 + 64");
    expect_close_models(dir / ("two_" + allreduce + ".bin"), dir / ("one_" + allreduce + ".bin"),
                        "2 GPUs x 64 against 1 GPU x 128");
    const std::vector<float> start = model_values(dir / "spread_start.bin"),
                             trained = model_values(dir / ("one_" + allreduce + ".bin"));
    std::size_t moved = 0;
    for (std::size_t i = 0; i < start.size(); ++i) moved += std::fabs(trained[i] - start[i]) > 10 * kParamAtol;
    EXPECT_GT(moved, 0u) << "the parameters hardly moved, so the comparison proves little";
  }
  const std::vector<float> peer = model_values(dir / "two_peer.bin"), flat = model_values(dir / "two_flat.bin");
  ASSERT_EQ(peer.size(), flat.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < peer.size(); ++i) differ += std::memcmp(&peer[i], &flat[i], sizeof(float)) != 0;
  EXPECT_EQ(differ, 0u) << "of " << peer.size() << " parameters differ between --allreduce peer and flat on 2 GPUs";
}

// As on two hosts: NCCL's socket transport (its peer-to-peer and shared-memory transports off), the
// ranks started by torchrun's variables, by srun's, and by srun's with a GPU a task, NCCL's id handed
// from rank 0 over TCP. Two ranks add a + b alike in either order, so the weights are the NVLink run's bits.
TEST(Stage09_Trainer, OverSocketsStartedByTorchrunOrSrunItTrainsTheNvlinkRunsBits) {
  S09_SKIP_WITHOUT_GPUS(2);
  const fs::path dir = fresh_dir();
  const std::vector<std::string> common =
      std::vector<std::string>{"--model", "cnn", "--epochs", "1", "--batch", std::to_string(kGlobalBatch),
                               "--allreduce", "buckets", "--lr-schedule", "constant"} +
      data_args(kTwentySteps);
  expect_ok(run_trainer_binary(dir, "nvlink", common + std::vector<std::string>{"--gpus", "2", "--save",
                                                                                (dir / "nvlink.bin").string()}),
            "the NVLink run");
  const std::vector<float> nvlink = model_values(dir / "nvlink.bin");
  int port = 0;
  {
    const UniqueIdServer probe(0);  // a port free a moment ago, for rank 0 to listen on
    port = probe.port();
  }
  using Env = std::vector<std::pair<std::string, std::string>>;
  const std::vector<std::pair<std::string, std::function<Env(int)>>> launchers = {
      {"torchrun's variables",
       [&](int r) {
         return Env{{"RANK", std::to_string(r)}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", std::to_string(r)},
                    {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)}};
       }},
      {"srun (Slurm)",
       [&](int r) {
         return Env{{"SLURM_PROCID", std::to_string(r)}, {"SLURM_STEP_NUM_TASKS", "2"},
                    {"SLURM_LOCALID", std::to_string(r)}, {"SLURM_STEP_ID", "0"}, {"SLURM_JOB_ID", "77"},
                    {"SLURM_STEP_NODELIST", "localhost"}, {"MASTER_PORT", std::to_string(port + 1)}};
       }},
      {"srun (Slurm), a GPU a task", [&](int r) {
         return Env{{"SLURM_PROCID", std::to_string(r)}, {"SLURM_STEP_NUM_TASKS", "2"},
                    {"SLURM_LOCALID", std::to_string(r)}, {"SLURM_STEP_ID", "1"}, {"SLURM_JOB_ID", "77"},
                    {"SLURM_STEP_NODELIST", "localhost"}, {"MASTER_PORT", std::to_string(port + 2)},
                    {"CUDA_VISIBLE_DEVICES", std::to_string(r)}};
       }}};
  for (const auto& [by, env_of] : launchers) {
    SCOPED_TRACE(by);
    std::vector<std::unique_ptr<TrainerProcess>> ranks;
    for (int r = 0; r < 2; ++r) {
      Env env = env_of(r);
      env.insert(env.end(), {{"NCCL_P2P_DISABLE", "1"}, {"NCCL_SHM_DISABLE", "1"}, {"NCCL_IB_DISABLE", "1"},
                             {"NCCL_DEBUG", "INFO"}, {"NCCL_DEBUG_SUBSYS", "INIT,NET"}});
      std::vector<std::string> args = common;
      if (r == 0) args = args + std::vector<std::string>{"--save", (dir / "sockets.bin").string()};
      ranks.push_back(std::make_unique<TrainerProcess>(dir, "sockets_rank" + std::to_string(r), args, env));
    }
    expect_ok(ranks[1]->wait(120), "rank 1");
    const Finished zero = expect_ok(ranks[0]->wait(120), "rank 0");
    EXPECT_CONTAINS(zero.out, "started by " + by.substr(0, by.find(", a GPU")));
    EXPECT_CONTAINS(zero.out + zero.err, "NET/Socket") << "NCCL did not say it used its socket transport";
    const std::vector<float> sockets = model_values(dir / "sockets.bin");
    EXPECT_EQ(differing_values(sockets, nvlink), 0u) << first_difference(sockets, nvlink);
  }
}

// Without --allreduce the run takes the fastest schedule that can run: the peer sum where the two
// GPUs reach each other's memory, else the buckets; its first lines say which.
TEST(Stage09_Trainer, TheDefaultScheduleIsThePeerSumWhereTheGpusReachEachOther) {
  S09_SKIP_WITHOUT_GPUS(2);
  int reach01 = 0, reach10 = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&reach01, 0, 1), cudaSuccess);
  ASSERT_EQ(cudaDeviceCanAccessPeer(&reach10, 1, 0), cudaSuccess);
  const fs::path dir = fresh_dir();
  const Finished two = expect_ok(
      run_trainer_binary(dir, "default", std::vector<std::string>{"--model", "cnn", "--epochs", "1", "--gpus", "2",
                                                                  "--batch", "128"} + data_args(kTwentySteps)),
      "2 GPUs, the default schedule");
  EXPECT_CONTAINS(two.out, reach01 && reach10 ? "all-reduce: peer, one kernel" : "bucket(s) of at least");
}

TEST(Stage09_Trainer, WhenARankDiesTheLauncherStopsTheOthers) {
  S09_SKIP_WITHOUT_GPUS(2);
  const fs::path dir = fresh_dir();
  const Finished f = run_trainer_binary(
      dir, "dies", std::vector<std::string>{"--gpus", "2", "--model", "cnn", "--epochs", "5"} + data_args(8000), 120,
      {{"COURSE_TEST_KILL_RANK_AT_STEP", "1:5"}});
  EXPECT_FALSE(f.timed_out) << "the run hung after rank 1 died";
  EXPECT_EQ(f.exit_code, 128 + SIGKILL) << f.err;
  EXPECT_CONTAINS(f.err, "launcher: rank 1 was killed by signal 9 (SIGKILL); stopping the other ranks");
  EXPECT_LT(f.seconds, 60.0);
}

// Ranks started without the launcher (as mpirun or a person would): when rank 1
// dies, rank 0's watchdog stops it with a message once --nccl-timeout passes,
// whether it waits in NCCL or in the peer sum's kernel.
TEST(Stage09_Trainer, WithoutTheLauncherTheWatchdogStopsTheRankLeft) {
  S09_SKIP_WITHOUT_GPUS(2);
  for (const std::string allreduce : {"buckets", "peer"}) {
    SCOPED_TRACE(allreduce);
    const fs::path dir = fresh_dir();
    const std::vector<std::string> args =
        std::vector<std::string>{"--model", "cnn", "--epochs", "5", "--nccl-timeout", "10", "--allreduce", allreduce} +
        data_args(8000);
    std::vector<std::unique_ptr<TrainerProcess>> ranks;
    for (int r = 0; r < 2; ++r)
      ranks.push_back(std::make_unique<TrainerProcess>(
          dir, "rank" + std::to_string(r), args,
          std::vector<std::pair<std::string, std::string>>{{"COURSE_RANK", std::to_string(r)},
                                                           {"COURSE_WORLD_SIZE", "2"},
                                                           {"COURSE_LOCAL_RANK", std::to_string(r)},
                                                           {"COURSE_NCCL_ID_FILE", (dir / "nccl-id").string()},
                                                           {"COURSE_TEST_KILL_RANK_AT_STEP", "1:5"}}));
    const Finished dead = ranks[1]->wait(120);
    EXPECT_EQ(dead.exit_code, 128 + SIGKILL) << dead.err;
    const Finished left = ranks[0]->wait(120);
    EXPECT_FALSE(left.timed_out) << "rank 0 hung";
    EXPECT_EQ(left.exit_code, kExitError) << left.err;
    EXPECT_CONTAINS(left.err, "rank 0 of 2: error: ");
    EXPECT_LT(left.seconds, 90.0);
  }
}

// A checkpoint written by rank 0 of a two-GPU run resumes on two GPUs to the same
// bits as a run never stopped, and on one GPU to the same parameters within
// the tolerance of another summation order (the MLP: one kernel choice per process).
TEST(Stage09_Trainer, ACheckpointOfTwoGpusResumesOnTwoOrOne) {
  S09_SKIP_WITHOUT_GPUS(2);
  const fs::path dir = fresh_dir();
  const std::vector<std::string> common = std::vector<std::string>{
      "--model", "mlp", "--batch", std::to_string(kGlobalBatch), "--lr-schedule", "constant"} + data_args(kTwentySteps);
  const std::string ckpt = (dir / "two.ckpt").string();
  expect_ok(run_trainer_binary(dir, "straight", common + std::vector<std::string>{"--gpus", "2", "--epochs", "2",
                                                                                 "--save", (dir / "straight.bin").string()}),
            "two GPUs, two epochs");
  expect_ok(run_trainer_binary(dir, "first", common + std::vector<std::string>{"--gpus", "2", "--epochs", "1",
                                                                              "--checkpoint-every", "1", "--checkpoint",
                                                                              ckpt}),
            "two GPUs, the first epoch");
  ASSERT_TRUE(fs::exists(ckpt)) << "rank 0 wrote no checkpoint";
  const std::string ckpt_copy = (dir / "copy.ckpt").string();
  fs::copy_file(ckpt, ckpt_copy);  // a resumed run writes its checkpoint over the one it read
  expect_ok(run_trainer_binary(dir, "on_two", common + std::vector<std::string>{"--gpus", "2", "--epochs", "2",
                                                                               "--resume", ckpt, "--save",
                                                                               (dir / "on_two.bin").string()}),
            "resumed on two GPUs");
  expect_ok(run_trainer_binary(dir, "on_one", common + std::vector<std::string>{"--gpus", "1", "--epochs", "2",
                                                                               "--resume", ckpt_copy, "--save",
                                                                               (dir / "on_one.bin").string()}),
            "resumed on one GPU");
  EXPECT_EQ(differing_values(model_values(dir / "on_two.bin"), model_values(dir / "straight.bin")), 0u);
  expect_close_models(dir / "on_one.bin", dir / "straight.bin", "resumed on one GPU");
}
