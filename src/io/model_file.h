// Model persistence: the versioned binary model file and LIBMF's text model format.
//
// Binary model file, format version 1
// -----------------------------------
// A fixed 76-byte header, the float32 arrays, then a CRC-32. Fields are packed (no padding) at
// these byte offsets:
//
//   offset  type     field
//        0  u8[8]    magic "SFACMDL\0"
//        8  u32      format version, 1
//       12  u32      byte-order marker 0x01020304, written in the writer's byte order
//       16  u32      dtype of the arrays: 0 = float32 (the only one defined)
//       20  u32      algorithm (sfac_algorithm: 0 ALS, 1 IALS, 2 SGD)
//       24  i64      users, 0 .. INT32_MAX
//       32  i64      items, 0 .. INT32_MAX
//       40  i64      rank, 1 .. INT32_MAX
//       48  u32      flags: bit 0 = has biases; other bits must be 0
//       52  f64      lambda_user (finite, >= 0)
//       60  f64      implicit_alpha (finite, >= 0)
//       68  u32      regularization (sfac_regularization: 0 PLAIN, 1 WEIGHTED)
//       72  f32      global_mean (finite)
//       76  f32[]    user factors, users x rank, row-major
//           f32[]    item factors, items x rank, row-major
//           f32[]    user biases, users entries       (only with the has-biases flag)
//           f32[]    item biases, items entries       (only with the has-biases flag)
//           u32      CRC-32 (IEEE 802.3: reflected polynomial 0xEDB88320, initial value and
//                    final XOR 0xFFFFFFFF, as zlib's crc32) of every byte before it
//
// Byte order: every multi-byte field, the arrays included, is in the writer's native order, and
// the marker records which. All hosts libsparsefac supports are little-endian, so in practice
// every file is little-endian throughout. A reader that sees the marker byte-swapped rejects the
// file with SFAC_ERR_UNSUPPORTED instead of swapping: no supported host can write such a file.
//
// The file size follows from the header: 76 + 4 * (users + items) * rank
// (+ 4 * (users + items) with biases) + 4. The loader checks the header and this size against
// the actual file before it allocates anything, so a corrupted header cannot request a huge
// allocation. Every array value must be finite.
//
// Compatibility: a change to the layout, or a new field of sfac::Model that must survive a round
// trip, needs a new format version; readers reject versions they do not know.
#pragma once

#include <cstdint>
#include <string>

#include "core/model.h"

namespace sfac::io {

// Writes `model` as a binary model file. The data goes to a new temporary file next to `path`
// that is renamed over `path` only once complete and flushed to disk, so a failed or interrupted
// save never leaves a partial file at `path` (an existing file there stays as it was).
// Throws SFAC_ERR_INVALID_VALUE for a non-finite factor or bias (the file could not be loaded),
// SFAC_ERR_IO ("cannot open PATH for writing: strerror", "cannot write PATH: strerror").
void save_model(const Model& model, const std::string& path);

// Reads a binary model file. Throws SFAC_ERR_IO ("cannot open PATH: strerror", directories
// included; "cannot read PATH: strerror"), SFAC_ERR_PARSE for a truncated, corrupted or foreign
// file ("PATH: truncated: expected N bytes, found M", "PATH: checksum mismatch",
// "PATH: not a libsparsefac model (bad magic)", "PATH: unsupported model format version 7"),
// SFAC_ERR_UNSUPPORTED for a file written in the other byte order.
Model load_model(const std::string& path);

// Writes LIBMF's text model (the format of LIBMF's mf_save_model / mf_load_model):
//   f 0
//   m <users>
//   n <items>
//   k <k>
//   b <global mean, 0 without biases>
//   p<u> T <k values>      for every user u
//   q<i> T <k values>      for every item i
// Values are written in the shortest form that reads back as the same float. LIBMF predicts
// dot(p_u, q_i) and uses b only for unknown users/items, so a model with biases gets two extra
// columns that make the dot product the full prediction (k = rank + 2):
//   p_u = [x_u, global_mean + user_bias_u, 1]    q_i = [y_i, 1, item_bias_i]
// Without biases k = rank and the rows are the factors. Written atomically like save_model.
// Throws SFAC_ERR_IO.
void export_libmf(const Model& model, const std::string& path);

// CRC-32 (IEEE) of `size` bytes, continuing from `crc` (0 to start): crc32("123456789") is
// 0xCBF43926.
uint32_t crc32(const void* data, size_t size, uint32_t crc = 0);

}  // namespace sfac::io
