/// @file harness.hpp
/// @brief What each fuzz target does with one input: the real parser of
/// common/ on the bytes, and checks of what it returns.
///
/// Shared by the libFuzzer targets (fuzz/*_fuzz.cpp, built with clang) and by
/// tests/common/fuzz_regression_test.cpp, which replays every input kept in
/// fuzz/regressions/<target>/ in the ordinary build. A parser refuses bad
/// input by throwing the error it documents (DataError, ModelFileError,
/// std::invalid_argument); that is the expected outcome and is swallowed here.
/// Anything else is a finding: a crash or sanitizer report, another exception,
/// or a check below that fails (HarnessFailure).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model/arch.hpp"
#include "common/train/checkpoint.hpp"
#include "common/data/data.hpp"
#include "common/data/data_transform.hpp"
#include "common/model/model_file.hpp"
#include "common/train/trainer.hpp"

namespace course::fuzz {

/// A check of a parser's result that failed: a bug even though nothing crashed.
class HarnessFailure : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

inline void require(bool ok, const std::string& what) {
  if (!ok) throw HarnessFailure(what);
}

/// Every Dataset a loader returns keeps the promises of data.hpp.
inline void check_dataset(const Dataset& d) {
  require(d.shape.c >= 1 && d.shape.h >= 1 && d.shape.w >= 1, "a data set with an empty example shape");
  require(d.images.size() == d.labels.size() * static_cast<std::size_t>(d.shape.size()),
          "images and labels of different counts");
  require(d.classes >= 1 && d.class_names.size() == static_cast<std::size_t>(d.classes), "class names do not match");
  for (int y : d.labels) require(y >= 0 && y < d.classes, "a label outside [0, classes)");
  for (float v : d.images) require(v >= 0.0f && v <= 1.0f, "a value outside [0, 1]");
}

/// IDX: the input is a 2-byte big-endian length n, then n bytes of the image
/// file and the rest as the label file (each plain or gzip, by content).
inline void run_idx(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  const std::size_t n = std::min<std::size_t>(std::size_t{data[0]} << 8 | data[1], size - 2);
  const std::vector<unsigned char> images(data + 2, data + 2 + n), labels(data + 2 + n, data + size);
  try {
    check_dataset(parse_idx(images, "fuzz/train-images-idx3-ubyte", labels, "fuzz/train-labels-idx1-ubyte", "mnist"));
  } catch (const DataError&) {
  }
}

/// One CIFAR-10 batch file.
inline void run_cifar10(const std::uint8_t* data, std::size_t size) {
  try {
    check_dataset(parse_cifar10(std::vector<unsigned char>(data, data + size), "fuzz/data_batch_1.bin"));
  } catch (const DataError&) {
  }
}

/// A CSV file, read as a training set (scaling computed) and then as a test
/// set scaled with that range (the path load_data takes for test.csv).
inline void run_csv(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::vector<float> lo, hi;
    const Dataset train = parse_csv(text, "fuzz/train.csv", &lo, &hi);
    check_dataset(train);
    require(lo.size() == static_cast<std::size_t>(train.shape.c) && hi.size() == lo.size(), "scaling of another width");
    check_dataset(parse_csv(text, "fuzz/test.csv", &lo, &hi));
  } catch (const DataError&) {
  }
}

/// A picture file (PNG or JPEG, by content) through decode_image(), the
/// decoder --dataset folder uses, then the loader's next step: the bilinear
/// resize to another size. The limits are smaller than the loader's (1024 a
/// side, 256 Ki pixels) so that an input claiming a large picture decodes in
/// milliseconds under the sanitizers; the check of the limits is the same code.
inline void run_image(const std::uint8_t* data, std::size_t size) {
  const ImageLimits limits{1024, 256L * 1024};
  Image image;
  try {
    image = decode_image(std::vector<unsigned char>(data, data + size), "fuzz/picture.png", limits);
  } catch (const DataError&) {
    return;
  }
  require(image.channels == 1 || image.channels == 3, "a picture of " + std::to_string(image.channels) + " channels");
  require(image.height >= 1 && image.width >= 1 && image.height <= limits.max_side && image.width <= limits.max_side &&
              static_cast<long>(image.height) * image.width <= limits.max_pixels,
          "a picture of " + std::to_string(image.width) + "x" + std::to_string(image.height) + " past the limits");
  const long plane = static_cast<long>(image.height) * image.width;
  require(image.values.size() == static_cast<std::size_t>(plane * image.channels), "values of another count");
  for (float v : image.values) require(v >= 0.0f && v <= 1.0f, "a value outside [0, 1]");
  std::vector<float> out(static_cast<std::size_t>(image.channels) * 7 * 5);
  for (int c = 0; c < image.channels; ++c)
    resize_bilinear(image.values.data() + c * plane, image.height, image.width, out.data() + c * 35, 7, 5);
  for (float v : out) require(v >= 0.0f && v <= 1.0f, "a resized value outside [0, 1]");
}

