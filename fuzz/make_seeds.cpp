/// @file make_seeds.cpp
/// @brief Writes the seed corpus of every fuzz target: small valid files of
/// each format, made with the course's own writers where it has them
/// (encode_model, encode_checkpoint), so the seeds follow the format as it is;
/// the picture seeds are written by stb_image_write (libstb-dev).
///
///     make_seeds OUT_DIR      -> OUT_DIR/<target>/seed_<n>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/train/checkpoint.hpp"
#include "common/model/model_file.hpp"

#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace fs = std::filesystem;
using Bytes = std::vector<unsigned char>;

namespace {

void put_be32(Bytes& b, std::uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<unsigned char>(v >> s));
}

Bytes idx_images(std::uint32_t n, std::uint32_t rows, std::uint32_t cols) {
  Bytes b;
  put_be32(b, 0x00000803);
  put_be32(b, n);
  put_be32(b, rows);
  put_be32(b, cols);
  for (std::uint32_t j = 0; j < n * rows * cols; ++j) b.push_back(static_cast<unsigned char>(j * 37 % 256));
  return b;
}

Bytes idx_labels(std::uint32_t n) {
  Bytes b;
  put_be32(b, 0x00000801);
  put_be32(b, n);
  for (std::uint32_t j = 0; j < n; ++j) b.push_back(static_cast<unsigned char>(j % 10));
  return b;
}

