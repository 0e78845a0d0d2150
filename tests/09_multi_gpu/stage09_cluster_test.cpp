// Stage 09 started by a cluster's launcher, without a GPU: the place a rank takes from Slurm's
// and torchrun's variables, and NCCL's unique id handed from rank 0 to the others over TCP
// (common/multi_gpu/rendezvous.hpp), with what it refuses and how it gives up.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/multi_gpu/bootstrap.hpp"
#include "common/multi_gpu/rendezvous.hpp"
#include "error_of.hpp"
#include "expect_contains.hpp"
#include "s09_support.hpp"

using namespace course;
using course::s09test::expect_place;
using course::s09test::table;

namespace {

// The message of what `f` throws (a test failure when it throws nothing).
template <typename F>
std::string error_of(F&& f) {
  return testkit::error_of<std::exception>(std::forward<F>(f));
}

std::string fake_id(int seed) {
  std::string id(kUniqueIdBytes, '\0');
  for (std::size_t i = 0; i < id.size(); ++i) id[i] = static_cast<char>((i * 13 + static_cast<std::size_t>(seed)) % 256);
  return id;
}

// A task of `srun --ntasks 4` on two hosts of a job: rank 3, the second task of its host.
std::map<std::string, std::string> slurm_task() {
  return {{"SLURM_PROCID", "3"},         {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_NTASKS", "8"},
          {"SLURM_LOCALID", "1"},        {"SLURM_STEP_ID", "0"},        {"SLURM_JOB_ID", "123456"},
          {"SLURM_STEP_NODELIST", "gpu[03-04]"}, {"SLURM_JOB_NODELIST", "gpu[03-04,07]"}};
}

}  // namespace

// ---- the place, from Slurm's and torchrun's variables ----------------------------------------

TEST(Stage09_Cluster, ASlurmTaskTakesItsPlaceAndRankZerosAddressFromTheStep) {
  auto p = rank_place_from_env(table(slurm_task()));
  expect_place(p, 3, 4, 1, "srun (Slurm)");  // a world of the step's tasks, not the job's
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rendezvous.host, "gpu03") << "the first host of the step";
  EXPECT_EQ(p->rendezvous.port, 29500 + 456) << "29500 + the job id's last three digits";
  EXPECT_EQ(p->run_id, "123456.0");
  EXPECT_TRUE(p->id_file.empty());

  auto vars = slurm_task();
  vars["MASTER_ADDR"] = "10.1.2.3";
  vars["MASTER_PORT"] = "29999";
  p = rank_place_from_env(table(vars));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rendezvous.str(), "10.1.2.3:29999") << "the job's own MASTER_ADDR and MASTER_PORT first";
}

TEST(Stage09_Cluster, ABatchScriptOrAStepOfOneTaskIsAProcessOnItsOwn) {
  // sbatch's script sees the job's variables (SLURM_PROCID=0, its task count), but srun did not start it.
  EXPECT_FALSE(rank_place_from_env(table({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}, {"SLURM_JOB_ID", "7"}})))
      << "no SLURM_STEP_ID: not a task of a step";
  auto vars = slurm_task();
  vars["SLURM_PROCID"] = "0";
  vars["SLURM_STEP_NUM_TASKS"] = "1";
  EXPECT_FALSE(rank_place_from_env(table(vars))) << "a step of one task may launch its ranks itself (--gpus)";
  EXPECT_FALSE(rank_place_from_env(table({{"RANK", "0"}, {"WORLD_SIZE", "1"}}))) << "torchrun's world of one";
}

TEST(Stage09_Cluster, TorchrunsVariablesGiveThePlaceAndTheAddress) {
  auto p = rank_place_from_env(table({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"},
                                      {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29501"},
                                      {"TORCHELASTIC_RUN_ID", "run42"}}));
  expect_place(p, 1, 2, 1, "torchrun's variables");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->rendezvous.str(), "node7:29501");
  EXPECT_EQ(p->run_id, "run42");

  p = rank_place_from_env(table({{"RANK", "1"}, {"WORLD_SIZE", "2"}}));
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->rendezvous.host.empty()) << "no address: the id must come through --nccl-id-file";

  auto bad = [](std::map<std::string, std::string> vars) { return error_of([&] { rank_place_from_env(table(vars)); }); };
  EXPECT_CONTAINS(bad({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}}), "MASTER_PORT is not set");
  EXPECT_CONTAINS(bad({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "70000"}}),
                  "MASTER_PORT=70000 is not a TCP port");
  EXPECT_CONTAINS(bad({{"WORLD_SIZE", "2"}}), "RANK is not set");
  EXPECT_CONTAINS(bad({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), "ranks are 0 to 1");
}

