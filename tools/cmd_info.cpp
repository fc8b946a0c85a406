// sparsefac info: what this build and machine offer.
#include <cstdio>

#include "commands.h"

namespace sfac_cli {

void register_info(CLI::App& app) {
  auto options = std::make_shared<ContextOptions>();
  CLI::App* cmd = app.add_subcommand("info", "Show the library version, build and devices");
  add_context_options(*cmd, *options);
  cmd->callback([options] {
    std::printf("libsparsefac %s\n", sfac_version_string());
    std::printf("build: %s\n", sfac_build_info());
    int devices = 0;
    SFAC_CLI_CHECK(sfac_cuda_device_count(&devices));
    std::printf("CUDA devices: %d\n", devices);
    Context ctx = make_context(*options, false);
    sfac_backend backend = SFAC_BACKEND_AUTO;
    const char* device = nullptr;
    SFAC_CLI_CHECK(sfac_context_get_backend(ctx.get(), &backend));
    SFAC_CLI_CHECK(sfac_context_get_device_name(ctx.get(), &device));
    std::printf("backend '%s' resolves to: %s on %s\n", options->backend.c_str(),
                backend_name(backend).c_str(), device);
  });
}

}  // namespace sfac_cli
