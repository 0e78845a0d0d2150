/// @file load_data.cpp
/// @brief load_data(): finds a data set by name, loads it with data.cpp's readers, then applies
/// --limit, the transforms (data_transform.hpp) and the validation split, in that order.
#include "common/data/load_data.hpp"

#include "common/data/data_transform.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace course {

std::vector<std::string> dataset_names() {
  return {"fashion-mnist", "mnist", "cifar10", "csv", "folder", "synthetic"};
}

namespace {

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

std::string in_dir(const std::string& dir, const std::string& file) {
  return (fs::path(dir) / file).string();
}

/// `base` in `dir`, plain or with .gz appended (plain first: it loads faster); "" when neither exists.
std::string find_maybe_gz(const std::string& dir, const std::string& base) {
  std::error_code ec;
  for (const std::string& f : {base, base + ".gz"})
    if (fs::is_regular_file(in_dir(dir, f), ec)) return in_dir(dir, f);
  return "";
}

/// The full paths of `files` in `dir` when all of them are there; else `missing` lists the absent ones.
bool find_all(const std::string& dir, const std::vector<std::string>& files, bool allow_gz,
              std::vector<std::string>* paths, std::vector<std::string>* missing) {
  paths->clear();
  missing->clear();
  std::error_code ec;
  for (const std::string& f : files) {
    const std::string p =
        allow_gz ? find_maybe_gz(dir, f) : (fs::is_regular_file(in_dir(dir, f), ec) ? in_dir(dir, f) : "");
    if (p.empty())
      missing->push_back(allow_gz ? f + "[.gz]" : f);
    else
      paths->push_back(p);
  }
  return missing->empty();
}

/// What is wrong with `dir` as a folder to read from: "" when it is one, else "does not exist", "is a
/// file, not a folder" (--data-dir /etc/passwd), or why it cannot be looked at (no permission).
std::string folder_problem(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (st.type() == fs::file_type::directory) return "";
  if (st.type() == fs::file_type::not_found) return "does not exist";
  if (ec) return "cannot be read (" + ec.message() + ")";
  return st.type() == fs::file_type::regular ? "is a file, not a folder" : "is not a folder";
}

/// The error for a --data-dir that does not hold the data set: first whether it is a folder at all.
DataError not_in_data_dir(const std::string& name, const std::string& dir,
                          const std::vector<std::string>& missing) {
  const std::string problem = folder_problem(dir);
  if (!problem.empty())
    return DataError("--data-dir " + dir + " " + problem + ": " + name + " is read from a folder that holds " +
                     join(missing, ", "));
  return DataError(name + " not found in --data-dir " + dir + ": looked for " + join(missing, ", "));
}

std::string count_note(const DataSplit& s, const std::string& what) {
  return s.train.name + ": " + std::to_string(s.train.size()) + " train, " + std::to_string(s.test.size()) +
         " test " + what + " from " + s.train.source;
}

void check_same_shape(const DataSplit& s) {
  if (!(s.train.shape == s.test.shape))
    throw DataError(s.train.source + ": the training examples are " + s.train.shape.str() +
                    " but the test examples are " + s.test.shape.str());
}

/// Tries `dirs` in order; true and `split` filled when one holds the whole IDX set.
bool try_idx(const std::string& name, const std::vector<std::string>& dirs, bool dir_given,
             DataSplit* split) {
  const std::vector<std::string> files = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                          "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
  std::vector<std::string> paths, missing;
  for (const std::string& dir : dirs) {
    if (!find_all(dir, files, true, &paths, &missing)) continue;
    split->train = load_idx(paths[0], paths[1], name);
    split->test = load_idx(paths[2], paths[3], name);
    check_same_shape(*split);
    split->note = count_note(*split, "images");
    return true;
  }
  if (dir_given) {
    find_all(dirs.front(), files, true, &paths, &missing);
    throw not_in_data_dir(name, dirs.front(), missing);
  }
  return false;
}

bool try_cifar(const std::vector<std::string>& dirs, bool dir_given, DataSplit* split) {
  std::vector<std::string> files;
  for (int i = 1; i <= 5; ++i) files.push_back("data_batch_" + std::to_string(i) + ".bin");
  files.push_back("test_batch.bin");
  std::vector<std::string> paths, missing;
  for (const std::string& dir : dirs) {
    if (!find_all(dir, files, false, &paths, &missing)) continue;
    split->train = load_cifar10({paths.begin(), paths.begin() + 5});
    split->test = load_cifar10({paths[5]});
    split->note = count_note(*split, "images");
    return true;
  }
  if (dir_given) {
    find_all(dirs.front(), files, false, &paths, &missing);
    throw not_in_data_dir("cifar10", dirs.front(), missing);
  }
  return false;
}

}  // namespace

