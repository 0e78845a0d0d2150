// The max-pooling study (pool_study.hpp): the CPU parts and the program around every part.
//
//   s03_pool_study                                   every size (4 ... 2048), setting and thread count
//   s03_pool_study --sizes 4,64,1024 --threads 1,2 --settings k2s2p0 --json pool.json
// A GPU stage's build of the same program (GpuPart plugged in) adds the GPU's three ways, and
// --per-window-max N times the study's per-window transfers up to N windows.
#include "benchmarks/03_openmp/pool_study/pool_study.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <regex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/core/rng.hpp"

namespace course::pool_study {
namespace {

using json = nlohmann::json;

struct Setting {
  std::string name;  // "k2s2p0"
  int K = 2, S = 2, P = 0;
  std::string refused;  // why every stage refuses it (PoolGeometry::check), or ""
};

struct Options {
  std::vector<int> sizes = {4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  std::vector<std::string> settings = {"k2s2p0", "k2s1p0", "k2s2p1", "k2s2p2"};
  std::vector<int> threads;  // default: 1, 2, 4, ... and every core
  Rule rule;
  long per_window_max = 70000;  // windows: above, the study's way is not timed (about 15 us a window)
  bool gpu = true;
  std::uint64_t seed = 42;
  std::string json_path;
};

int cores() {
#ifdef _OPENMP
  return omp_get_num_procs();
#else
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
#endif
}

std::vector<int> default_threads() {
  std::vector<int> t;
  for (int n = 1; n <= cores(); n *= 2) t.push_back(n);
  if (t.back() != cores()) t.push_back(cores());
  return t;
}

Setting parse_setting(const std::string& text) {
  static const std::regex re(R"(k(\d+)s(\d+)p(\d+))");
  std::smatch m;
  if (!std::regex_match(text, m, re))
    throw std::invalid_argument("--settings: '" + text + "' is not k<K>s<S>p<P> (e.g. k2s2p0)");
  Setting s{text, std::stoi(m[1]), std::stoi(m[2]), std::stoi(m[3]), ""};
  // The geometry rules every stage applies, on an image large enough for any window.
  try {
    PoolGeometry{1, 64, 64, s.K, s.S, s.P}.check();
  } catch (const std::invalid_argument& e) {
    s.refused = e.what();
  }
  return s;
}

// Stage 02's loop of Task 2.4 (solutions/02_conv_pool/pool.hpp), for output rows [r0, r1) of a
// one-channel image: the OpenMP version shares these rows among its threads.
void maxpool_rows(const float* x, float* y, int* argmax, const PoolGeometry& g, int r0, int r1) {
  const int Wo = g.out_w();
  for (int oh = r0; oh < r1; ++oh) {
    const int top = oh * g.S - g.P;
    const int h0 = std::max(top, 0), h1 = std::min(top + g.K, g.H);
    for (int ow = 0; ow < Wo; ++ow) {
      const int left = ow * g.S - g.P;
      const int w0 = std::max(left, 0), w1 = std::min(left + g.K, g.W);
      int best = h0 * g.W + w0;
      float best_value = x[best];
      for (int ih = h0; ih < h1; ++ih)
        for (int iw = w0; iw < w1; ++iw) {
          const float v = x[ih * g.W + iw];
          best = v > best_value ? ih * g.W + iw : best;
          best_value = v > best_value ? v : best_value;
        }
      y[oh * Wo + ow] = best_value;
      argmax[oh * Wo + ow] = best;
    }
  }
}

// The study's own method, in C++: every window extracted into a K x K matrix W, multiplied by the
// K x K identity I (a matmul per window, K^3 multiply-adds), and the largest cell of W I taken, the
// first in row-major order on a tie as in stage 02. A cell of the padding holds the lowest float,
// so it never wins (-infinity would turn its products by 0 into NaN). W I is W exactly (each sum is
// one product by 1 and K - 1 products by 0), so the output is stage 02's; only the work differs.
void maxpool_by_identity(const float* x, float* y, int* argmax, const PoolGeometry& g) {
  const int K = g.K, Ho = g.out_h(), Wo = g.out_w();
  std::vector<float> window(static_cast<std::size_t>(K) * K), identity(window.size(), 0.f), product(window.size());
  std::vector<int> where(window.size());
  for (int i = 0; i < K; ++i) identity[static_cast<std::size_t>(i) * K + i] = 1.f;
  for (int oh = 0; oh < Ho; ++oh)
    for (int ow = 0; ow < Wo; ++ow) {
      for (int i = 0; i < K; ++i)
        for (int j = 0; j < K; ++j) {
          const int ih = oh * g.S - g.P + i, iw = ow * g.S - g.P + j;
          const bool inside = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W;
          window[i * K + j] = inside ? x[ih * g.W + iw] : std::numeric_limits<float>::lowest();
          where[i * K + j] = inside ? ih * g.W + iw : -1;
        }
      for (int i = 0; i < K; ++i)
        for (int j = 0; j < K; ++j) {
          float sum = 0.f;
          for (int k = 0; k < K; ++k) sum += window[i * K + k] * identity[k * K + j];
          product[i * K + j] = sum;
        }
      int best = 0;
      for (int c = 1; c < K * K; ++c) best = product[c] > product[best] ? c : best;
      y[oh * Wo + ow] = product[best];
      argmax[oh * Wo + ow] = where[best];
    }
}

// The output rows shared among `threads` threads, each a contiguous block of them (OpenMP's static
// schedule, written out): thread t of T pools rows [Ho t / T, Ho (t + 1) / T).
void maxpool_openmp(const float* x, float* y, int* argmax, const PoolGeometry& g, int threads) {
  const int Ho = g.out_h();
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  {
    const long t = omp_get_thread_num(), T = omp_get_num_threads();
    maxpool_rows(x, y, argmax, g, static_cast<int>(Ho * t / T), static_cast<int>(Ho * (t + 1) / T));
  }
#else
  (void)threads;
  maxpool_rows(x, y, argmax, g, 0, Ho);
#endif
}

// A way of pooling to time: runs `reps` poolings and returns the seconds they took.
using Sampler = std::function<double(long reps)>;

template <typename Call>
Sampler sampler(Call call) {
  return [call](long reps) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < reps; ++i) call();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
}

// The median seconds of one pooling of each way, timed in turns: a round times every way once, so
// that whatever else the machine does slows them alike rather than the one that happened to run
// then. Short calls are timed in groups (doubled until a group takes 20 us or more, so that the
// clock's own cost does not count), after one untimed call each. Rounds go on until there are
// min_runs of them and they add up to min_ms for every way (or max_runs).
std::vector<Figure> time_in_turns(const std::vector<Sampler>& ways, const Rule& rule) {
  std::vector<Figure> f(ways.size());
  std::vector<std::vector<double>> runs(ways.size());
  for (std::size_t i = 0; i < ways.size(); ++i) {
    ways[i](1);
    while (ways[i](f[i].calls_per_run) < 20e-6 && f[i].calls_per_run < (1L << 24)) f[i].calls_per_run *= 2;
  }
  double total = 0;
  for (int round = 0; round < rule.max_runs && (round < rule.min_runs || total * 1e3 < rule.min_ms * ways.size());
       ++round)
    for (std::size_t i = 0; i < ways.size(); ++i) {
      const double s = ways[i](f[i].calls_per_run);
      runs[i].push_back(s / static_cast<double>(f[i].calls_per_run));
      total += s;
    }
  for (std::size_t i = 0; i < ways.size(); ++i) {
    std::sort(runs[i].begin(), runs[i].end());
    f[i].seconds = runs[i][runs[i].size() / 2];
    f[i].runs = static_cast<int>(runs[i].size());
  }
  return f;
}

Problem make_problem(int n, const Setting& s, std::uint64_t seed) {
  Problem p;
  p.g = PoolGeometry{1, n, n, s.K, s.S, s.P};
  p.g.check();
  Rng rng(seed, 900 + static_cast<std::uint64_t>(n));
  p.x.resize(static_cast<std::size_t>(n) * n);
  for (float& v : p.x) v = static_cast<float>(rng.uniform(-1.0, 1.0));
  p.y.assign(static_cast<std::size_t>(p.g.out_size()), 0.f);
  p.argmax.assign(p.y.size(), -1);
  maxpool_forward(p.x.data(), p.y.data(), p.argmax.data(), 1, p.g);
  return p;
}

json figure_json(const Setting& s, int n, const PoolGeometry& g, const std::string& method, int threads,
                 const Figure& f) {
  json j = {{"setting", s.name}, {"K", s.K},          {"S", s.S},       {"P", s.P},
            {"N", n},            {"outputs", g.out_size()}, {"method", method}, {"threads", threads},
            {"status", f.status}};
  if (f.status == "ok") {
    j["seconds"] = f.seconds;
    j["runs"] = f.runs;
    j["calls_per_run"] = f.calls_per_run;
    j["matches_stage02"] = f.matches;
  } else {
    j["reason"] = f.reason;
  }
  return j;
}

std::string cell(const Figure& f) {
  if (f.status != "ok") return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g%s", f.seconds, f.matches ? "" : " WRONG");
  return buf;
}

struct Row {
  int n;
  std::vector<std::string> cells;
};

void print_table(const Setting& s, const std::vector<std::string>& heads, const std::vector<Row>& rows) {
  std::printf("\n%s (max-pool %dx%d, stride %d, pad %d): seconds per pooling of one N x N image, median\n",
              s.name.c_str(), s.K, s.K, s.S, s.P);
  std::printf("%6s", "N");
  for (const auto& h : heads) std::printf("  %14s", h.c_str());
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("%6d", r.n);
    for (const auto& c : r.cells) std::printf("  %14s", c.c_str());
    std::printf("\n");
  }
}

}  // namespace

