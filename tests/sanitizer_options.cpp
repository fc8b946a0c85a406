// Defaults for sanitizer builds of the test binary (unused otherwise). Tests provoke huge
// allocations on purpose and expect SFAC_ERR_OUT_OF_MEMORY, which needs malloc to return NULL
// instead of aborting.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