DataSplit load_data(const DataOptions& options) {
  const std::vector<std::string> known = dataset_names();
  const std::string& name = options.dataset;
  if (std::find(known.begin(), known.end(), name) == known.end())
    throw std::invalid_argument("unknown dataset '" + name + "' (known: " + join(known, ", ") + ")");

  constexpr int kTrain = 8000, kTest = 2000, kClasses = 10;
  // The test set draws from another seed than the training set: the same
  // class patterns (they do not depend on the seed), different examples.
  const std::uint64_t test_seed = options.seed ^ 0x9E3779B97F4A7C15ULL;
  auto synthetic = [&](Shape3 shape) {
    DataSplit s;
    s.train = make_synthetic(kTrain, shape, kClasses, options.seed);
    s.test = make_synthetic(kTest, shape, kClasses, test_seed);
    return s;
  };

  const bool dir_given = !options.data_dir.empty();
  DataSplit split;
  bool found = true;
  std::vector<std::string> dirs;
  std::string fallback_hint;
  Shape3 fallback_shape{1, 28, 28};

  if (name == "synthetic") {
    split = synthetic(Shape3{1, 28, 28});
    split.note = "synthetic: " + std::to_string(kTrain) + " train, " + std::to_string(kTest) +
                 " test built-in examples of 1x28x28 in 10 classes (seed " + std::to_string(options.seed) +
                 ")";
  } else if (name == "fashion-mnist" || name == "mnist") {
    dirs = dir_given ? std::vector<std::string>{options.data_dir}
                     : std::vector<std::string>{"./data/" + name, "./data"};
    if (!dir_given && name == "fashion-mnist") dirs.push_back("/usr/share/datasets/fashion-mnist");
    fallback_hint = name == "fashion-mnist" ? "install dataset-fashion-mnist or pass --data-dir"
                                            : "put the MNIST IDX files in ./data/mnist or pass --data-dir";
    found = try_idx(name, dirs, dir_given, &split);
  } else if (name == "cifar10") {
    // The official archive unpacks to cifar-10-batches-bin/, so that name is tried under --data-dir too.
    dirs = dir_given
               ? std::vector<std::string>{options.data_dir, in_dir(options.data_dir, "cifar-10-batches-bin")}
               : std::vector<std::string>{"./data/cifar10", "./data/cifar-10-batches-bin"};
    fallback_hint = "put the CIFAR-10 binary files in ./data/cifar10 or pass --data-dir";
    fallback_shape = Shape3{3, 32, 32};
    found = try_cifar(dirs, dir_given, &split);
  } else if (name == "folder") {
    if (!dir_given)
      throw DataError("dataset folder needs --data-dir: a folder with train/<class>/ and test/<class>/ subfolders "
                      "of PNG or JPEG pictures");
    split = load_image_folder(options.data_dir, options.resize);
  } else {  // csv
    if (!dir_given) throw DataError("dataset csv needs --data-dir: a folder with train.csv and test.csv");
    std::vector<std::string> paths, missing;
    if (!find_all(options.data_dir, {"train.csv", "test.csv"}, false, &paths, &missing))
      throw not_in_data_dir("csv", options.data_dir, missing);
    // The test set is scaled with the training set's ranges, as a trained model would see it.
    std::vector<float> lo, hi;
    split.train = load_csv(paths[0], &lo, &hi);
    split.test = load_csv(paths[1], &lo, &hi);
    const int classes = std::max(split.train.classes, split.test.classes);
    for (Dataset* d : {&split.train, &split.test}) {
      d->classes = classes;
      d->class_names = numbered_names(classes, "");
    }
    split.note = count_note(split, "examples of " + std::to_string(split.train.shape.c) + " features in " +
                                       std::to_string(classes) + " classes");
  }

  if (!found) {
    split = synthetic(fallback_shape);
    split.synthetic_fallback = true;
    split.note = name + " not found (looked in " + join(dirs, ", ") +
                 "): using the built-in synthetic set instead (" + fallback_hint + ")";
  }
  if (options.limit > 0 && options.limit < split.train.size()) {
    split.train.truncate(options.limit);
    split.note += "; training on the first " + std::to_string(options.limit) + " examples (--limit)";
  }
  // After --limit: the transforms work example by example, so the result is
  // the same as before it, at a fraction of the cost (data_transform.hpp).
  const std::string transformed = transform_examples(split.train, split.test, options.resize, options.channels);
  if (!transformed.empty()) split.note += "; " + transformed + options.transform_why;
  split.val = split_validation(split.train, options.val_fraction, options.seed);
  if (split.val.size() > 0) {
    char fraction[32];
    std::snprintf(fraction, sizeof fraction, "%g", options.val_fraction);
    split.note += "; " + std::to_string(split.val.size()) + " of the " +
                  std::to_string(split.train.size() + split.val.size()) +
                  " training examples held out for validation (--val-fraction " + fraction + ", --seed " +
                  std::to_string(options.seed) + ")";
  }
  return split;
}

}  // namespace course
