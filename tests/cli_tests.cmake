# Command-line tool tests, included from tests/CMakeLists.txt:
#   cli   tests/cli_test.sh drives the built `sparsefac` tool: train (als, ials, sgd), eval,
#         predict, recommend, similar, convert, info, --help, exit codes, error messages and the
#         per-epoch output (plain lines when piped, the progress bar). Label: cli.
# `ctest -L cli` runs it alone.
if(TARGET sparsefac_cli)
  find_program(BASH_EXECUTABLE bash REQUIRED)
  add_test(NAME cli
    COMMAND ${BASH_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli_test.sh
            $<TARGET_FILE:sparsefac_cli>)
  set_tests_properties(cli PROPERTIES LABELS cli TIMEOUT 120)
endif()
