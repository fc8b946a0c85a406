// placeholder: implemented by the I/O work
#include "core/error.h"
#include "io/readers.h"
namespace sfac::io {
Triplets read_triplets(const std::string& path, const ReadOptions&) {
  fail(SFAC_ERR_UNSUPPORTED, "reading ", path, " is not implemented yet");
}
void write_matrix_market(const std::string& path, int64_t, int64_t, const int64_t*,
                         const int32_t*, const float*) {
  fail(SFAC_ERR_UNSUPPORTED, "writing ", path, " is not implemented yet");
}
}  // namespace sfac::io
