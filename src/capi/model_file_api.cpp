// Model persistence entry points: the binary model file and the LIBMF export.
#include <memory>

#include "capi/guard.h"
#include "capi/handles.h"
#include "io/model_file.h"

using sfac::capi::checked;
using sfac::capi::require_pointer;

extern "C" {

sfac_status sfac_model_save(const sfac_model* model, const char* path) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model").impl;
  require_pointer(path, "path");
  sfac::io::save_model(m, path);
  SFAC_API_END
}

sfac_status sfac_model_load(sfac_context* ctx, const char* path, sfac_model** out) {
  SFAC_API_BEGIN
  auto& c = checked(ctx, "ctx").impl;
  require_pointer(path, "path");
  require_pointer(out, "out");
  auto model = std::make_unique<sfac_model>();
  model->backend = c.backend;  // model operations run on the loading context's threads
  model->impl = sfac::io::load_model(path);
  *out = model.release();  // only now: a failed load leaves *out untouched
  SFAC_API_END
}

sfac_status sfac_model_export_libmf(const sfac_model* model, const char* path) {
  SFAC_API_BEGIN
  const auto& m = checked(model, "model").impl;
  require_pointer(path, "path");
  sfac::io::export_libmf(m, path);
  SFAC_API_END
}

}  // extern "C"
