// The conv shapes every conv gradient test runs: each padding 0, 1, 2; each
// stride 1, 2 (and 3); kernels 1, 3, 5; several channels and filters;
// non-square inputs; batches above 1.
#pragma once

#include <string>

#include "02_conv_pool/conv.hpp"

namespace course::reference {

struct ConvCase {
  int B;
  ConvGeometry g;
};

/// "batch 2, conv 3 -> 4, 3x3, pad 1, stride 1 on 3x6x5"
inline std::string describe(const ConvCase& c) { return "batch " + std::to_string(c.B) + ", " + c.g.str(); }

//                                                    C_in  H  W C_out K  P  S
inline const ConvCase kK3Pad1NonSquare{2, ConvGeometry{3, 6, 5, 4, 3, 1, 1}};
inline const ConvCase kK3Pad0{1, ConvGeometry{2, 5, 7, 3, 3, 0, 1}};
inline const ConvCase kK5Pad2{2, ConvGeometry{2, 7, 6, 2, 5, 2, 1}};
inline const ConvCase kK3Pad2{1, ConvGeometry{2, 4, 5, 2, 3, 2, 1}};  // corner outputs see one image cell
inline const ConvCase kK1{3, ConvGeometry{4, 5, 4, 3, 1, 0, 1}};
inline const ConvCase kK1Stride2{2, ConvGeometry{2, 5, 6, 3, 1, 0, 2}};  // odd rows and columns get no gradient
inline const ConvCase kK3Pad1Stride2{2, ConvGeometry{3, 7, 8, 2, 3, 1, 2}};
inline const ConvCase kK5Pad1Stride2{2, ConvGeometry{2, 8, 7, 3, 5, 1, 2}};  // the last row is never read
inline const ConvCase kK5Pad2Stride2{3, ConvGeometry{3, 9, 6, 4, 5, 2, 2}};
inline const ConvCase kK3Pad0Stride3{2, ConvGeometry{2, 9, 6, 3, 3, 0, 3}};

}  // namespace course::reference
