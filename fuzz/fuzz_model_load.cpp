// The model file loader on arbitrary bytes (a corrupted or hostile .sfm file): a status and a
// message, or a model that answers queries; never a crash, a leak or undefined behaviour.
#include <vector>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = sfac_fuzz::write_scratch(data, size, ".sfm");
  sfac_model* model = nullptr;
  if (sfac_model_load(sfac_fuzz::context(), path.c_str(), &model) != SFAC_OK) {
    if (sfac_last_error()[0] == '\0') __builtin_trap();
    return 0;
  }
  int64_t users = 0, items = 0, rank = 0;
  if (sfac_model_get_shape(model, &users, &items, &rank) == SFAC_OK && users > 0 && items > 0) {
    const int32_t u = 0, i = static_cast<int32_t>(items - 1);
    float score = 0.0f;
    sfac_model_predict(model, 1, &u, &i, &score);
    std::vector<int32_t> top(3);
    std::vector<float> scores(3);
    sfac_model_recommend(model, 1, &u, 3, nullptr, 0, nullptr, top.data(), scores.data(),
                         static_cast<int64_t>(top.size()));
  }
  sfac_model_destroy(model);
  return 0;
}