/// A model file. What it accepts must encode back to the very same bytes.
inline void run_model_file(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  ModelFile m;
  try {
    m = decode_model(bytes, "fuzz/model.bin");
  } catch (const ModelFileError&) {
    return;
  }
  require(m.input.c >= 1 && m.input.h >= 1 && m.input.w >= 1 && m.classes >= 1, "accepted an empty shape");
  for (const auto& t : m.tensors) require(t.tensor.data.size() == Tensor::count(t.tensor.shape), "tensor size");
  require(encode_model(m) == bytes, "an accepted model file does not encode back to its bytes");
  try {
    check_model_matches(m, m.arch, m.input, m.classes, "fuzz/model.bin");  // must match itself
  } catch (const ModelFileError& e) {
    throw HarnessFailure(std::string("a model does not match its own architecture: ") + e.what());
  }
}

/// A checkpoint. What it accepts must survive encode and decode unchanged.
inline void run_checkpoint(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  Checkpoint c;
  try {
    c = decode_checkpoint(bytes, "fuzz/run.ckpt");
  } catch (const CheckpointError&) {
    return;
  }
  require(c.examples_done >= 0 && c.examples_done < c.train_examples && c.batch >= 1, "accepted a bad position");
  const std::string again = encode_checkpoint(c);
  const Checkpoint d = decode_checkpoint(again, "fuzz/again.ckpt");
  require(encode_checkpoint(d) == again, "a checkpoint changes when encoded twice");
}

/// An architecture spec string: parse_arch, then layer_shapes and
/// count_parameters on the inputs of every data set, and the same text as
/// --layers sizes (spec_from_layer_sizes).
inline void run_arch(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const Shape3 input : {Shape3{1, 28, 28}, Shape3{3, 32, 32}, Shape3{4, 1, 1}}) {
    try {
      std::string spec = spec_from_layer_sizes(text, "relu", input.size(), 10);
      require(parse_arch(spec).spec() == spec, "--layers made a spec that is not canonical");
    } catch (const std::invalid_argument&) {
    }
  }
  Arch arch;
  try {
    arch = parse_arch(text);
  } catch (const std::invalid_argument&) {
    return;
  }
  const std::string canonical = arch.spec();
  try {
    require(parse_arch(canonical).spec() == canonical, "the canonical spec '" + canonical + "' does not parse to itself");
  } catch (const std::invalid_argument& e) {
    throw HarnessFailure("the canonical spec '" + canonical + "' does not parse: " + e.what());
  }
  // The last dense layer decides the classes, so that the whole spec is checked.
  int classes = 10;
  if (!arch.layers.empty() && arch.layers.back().kind == LayerKind::Dense) classes = arch.layers.back().units;
  for (const Shape3 input : {Shape3{1, 28, 28}, Shape3{3, 32, 32}, Shape3{4, 1, 1}}) {
    try {
      const std::vector<Shape3> shapes = layer_shapes(arch, input, classes);
      require(shapes.size() == arch.layers.size(), "one shape per layer");
      for (const Shape3& s : shapes) require(s.c >= 1 && s.h >= 1 && s.w >= 1, "an empty layer output " + s.str());
      require(count_parameters(arch, input, classes) >= 0, "a negative parameter count");
    } catch (const std::invalid_argument&) {
    }
  }
}

/// A fuzz target: its name (the folder of its corpus and regressions) and what it runs.
struct Target {
  const char* name;
  void (*run)(const std::uint8_t*, std::size_t);
};

/// Every target. idx and idx_gzip run the same parser from different seeds.
inline const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"idx", run_idx},           {"idx_gzip", run_idx},
                                          {"cifar10", run_cifar10},   {"csv", run_csv},
                                          {"model_file", run_model_file}, {"checkpoint", run_checkpoint},
                                          {"arch", run_arch},         {"image", run_image}};
  return all;
}

}  // namespace course::fuzz