int run(int argc, char** argv, const std::string& program, GpuPart* gpu) {
  Options o;
  CLI::App app{"The max-pooling study: seconds to max-pool one N x N image, serial (stage 02), OpenMP (rows "
               "among threads)" +
               std::string(gpu ? " and on the GPU (its max-pooling kernel; with the transfers; one transfer per window)"
                               : "")};
  app.add_option("--sizes", o.sizes, "Image sides N (N x N, one channel)")->delimiter(',')->check(CLI::Range(1, 16384));
  app.add_option("--settings", o.settings, "Pool settings k<K>s<S>p<P>; one refused by the stages is reported so")
      ->delimiter(',');
  app.add_option("--threads", o.threads, "OpenMP thread counts (default: 1, 2, 4, ... and every core)")
      ->delimiter(',')
      ->check(CLI::Range(1, 4096));
  app.add_option("--min-ms", o.rule.min_ms, "Keep timing each figure until its runs add up to this many ms");
  app.add_option("--min-runs", o.rule.min_runs, "At least this many timed runs per figure")->check(CLI::PositiveNumber);
  app.add_option("--max-runs", o.rule.max_runs, "At most this many timed runs per figure")->check(CLI::PositiveNumber);
  app.add_option("--seed", o.seed, "Seed of the images");
  app.add_option("--json", o.json_path, "Write every figure to FILE");
  if (gpu) {
    app.add_option("--per-window-max", o.per_window_max,
                   "Time the study's one-transfer-per-window GPU version only up to this many windows (0: never)");
    app.add_option("--gpu", o.gpu, "Time the GPU (1) or not (0)");
  }
  CLI11_PARSE(app, argc, argv);
  try {
    if (o.threads.empty()) o.threads = default_threads();
    std::vector<Setting> settings;
    for (const auto& text : o.settings) settings.push_back(parse_setting(text));

    std::string gpu_status = gpu ? "ok" : "skipped", gpu_reason, device;
    double context_s = 0;
    if (!gpu) {
      gpu_reason = program + " is the CPU build (the GPU stage's build of the study, with CUDA, times the GPU)";
    } else if (!o.gpu) {
      gpu_status = "skipped", gpu_reason = "--gpu 0";
    } else if (!gpu->usable(&gpu_reason)) {
      gpu_status = "skipped";
    } else {
      device = gpu->device();
      context_s = gpu->context_seconds();
    }
    const bool on_gpu = gpu_status == "ok";
#ifdef _OPENMP
    const std::string openmp = "OpenMP " + std::to_string(_OPENMP);
#else
    const std::string openmp = "";
#endif
    std::printf("%s: max-pooling of one N x N image; serial = stage 02's maxpool_forward; study's way = every "
                "window times the identity, then its max; OpenMP = stage 02's rows among threads (%s); %d cores\n",
                program.c_str(), openmp.empty() ? "not built: no OpenMP" : openmp.c_str(), cores());
    std::printf("GPU: %s\n", on_gpu ? (device + "; the first CUDA call took " + std::to_string(context_s) + " s")
                                             .c_str()
                                    : ("not timed: " + gpu_reason).c_str());

    json out = {{"program", program},
                {"what", "seconds to max-pool one N x N single-channel image (median of timed runs)"},
                {"cores", cores()},
                {"openmp", openmp},
                {"threads", o.threads},
                {"sizes", o.sizes},
                {"rule", {{"min_runs", o.rule.min_runs}, {"min_ms", o.rule.min_ms}, {"max_runs", o.rule.max_runs}}},
                {"per_window_max", o.per_window_max},
                {"gpu", {{"status", gpu_status}, {"reason", gpu_reason}, {"device", device},
                         {"context_seconds", context_s}}},
                {"settings", json::array()},
                {"rows", json::array()}};
    bool all_match = true;
    for (const Setting& s : settings) {
      out["settings"].push_back({{"setting", s.name}, {"K", s.K}, {"S", s.S}, {"P", s.P},
                                 {"status", s.refused.empty() ? "ok" : "refused"}, {"reason", s.refused}});
      if (!s.refused.empty()) {
        std::printf("\n%s: refused by every stage: %s\n", s.name.c_str(), s.refused.c_str());
        continue;
      }
      std::vector<std::string> heads = {"serial", "study's way"};
      for (int t : o.threads) heads.push_back("omp " + std::to_string(t) + "t");
      if (on_gpu) heads.insert(heads.end(), {"gpu kernel", "gpu +copies", "gpu per window"});
      std::vector<Row> rows;
      for (int n : o.sizes) {
        if (s.K > n + 2 * s.P) continue;  // a window larger than the padded image
        const Problem p = make_problem(n, s, o.seed);
        Row row{n, {}};

        // Serial, the study's method and every thread count in turns, each writing its own output,
        // checked afterwards.
        std::vector<Sampler> ways;
        std::vector<std::vector<float>> ys(2 + o.threads.size(), std::vector<float>(p.y.size(), 0.f));
        std::vector<std::vector<int>> as(ys.size(), std::vector<int>(p.y.size(), -1));
        ways.push_back(sampler([&] { maxpool_forward(p.x.data(), ys[0].data(), as[0].data(), 1, p.g); }));
        ways.push_back(sampler([&] { maxpool_by_identity(p.x.data(), ys[1].data(), as[1].data(), p.g); }));
        if (!openmp.empty())
          for (std::size_t i = 0; i < o.threads.size(); ++i)
            ways.push_back(sampler([&, i] {
              maxpool_openmp(p.x.data(), ys[i + 2].data(), as[i + 2].data(), p.g, o.threads[i]);
            }));
        std::vector<Figure> timed = time_in_turns(ways, o.rule);
        for (std::size_t i = 0; i < timed.size(); ++i) timed[i].matches = ys[i] == p.y && as[i] == p.argmax;
        const Figure& serial = timed[0];
        out["rows"].push_back(figure_json(s, n, p.g, "serial", 1, serial));
        row.cells.push_back(cell(serial));
        out["rows"].push_back(figure_json(s, n, p.g, "study_serial", 1, timed[1]));
        row.cells.push_back(cell(timed[1]));
        all_match = all_match && timed[1].matches;
        for (std::size_t i = 0; i < o.threads.size(); ++i) {
          Figure f;
          if (openmp.empty()) {
            f.status = "skipped", f.reason = "built without OpenMP";
          } else {
            f = timed[i + 2];
          }
          all_match = all_match && (f.status != "ok" || f.matches);
          out["rows"].push_back(figure_json(s, n, p.g, "openmp", o.threads[i], f));
          row.cells.push_back(cell(f));
        }
        if (on_gpu) {
          const Figure k = gpu->kernel_only(p, o.rule), c = gpu->with_transfers(p, o.rule);
          Figure w;
          if (p.g.out_size() > o.per_window_max) {
            w.status = "not timed";
            w.reason = std::to_string(p.g.out_size()) + " windows, above --per-window-max " +
                       std::to_string(o.per_window_max);
          } else {
            w = gpu->per_window(p, o.rule);
          }
          const std::pair<const char*, const Figure*> figures[] = {
              {"gpu_kernel", &k}, {"gpu_with_transfers", &c}, {"gpu_per_window", &w}};
          for (const auto& [method, f] : figures) {
            all_match = all_match && (f->status != "ok" || f->matches);
            out["rows"].push_back(figure_json(s, n, p.g, method, 1, *f));
            row.cells.push_back(cell(*f));
          }
        }
        all_match = all_match && serial.matches;
        rows.push_back(row);
      }
      print_table(s, heads, rows);
    }
    if (!o.json_path.empty()) {
      std::ofstream f(o.json_path);
      if (!(f << out.dump(2) << "\n")) throw std::runtime_error("cannot write " + o.json_path);
      std::printf("\nwrote %s\n", o.json_path.c_str());
    }
    if (!all_match) {
      std::fprintf(stderr, "a way of pooling differs from stage 02's output: see WRONG above\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace course::pool_study
