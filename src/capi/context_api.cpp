#include "capi/guard.h"
#include "capi/handles.h"
#include "core/cuda_probe.h"

using sfac::capi::checked;
using sfac::capi::require_pointer;

extern "C" {

sfac_status sfac_context_create(sfac_backend backend, int device, int num_threads, uint64_t seed,
                                sfac_context** out) {
  SFAC_API_BEGIN
  require_pointer(out, "out");
  auto ctx = std::make_unique<sfac_context>();
  ctx->impl.backend = sfac::create_backend(backend, device, num_threads);
  ctx->impl.seed = seed;
  *out = ctx.release();
  SFAC_API_END
}

sfac_status sfac_context_destroy(sfac_context* ctx) {
  SFAC_API_BEGIN
  sfac::capi::destroy(ctx, "ctx");
  SFAC_API_END
}

sfac_status sfac_context_get_backend(const sfac_context* ctx, sfac_backend* out) {
  SFAC_API_BEGIN
  const auto& c = checked(ctx, "ctx");
  require_pointer(out, "out");
  *out = c.impl.backend->kind();
  SFAC_API_END
}

sfac_status sfac_context_get_device_name(const sfac_context* ctx, const char** out) {
  SFAC_API_BEGIN
  const auto& c = checked(ctx, "ctx");
  require_pointer(out, "out");
  *out = c.impl.backend->device_name().c_str();
  SFAC_API_END
}

sfac_status sfac_context_get_num_threads(const sfac_context* ctx, int* out) {
  SFAC_API_BEGIN
  const auto& c = checked(ctx, "ctx");
  require_pointer(out, "out");
  *out = c.impl.backend->num_threads();
  SFAC_API_END
}

sfac_status sfac_context_get_seed(const sfac_context* ctx, uint64_t* out) {
  SFAC_API_BEGIN
  const auto& c = checked(ctx, "ctx");
  require_pointer(out, "out");
  *out = c.impl.seed;
  SFAC_API_END
}

sfac_status sfac_context_synchronize(sfac_context* ctx) {
  SFAC_API_BEGIN
  checked(ctx, "ctx").impl.backend->synchronize();
  SFAC_API_END
}

sfac_status sfac_context_set_stream(sfac_context* ctx, void* stream) {
  SFAC_API_BEGIN
  checked(ctx, "ctx").impl.backend->set_stream(stream);
  SFAC_API_END
}

sfac_status sfac_context_get_stream(const sfac_context* ctx, void** out) {
  SFAC_API_BEGIN
  const auto& c = checked(ctx, "ctx");
  require_pointer(out, "out");
  *out = c.impl.backend->stream_handle();
  SFAC_API_END
}

sfac_status sfac_context_set_memory_limit(sfac_context* ctx, int64_t bytes) {
  SFAC_API_BEGIN
  auto& c = checked(ctx, "ctx");
  SFAC_REQUIRE(bytes >= 0, SFAC_ERR_INVALID_ARGUMENT, "bytes = ", bytes, " must be >= 0");
  c.impl.backend->set_host_memory_limit(bytes);
  SFAC_API_END
}

sfac_status sfac_context_get_memory_limit(const sfac_context* ctx, int64_t* out) {
  SFAC_API_BEGIN
  const auto& c = checked(ctx, "ctx");
  require_pointer(out, "out");
  *out = c.impl.backend->host_memory_limit();
  SFAC_API_END
}

sfac_status sfac_context_set_device_memory_limit(sfac_context* ctx, int64_t bytes) {
  SFAC_API_BEGIN
  auto& c = checked(ctx, "ctx");
  SFAC_REQUIRE(bytes >= 0, SFAC_ERR_INVALID_ARGUMENT, "bytes = ", bytes, " must be >= 0");
  c.impl.backend->set_device_memory_limit(bytes);
  SFAC_API_END
}

sfac_status sfac_context_get_device_memory_limit(const sfac_context* ctx, int64_t* out) {
  SFAC_API_BEGIN
  const auto& c = checked(ctx, "ctx");
  require_pointer(out, "out");
  *out = c.impl.backend->device_memory_limit();
  SFAC_API_END
}

sfac_status sfac_cuda_device_count(int* out) {
  SFAC_API_BEGIN
  require_pointer(out, "out");
  *out = sfac::cuda_device_count();
  SFAC_API_END
}

}  // extern "C"
