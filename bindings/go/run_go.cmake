# Runs the go tool for CMake (build target and ctest): `cmake -DGO=... -P run_go.cmake <args>`.
# Sets the environment a hermetic build of the binding needs: the build tree's sparsefac.pc,
# no module proxy (the module has no dependencies), caches inside the build tree, and the swig
# that CMake found first on PATH (go build runs `swig` for capi.swig).

# go does not track files that capi.swig includes from outside its package, nor (measured with
# go 1.19) the library directory pkg-config names: a test binary cached for another build tree
# kept that tree's rpath. A hash of those inputs in CGO_CFLAGS, part of go's cache key, makes
# an edit of go.i, sparsefac.i or the header, or another sparsefac.pc, rebuild the package.
set(_hash "")
foreach(_f IN LISTS SWIG_INPUTS ITEMS ${PKGCONFIG_DIR}/sparsefac.pc)
  file(SHA256 ${_f} _h)
  string(APPEND _hash ${_h})
endforeach()
string(SHA256 _hash "${_hash}")
string(SUBSTRING ${_hash} 0 16 _hash)

set(ENV{PKG_CONFIG_PATH} "${PKGCONFIG_DIR}")
set(ENV{GOFLAGS} "-mod=mod")
set(ENV{GOPROXY} "off")
set(ENV{GOCACHE} "${GO_CACHE}")
set(ENV{GOPATH} "${GO_PATH}")
set(ENV{CGO_ENABLED} "1")
set(ENV{CGO_CFLAGS} "-O2 -g -DSFAC_SWIG_INPUTS=${_hash}")
set(ENV{PATH} "${SWIG_DIR}:$ENV{PATH}")

# Arguments after -P <script> are CMAKE_ARGV<n>; collect those after the script's name.
set(_args "")
set(_take OFF)
math(EXPR _last "${CMAKE_ARGC} - 1")
foreach(_i RANGE ${_last})
  if(_take)
    list(APPEND _args "${CMAKE_ARGV${_i}}")
  elseif(CMAKE_ARGV${_i} MATCHES "run_go\\.cmake$")
    set(_take ON)
  endif()
endforeach()

execute_process(COMMAND ${GO} ${_args} RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "go ${_args} failed (${_rc})")
endif()
