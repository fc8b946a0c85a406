/*
 * The one SWIG interface of libsparsefac. It wraps the public C header unchanged; what differs
 * between languages (how an output handle `sfac_x** out` comes back, how arrays cross, how the
 * epoch callback reaches the host language) lives in <lang>.i next to this file, included before
 * the header so that its typemaps apply to every declaration.
 *
 * Users never see this layer: bindings/<lang>/ wraps it in the language's own idioms.
 */
%module sparsefac

%{
#include <sparsefac/sparsefac.h>
%}

%include <stdint.i>

#if defined(SWIGPYTHON)
%include "python.i"
#elif defined(SWIGJAVA)
%include "java.i"
#elif defined(SWIGGO)
%include "go.i"
#elif defined(SWIGR)
%include "r.i"
#endif

/* A CUDA stream is the caller's cudaStream_t. Python, Java and Go pass it as an opaque integer
 * handle (<lang>.i: what torch and cupy, JCuda's getNativePointer() and Go's CUDA bindings
 * expose); R has no stream type to pass, so its contexts keep their own stream. */
#if defined(SWIGR)
%ignore sfac_context_set_stream;
%ignore sfac_context_get_stream;
#endif

#define SFAC_API
%include <sparsefac/sparsefac.h>