Bytes gzip(const Bytes& in) {
  z_stream s{};
  if (deflateInit2(&s, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("zlib");
  Bytes out(deflateBound(&s, static_cast<uLong>(in.size())) + 32);
  s.next_in = const_cast<Bytef*>(in.data());
  s.avail_in = static_cast<uInt>(in.size());
  s.next_out = out.data();
  s.avail_out = static_cast<uInt>(out.size());
  if (deflate(&s, Z_FINISH) != Z_STREAM_END) throw std::runtime_error("zlib deflate");
  out.resize(s.total_out);
  deflateEnd(&s);
  return out;
}

// The input of the idx target: a 2-byte big-endian length, the image file, the label file.
Bytes idx_input(const Bytes& images, const Bytes& labels) {
  Bytes b = {static_cast<unsigned char>(images.size() >> 8), static_cast<unsigned char>(images.size() & 0xFF)};
  b.insert(b.end(), images.begin(), images.end());
  b.insert(b.end(), labels.begin(), labels.end());
  return b;
}

Bytes cifar(int records) {
  Bytes b;
  for (int r = 0; r < records; ++r) {
    b.push_back(static_cast<unsigned char>(r % 10));
    for (int i = 0; i < 3072; ++i) b.push_back(static_cast<unsigned char>((i + 11 * r) % 256));
  }
  return b;
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

// A w x h picture of `comp` channels (1 gray, 2 gray + alpha, 3 RGB, 4 RGBA), as PNG or JPEG bytes.
Bytes picture(int w, int h, int comp, bool jpeg, int quality = 90) {
  std::vector<unsigned char> pixels;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < comp; ++c) pixels.push_back(static_cast<unsigned char>(x * 16 + y * 8 + c * 60));
  Bytes out;
  auto append = [](void* context, void* data, int size) {
    auto* b = static_cast<Bytes*>(context);
    b->insert(b->end(), static_cast<unsigned char*>(data), static_cast<unsigned char*>(data) + size);
  };
  const int ok = jpeg ? stbi_write_jpg_to_func(append, &out, w, h, comp, pixels.data(), quality)
                      : stbi_write_png_to_func(append, &out, w, h, comp, pixels.data(), w * comp);
  if (!ok) throw std::runtime_error("stb_image_write failed");
  return out;
}

course::ModelFile mlp() {
  course::ModelFile m;
  m.arch = "fc4,relu,fc3";
  m.input = course::Shape3{2, 1, 1};
  m.classes = 3;
  m.stage = "01_fc_softmax";
  m.tensors = {{"fc1.weight", course::Tensor({4, 2}, 0.5f)}, {"fc1.bias", course::Tensor({4}, -0.25f)},
               {"fc2.weight", course::Tensor({3, 4}, 1.5f)}, {"fc2.bias", course::Tensor({3}, 0.0f)}};
  return m;
}

course::ModelFile cnn() {
  course::ModelFile m;
  m.arch = "conv2k3p1,relu,pool2,flatten,fc3";
  m.input = course::Shape3{1, 4, 4};
  m.classes = 3;
  m.stage = "02_conv_pool";
  m.tensors = {{"conv1.weight", course::Tensor({2, 1, 3, 3}, 0.125f)}, {"conv1.bias", course::Tensor({2}, 0.0f)},
               {"fc1.weight", course::Tensor({3, 8}, -1.0f)}, {"fc1.bias", course::Tensor({3}, 2.0f)}};
  return m;
}

course::Checkpoint checkpoint(int epoch, int step) {
  course::Checkpoint c;
  c.model = mlp();
  for (const auto& t : c.model.tensors) c.optimizer.push_back({t.name + ".velocity", course::Tensor(t.tensor.shape, 0.01f)});
  c.epoch = epoch;
  c.step = step;
  c.batch = 4;
  c.examples_done = 4L * step;
  c.seed = 42;
  c.lr = 0.01;
  c.momentum = 0.9;
  c.loss = "cross-entropy";
  c.dataset = "synthetic";
  c.train_examples = 20;
  c.labels_hash = 0x84222325cbf29ce4ull;
  c.history = epoch > 0 ? R"([{"epoch":1,"loss":0.5,"train_accuracy":0.75,"test_accuracy":0.5,"seconds":0.01}])" : "[]";
  return c;
}

void write(const fs::path& dir, const std::string& target, int n, const Bytes& b) {
  fs::create_directories(dir / target);
  std::ofstream out(dir / target / ("seed_" + std::to_string(n)), std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void write(const fs::path& dir, const std::string& target, int n, const std::string& s) { write(dir, target, n, text(s)); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];

  write(out, "idx", 1, idx_input(idx_images(3, 4, 4), idx_labels(3)));
  write(out, "idx", 2, idx_input(idx_images(1, 28, 28), idx_labels(1)));
  write(out, "idx", 3, idx_input(idx_images(0, 2, 2), idx_labels(0)));
  write(out, "idx", 4, idx_input(idx_images(5, 2, 3), idx_labels(5)));

  write(out, "idx_gzip", 1, idx_input(gzip(idx_images(3, 4, 4)), gzip(idx_labels(3))));
  write(out, "idx_gzip", 2, idx_input(gzip(idx_images(2, 5, 5)), idx_labels(2)));
  write(out, "idx_gzip", 3, idx_input(idx_images(2, 3, 3), gzip(idx_labels(2))));
  // Two gzip members in a row are one valid gzip file (`cat a.gz b.gz`).
  const Bytes four = idx_images(4, 2, 2);
  Bytes two = gzip(Bytes(four.begin(), four.begin() + 20));
  const Bytes rest = gzip(Bytes(four.begin() + 20, four.end()));
  two.insert(two.end(), rest.begin(), rest.end());
  write(out, "idx_gzip", 4, idx_input(two, gzip(idx_labels(4))));

  write(out, "cifar10", 1, cifar(1));
  write(out, "cifar10", 2, cifar(2));

  write(out, "csv", 1, "a,b,label\n0.5,1,0\n-2,3e2,1\n4,5,2\n");
  write(out, "csv", 2, "1,2,3,0\n4,5,6,1\n\n7,8,9,1\n");
  write(out, "csv", 3, "x, y ,class\r\n 1.5 , -0.25 , 3\r\n2,2,0\r\n");
  write(out, "csv", 4, "7,7,0\n7,7,1");

  write(out, "model_file", 1, course::encode_model(mlp()));
  write(out, "model_file", 2, course::encode_model(cnn()));
  course::ModelFile empty = mlp();
  empty.tensors.clear();
  write(out, "model_file", 3, course::encode_model(empty));

  write(out, "checkpoint", 1, course::encode_checkpoint(checkpoint(0, 2)));
  write(out, "checkpoint", 2, course::encode_checkpoint(checkpoint(1, 0)));
  // Engine records (format version 2): stage 06's conv algorithms, and a binary one.
  course::Checkpoint recorded = checkpoint(1, 0);
  recorded.engine_state["cudnn_conv_algorithms"] =
      R"j({"format":1,"rule":"deterministic","layers":[{"layer":"conv1 (conv2k3p1)","batch":4,"forward":"FFT"}]})j";
  recorded.engine_state["raw"] = std::string("\0\x01\xff", 3);
  write(out, "checkpoint", 3, course::encode_checkpoint(recorded));

  int n = 0;
  for (const char* spec : {"fc256,relu,fc128,relu,fc10", "conv16k3p1,relu,pool2,conv32k3p1,relu,pool2,flatten,fc100,relu,fc10",
                           "conv8k5,relu,pool2,fc10", "conv4k3p1s2,leaky,pool3s2p1,flatten,fc16,sigmoid,fc10",
                           "FC10", "fc10, tanh ,softplus", "784,256:tanh,128,10", "4,8:sigmoid,3", "3072,10"})
    write(out, "arch", ++n, spec);

  n = 0;
  for (int comp : {1, 2, 3, 4}) write(out, "image", ++n, picture(5, 3, comp, false));
  write(out, "image", ++n, picture(1, 1, 1, false));
  write(out, "image", ++n, picture(8, 8, 3, true));
  write(out, "image", ++n, picture(17, 9, 1, true, 50));  // chroma subsampled, a partial block
  write(out, "image", ++n, picture(16, 16, 3, true, 100));
  return 0;
}