TEST(Stage09_Cluster, ARankUsesItsLocalRanksGpuOrTheOneItsLauncherLeftIt) {
  auto slurm = rank_place_from_env(table(slurm_task()));  // local rank 1
  ASSERT_TRUE(slurm.has_value());
  EXPECT_EQ(rank_device(*slurm, 8), 1) << "every GPU of the host visible: the local rank's";
  EXPECT_EQ(rank_device(*slurm, 1), 0) << "--gpus-per-task=1: the one GPU the task sees";
  auto torch = rank_place_from_env(table({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}}));
  ASSERT_TRUE(torch.has_value());
  EXPECT_EQ(rank_device(*torch, 1), 0);
  EXPECT_EQ(rank_device(*torch, 2), 1);
  // This trainer's launcher and Open MPI leave every GPU visible: one GPU for local rank 1 is a mistake.
  auto own = rank_place_from_env(table({{"COURSE_RANK", "1"}, {"COURSE_WORLD_SIZE", "2"}, {"COURSE_LOCAL_RANK", "1"}}));
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ(rank_device(*own, 1), -1);
  EXPECT_EQ(rank_device(*own, 2), 1);
  auto mpi = rank_place_from_env(table({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}}));
  ASSERT_TRUE(mpi.has_value());
  EXPECT_EQ(rank_device(*mpi, 1), -1);
  EXPECT_EQ(rank_device(*slurm, 0), -1) << "no GPU at all";
}

TEST(Stage09_Cluster, TheFirstHostOfASlurmHostList) {
  EXPECT_EQ(first_slurm_host("gpu[03-04,07],cpu1"), "gpu03");
  EXPECT_EQ(first_slurm_host("gnode[10,20,25,37]"), "gnode10");
  EXPECT_EQ(first_slurm_host("a1,a2"), "a1");
  EXPECT_EQ(first_slurm_host("n[3-5]-ib,m1"), "n3-ib");
  EXPECT_EQ(first_slurm_host("solo"), "solo");
}

// ---- the id over TCP --------------------------------------------------------------------

TEST(Stage09_Cluster, RankZeroHandsTheIdToEveryRankOverTcp) {
  UniqueIdServer server(0);  // a free port, which the ranks are told
  const RendezvousAddress at{"127.0.0.1", server.port()};
  const std::string id = fake_id(5);
  std::vector<std::string> got(4);
  std::vector<std::thread> ranks;
  for (int r = 1; r < 4; ++r)  // they may come before rank 0 serves: the connection waits in the queue
    ranks.emplace_back([&, r] { got[r] = fetch_unique_id(at, 4, r, "job.0", 10); });
  server.serve(id, 4, "job.0", 10);
  for (std::thread& t : ranks) t.join();
  for (int r = 1; r < 4; ++r) EXPECT_EQ(got[r], id) << "rank " << r;
}

TEST(Stage09_Cluster, RankZeroRefusesAnotherRunOrWorldOrATwiceClaimedRankAndGoesOn) {
  UniqueIdServer server(0);
  const RendezvousAddress at{"127.0.0.1", server.port()};
  const std::string id = fake_id(9);
  std::string wrong_world, wrong_run, second_claim, got;
  std::thread serving([&] { server.serve(id, 3, "job.1", 10); });
  wrong_world = error_of([&] { fetch_unique_id(at, 4, 1, "job.1", 10); });
  wrong_run = error_of([&] { fetch_unique_id(at, 3, 1, "job.0", 10); });
  got = fetch_unique_id(at, 3, 1, "job.1", 10);
  second_claim = error_of([&] { fetch_unique_id(at, 3, 1, "job.1", 10); });
  EXPECT_EQ(fetch_unique_id(at, 3, 2, "job.1", 10), id) << "the last rank still gets it";
  serving.join();
  EXPECT_EQ(got, id);
  EXPECT_CONTAINS(wrong_world, "refused it: this run has 3 ranks, not 4");
  EXPECT_CONTAINS(wrong_run, "refused it: this is run job.1, not job.0");
  EXPECT_CONTAINS(second_claim, "two processes claim that rank");
}

TEST(Stage09_Cluster, BothSidesGiveUpNamingTheAddress) {
  int free_port = 0;
  { free_port = UniqueIdServer(0).port(); }  // listened on, then closed: nothing answers there now
  const auto start = std::chrono::steady_clock::now();
  const std::string alone = error_of([&] { fetch_unique_id({"127.0.0.1", free_port}, 2, 1, "", 0.5); });
  EXPECT_CONTAINS(alone, "rank 1: could not reach rank 0 at 127.0.0.1:" + std::to_string(free_port));
  EXPECT_CONTAINS(alone, "MASTER_ADDR");

  UniqueIdServer server(0);
  const std::string waiting = error_of([&] { server.serve(fake_id(1), 3, "", 0.5); });
  EXPECT_CONTAINS(waiting, "rank(s) 1, 2 of 3 did not come");
  EXPECT_CONTAINS(waiting, "port " + std::to_string(server.port()));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 8.0);

  const std::string unknown = error_of([] { fetch_unique_id({"no-such-host.invalid", 29500}, 2, 1, "", 0.5); });
  EXPECT_CONTAINS(unknown, "no-such-host.invalid");
}
