// Stage 09 without a GPU: how a process learns its place, the unique id through
// a file, the launcher (its arguments, its errors, its children), the trainer's
// own flags, and when the watchdog calls a rank stuck.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "common/multi_gpu/bootstrap.hpp"
#include "common/multi_gpu/launcher.hpp"
#include "common/multi_gpu/multi_gpu_options.hpp"
#include "common/multi_gpu/watchdog.hpp"
#include "common/train/cli.hpp"
#include "common/train/trainer.hpp"
#include "expect_contains.hpp"
#include "s09_support.hpp"

using namespace course;
using namespace course::s09test;

namespace {

std::string launch_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const LaunchError& e) {
    return e.what();
  }
  return "(no LaunchError)";
}

// A unique id of made-up bytes (every value of a byte, zeros included).
std::string fake_unique_id(int seed) {
  std::string id(kUniqueIdBytes, '\0');
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>((i * 7 + static_cast<std::size_t>(seed)) % 256);
  return id;
}

}  // namespace

// ---- the place of a process ------------------------------------------------------

TEST(Stage09_Bootstrap, ThePlaceComesFromTheLaunchersVariablesOrFromOpenMpis) {
  EXPECT_FALSE(rank_place_from_env(table({})).has_value()) << "a process started by a person";
  // Slurm's and torchrun's variables: stage09_cluster_test.cpp.

  auto p = rank_place_from_env(table({{"COURSE_RANK", "1"}, {"COURSE_WORLD_SIZE", "4"}, {"COURSE_LOCAL_RANK", "1"},
                                      {"COURSE_NCCL_ID_FILE", "/tmp/x/nccl-id"}}));
  expect_place(p, 1, 4, 1, "this trainer's launcher");
  EXPECT_EQ(p->id_file, "/tmp/x/nccl-id");

  p = rank_place_from_env(table({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  expect_place(p, 5, 8, 1, "mpirun (Open MPI)");  // rank 5 of 8 on a host of 4 GPUs drives its GPU 1
  EXPECT_TRUE(p->id_file.empty()) << "under mpirun the id file comes from --nccl-id-file";

  p = rank_place_from_env(table({{"COURSE_RANK", "0"}, {"COURSE_WORLD_SIZE", "1"}}));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->local_rank, 0) << "without a local rank, the rank";
}

TEST(Stage09_Bootstrap, ABadPlaceIsRefusedNamingTheVariable) {
  EXPECT_CONTAINS(launch_error([] { rank_place_from_env(table({{"COURSE_RANK", "1"}})); }), "COURSE_WORLD_SIZE");
  EXPECT_CONTAINS(launch_error([] { rank_place_from_env(table({{"COURSE_RANK", "x"}, {"COURSE_WORLD_SIZE", "2"}})); }),
                  "COURSE_RANK='x'");
  EXPECT_CONTAINS(launch_error([] { rank_place_from_env(table({{"COURSE_RANK", "-1"}, {"COURSE_WORLD_SIZE", "2"}})); }),
                  "not a whole number");
  EXPECT_CONTAINS(launch_error([] { rank_place_from_env(table({{"COURSE_RANK", "2"}, {"COURSE_WORLD_SIZE", "2"}})); }),
                  "ranks are 0 to 1");
  EXPECT_CONTAINS(launch_error([] { rank_place_from_env(table({{"COURSE_RANK", "0"}, {"COURSE_WORLD_SIZE", "0"}})); }),
                  "COURSE_WORLD_SIZE=0");
  EXPECT_CONTAINS(launch_error([] {
                    rank_place_from_env(table({{"OMPI_COMM_WORLD_SIZE", "2"}}));
                  }),
                  "OMPI_COMM_WORLD_RANK is not set");
}

// ---- the unique id through a file -----------------------------------------------------

TEST(Stage09_Bootstrap, TheIdTravelsThroughAFileToEveryRank) {
  const fs::path dir = fresh_dir();
  const std::string path = (dir / "nccl-id").string();
  const std::string id = fake_unique_id(3);
  std::string got1, got2;
  // The readers start first and wait; rank 0 publishes a little later.
  std::thread reader1([&] { got1 = wait_for_unique_id(path, 3, 1, 10); });
  std::thread reader2([&] { got2 = wait_for_unique_id(path, 3, 2, 10); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  publish_unique_id(path, id, 3);
  reader1.join();
  reader2.join();
  EXPECT_EQ(got1, id);
  EXPECT_EQ(got2, id);
  EXPECT_FALSE(fs::exists(path + ".tmp." + std::to_string(::getpid()))) << "the temporary name is gone";
}

TEST(Stage09_Bootstrap, AnIdFileLeftBehindIsRefused) {
  const fs::path dir = fresh_dir();
  const std::string path = (dir / "nccl-id").string();
  publish_unique_id(path, fake_unique_id(1), 2);
  EXPECT_CONTAINS(launch_error([&] { publish_unique_id(path, fake_unique_id(2), 2); }), "exists already");
  EXPECT_EQ(wait_for_unique_id(path, 2, 1, 1), fake_unique_id(1)) << "the first id stays";
  try {
    wait_for_unique_id(path, 4, 1, 1);
    ADD_FAILURE() << "an id file of a world of 2 accepted by a world of 4";
  } catch (const std::runtime_error& e) {
    EXPECT_CONTAINS(e.what(), "left from another run");
  }
  std::ofstream(dir / "junk") << "not an id";
  EXPECT_THROW(wait_for_unique_id((dir / "junk").string(), 2, 1, 1), std::runtime_error);
  EXPECT_THROW(publish_unique_id((dir / "short").string(), "too short", 2), std::invalid_argument);
  EXPECT_THROW(publish_unique_id((dir / "no-such-folder" / "id").string(), fake_unique_id(0), 2), std::runtime_error);
}

TEST(Stage09_Bootstrap, ARankGivesUpWhenNoIdComes) {
  const fs::path dir = fresh_dir();
  const auto start = std::chrono::steady_clock::now();
  try {
    wait_for_unique_id((dir / "never").string(), 2, 1, 0.5);
    ADD_FAILURE() << "waited for an id that never came, and returned";
  } catch (const std::runtime_error& e) {
    EXPECT_CONTAINS(e.what(), "rank 1: no NCCL id appeared in");
    EXPECT_CONTAINS(e.what(), "--nccl-id-file");
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
}

// ---- the launcher ---------------------------------------------------------------------

namespace {

/// `ranks` processes of /bin/sh, each running `script`: enough to be a rank that writes where it
/// is ($COURSE_RANK, ...), fails, ignores SIGTERM or ends as an interrupted run does.
LaunchRequest shell_ranks(int ranks, const std::string& script) {
  LaunchRequest request;
  request.ranks = ranks;
  request.program = "/bin/sh";
  request.args = {"sh", "-c", script};
  return request;
}

}  // namespace

TEST(Stage09_Launcher, FewerGpusThanAskedIsAnErrorNamingTheFlag) {
  EXPECT_NO_THROW(check_gpu_count(2, 2, nullptr));
  EXPECT_NO_THROW(check_gpu_count(1, 8, "0"));
  const std::string one = launch_error([] { check_gpu_count(2, 1, nullptr); });
  EXPECT_CONTAINS(one, "--gpus 2");
  EXPECT_CONTAINS(one, "rank 1 has none");
  EXPECT_CONTAINS(one, "CUDA shows 1 GPU here");
  EXPECT_CONTAINS(one, "CUDA_VISIBLE_DEVICES is not set");
  const std::string four = launch_error([] { check_gpu_count(4, 2, "0,1"); });
  EXPECT_CONTAINS(four, "ranks 2 to 3 have none");
  EXPECT_CONTAINS(four, "CUDA_VISIBLE_DEVICES='0,1'");
  EXPECT_CONTAINS(launch_error([] { check_gpu_count(0, 2, nullptr); }), "--gpus 0");
}

TEST(Stage09_Launcher, StartsOneProcessPerRankWithItsPlace) {
  const fs::path dir = fresh_dir();
  const LaunchRequest request = shell_ranks(
      3, "echo \"$COURSE_RANK $COURSE_WORLD_SIZE $COURSE_LOCAL_RANK $NCCL_NVLS_ENABLE $COURSE_NCCL_ID_FILE\" > " +
             (dir / "rank").string() + "$COURSE_RANK");
  std::ostringstream out, err;
  EXPECT_EQ(launch_ranks(request, out, err), 0) << err.str();
  EXPECT_CONTAINS(out.str(), "3 ranks, one process per GPU");
  std::string id_file;
  for (int r = 0; r < 3; ++r) {
    std::istringstream line(slurp(dir / ("rank" + std::to_string(r))));
    int rank = -1, world = -1, local = -1;
    std::string nvls, file;
    line >> rank >> world >> local >> nvls >> file;
    EXPECT_EQ(rank, r);
    EXPECT_EQ(world, 3);
    EXPECT_EQ(local, r);
    EXPECT_EQ(nvls, "0") << "NVLink multicast stays off in every rank";
    if (r == 0) id_file = file;
    EXPECT_EQ(file, id_file) << "every rank shares one id file";
  }
  EXPECT_FALSE(id_file.empty());
  EXPECT_FALSE(fs::exists(fs::path(id_file).parent_path())) << "the launcher removes its temporary folder";
}

TEST(Stage09_Launcher, KeepsNvlinkMulticastAsTheUserSetIt) {
  const fs::path dir = fresh_dir();
  const char* before = std::getenv("NCCL_NVLS_ENABLE");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("NCCL_NVLS_ENABLE", "1", 1);
  const LaunchRequest request = shell_ranks(1, "echo $NCCL_NVLS_ENABLE > " + (dir / "nvls").string());
  std::ostringstream out, err;
  const int code = launch_ranks(request, out, err);
  if (before != nullptr)
    ::setenv("NCCL_NVLS_ENABLE", saved.c_str(), 1);  // as it was: this process's NCCL reads it
  else
    ::unsetenv("NCCL_NVLS_ENABLE");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(slurp(dir / "nvls"), "1\n") << "a value the user set is the user's choice";
}

TEST(Stage09_Launcher, AFailedRankStopsTheOthersAndItsCodeIsTheLaunchers) {
  // Rank 1 fails at once; ranks 0 and 2 would wait a minute.
  const LaunchRequest request = shell_ranks(3, "if [ $COURSE_RANK = 1 ]; then exit 3; fi; exec sleep 60");
  std::ostringstream out, err;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(launch_ranks(request, out, err), 3);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0)
      << "the other ranks were not stopped";
  EXPECT_CONTAINS(err.str(), "rank 1 exited with code 3");
  EXPECT_CONTAINS(err.str(), "stopping the other ranks");
}

TEST(Stage09_Launcher, ARankThatIgnoresSigtermIsKilledAfterTheGrace) {
  LaunchRequest request =
      shell_ranks(2, "if [ $COURSE_RANK = 1 ]; then sleep 0.3; kill -9 $$; fi; trap '' TERM; exec sleep 60");
  request.grace_s = 1;
  std::ostringstream out, err;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(launch_ranks(request, out, err), 128 + SIGKILL);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
  EXPECT_CONTAINS(err.str(), "rank 1 was killed by signal 9 (SIGKILL)");
}

TEST(Stage09_Launcher, OrderlyEndsOfARunDoNotStopTheOthers) {
  // Both stop as an interrupted run does (exit 130), rank 0 a little later: it is not killed.
  const LaunchRequest request = shell_ranks(2, "if [ $COURSE_RANK = 0 ]; then sleep 0.5; fi; exit 130");
  std::ostringstream out, err;
  EXPECT_EQ(launch_ranks(request, out, err), kExitInterrupted);
  EXPECT_EQ(err.str(), "") << "an agreed stop is no failure";
}

TEST(Stage09_Launcher, SigtermToTheLauncherReachesEveryRank) {
  const fs::path dir = fresh_dir();
  const pid_t child = ::fork();
  if (child == 0) {
    const LaunchRequest request = shell_ranks(2, "trap 'echo got > " + (dir / "term").string() +
                                                     "$COURSE_RANK; exit 7' TERM; while true; do sleep 0.05; done");
    std::ostringstream out, err;
    ::_exit(launch_ranks(request, out, err));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(child, SIGTERM);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << describe_exit(status);
  EXPECT_EQ(slurp(dir / "term0"), "got\n");
  EXPECT_EQ(slurp(dir / "term1"), "got\n");
}

TEST(Stage09_Launcher, AProgramThatCannotStartIsReported) {
  LaunchRequest request;
  request.ranks = 2;
  request.program = "/no/such/program";
  request.args = {"program"};
  std::ostringstream out, err;
  EXPECT_EQ(launch_ranks(request, out, err), 127);
  EXPECT_CONTAINS(err.str(), "exited with code 127");
}

// ---- the trainer's own flags ---------------------------------------------------------

namespace {

// Parses a stage 09 command line the way its trainer does (only up to the flags' own checks).
std::pair<int, std::string> parse(std::vector<std::string> args, const std::optional<RankPlace>& place,
                                  MultiGpuOptions& mg) {
  args.insert(args.begin(), "s09_train");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  TrainerOptions options;
  std::ostringstream out, err;
  try {
    const auto code = parse_trainer_options(static_cast<int>(argv.size()), argv.data(),
                                            {"09_multi_gpu", "Stage 09 (test)"}, options,
                                            [&](CLI::App& app) { add_multi_gpu_options(app, mg, place); }, out, err);
    return {code.value_or(-1), err.str()};
  } catch (const GpuError& e) {  // every flag was fine: the last check is for a GPU
    return {-1, e.what()};
  }
}

}  // namespace

TEST(Stage09_Options, TheFlagsAndTheirChecks) {
  MultiGpuOptions mg;
  EXPECT_EQ(mg.allreduce, "auto") << "the default: the fastest schedule that can run";
  auto [code, err] = parse({"--gpus", "0"}, std::nullopt, mg);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_CONTAINS(err, "--gpus");
  mg = {};
  std::tie(code, err) = parse({"--allreduce", "ring"}, std::nullopt, mg);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_CONTAINS(err, "--allreduce");
  mg = {};
  std::tie(code, err) = parse({"--nccl-timeout", "0"}, std::nullopt, mg);
  EXPECT_EQ(code, kExitUsage);
  mg = {};
  std::tie(code, err) = parse({"--gpus", "4", "--allreduce", "flat", "--bucket-kib", "64", "--spawn"}, std::nullopt, mg);
  EXPECT_EQ(mg.gpus, 4);
  EXPECT_EQ(mg.allreduce, "flat");
  EXPECT_EQ(mg.bucket_kib, 64);
  EXPECT_TRUE(mg.spawn);
}

TEST(Stage09_Options, UnderMpirunTheFlagsMustAgreeWithTheRanks) {
  RankPlace mpi;
  mpi.rank = 1;
  mpi.world = 2;
  mpi.started_by = "mpirun (Open MPI)";
  MultiGpuOptions mg;
  auto [code, err] = parse({"--nccl-id-file", "/shared/id", "--gpus", "4"}, mpi, mg);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_CONTAINS(err, "--gpus");
  EXPECT_CONTAINS(err, "mpirun (Open MPI) started 2 ranks");
  mg = {};
  std::tie(code, err) = parse({}, mpi, mg);
  EXPECT_EQ(code, kExitUsage) << "no way to share the id";
  EXPECT_CONTAINS(err, "--nccl-id-file");
  mg = {};
  std::tie(code, err) = parse({"--nccl-id-file", "/shared/id", "--spawn"}, mpi, mg);
  EXPECT_EQ(code, kExitUsage);
  EXPECT_CONTAINS(err, "--spawn");
  mg = {};
  std::tie(code, err) = parse({"--nccl-id-file", "/shared/id", "--gpus", "2"}, mpi, mg);
  EXPECT_NE(code, kExitUsage) << "--gpus equal to the ranks is fine: " << err;
  mg = {};
  EXPECT_CONTAINS(parse({}, mpi, mg).second, "MASTER_ADDR") << "the other way to share the id is named";
  RankPlace slurm = mpi;
  slurm.started_by = "srun (Slurm)";
  slurm.rendezvous = {"gpu03", 29956};
  mg = {};
  std::tie(code, err) = parse({}, slurm, mg);
  EXPECT_NE(code, kExitUsage) << "with rank 0's address the id goes over TCP, no file needed: " << err;
}

TEST(Stage09_Options, WhatAProcessDoes) {
  MultiGpuOptions mg;
  EXPECT_EQ(process_role(std::nullopt, mg), ProcessRole::Alone);
  mg.gpus = 1;
  EXPECT_EQ(process_role(std::nullopt, mg), ProcessRole::Alone) << "--gpus 1 needs no launcher";
  mg.spawn = true;
  EXPECT_EQ(process_role(std::nullopt, mg), ProcessRole::Launcher);
  mg = {};
  mg.gpus = 2;
  EXPECT_EQ(process_role(std::nullopt, mg), ProcessRole::Launcher);
  EXPECT_EQ(process_role(RankPlace{}, mg), ProcessRole::Rank) << "a rank never launches";
}

// ---- the watchdog's verdict ------------------------------------------------------------

TEST(Stage09_Watchdog, AStallIsAHangOnlyWhileTheGpuIsBehind) {
  HangDetector d(10.0);
  EXPECT_FALSE(d.stuck(0, 0, 0.0));
  EXPECT_FALSE(d.stuck(5, 5, 100.0)) << "the GPU has done everything: the host is slow, not stuck";
  EXPECT_FALSE(d.stuck(6, 5, 101.0)) << "behind from now on";
  EXPECT_FALSE(d.stuck(7, 5, 110.9));
  EXPECT_TRUE(d.stuck(7, 5, 111.0)) << "no progress for 10 s while behind";
  EXPECT_DOUBLE_EQ(d.stalled_for(111.0), 10.0);
}

TEST(Stage09_Watchdog, ProgressRestartsTheClock) {
  HangDetector d(10.0);
  EXPECT_FALSE(d.stuck(3, 1, 0.0));
  EXPECT_FALSE(d.stuck(3, 2, 9.0)) << "it moved";
  EXPECT_FALSE(d.stuck(4, 2, 18.0)) << "9 s since it moved";
  EXPECT_TRUE(d.stuck(4, 2, 19.0));
  EXPECT_FALSE(d.stuck(4, 4, 19.5)) << "caught up";
  EXPECT_FALSE(d.stuck(5, 4, 30.0)) << "behind again: a new clock";
  EXPECT_EQ(d.stalled_for(30.0), 0.0);
  EXPECT_TRUE(d.stuck(5, 4, 40.0));
}
