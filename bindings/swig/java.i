/*
 * Java typemaps of the one SWIG interface (included by sparsefac.i before the C header).
 *
 * The generated layer is package-private inside org.sparsefac (classes Native, NativeJNI and
 * one class per C enum): bindings/java/src/main/java/org/sparsefac/ is the only caller, so users
 * never see handles, status codes or SWIG names.
 *
 * - Every opaque handle crosses as a Java long (its address); an output handle `sfac_x** out`
 *   is a long[1] that receives it. The idiomatic layer owns the handles (AutoCloseable). A CUDA
 *   stream (`void* stream`, `void** out`) crosses the same way, but nobody here owns it.
 * - Enums are int constants in package-private classes named after them (sfac_status.SFAC_OK);
 *   enum outputs are int[1].
 * - Arrays cross as Java primitive arrays, pinned or copied once per call by
 *   Get<Type>ArrayElements (never element by element). Inputs are released with JNI_ABORT (no
 *   copy back), outputs with mode 0. A null array becomes NULL, which the C API rejects with its
 *   own message wherever NULL is not allowed. Lengths are checked by the Java layer, which knows
 *   the shapes. The C API's capacities and counts (int64_t, in elements) stay separate long
 *   arguments: the Java layer passes each array's own length (.length; 0 for a null array), so
 *   the library's own check guards every pinned buffer it writes or reads.
 * - The epoch callback: a listener state (JavaVM*, global reference to the Java target, the
 *   pending Java exception) is created and destroyed by the Java layer, which passes its address
 *   as user_data; the trampoline attaches the calling thread when needed, calls the target, and
 *   turns a Java exception into -1 while keeping the throwable for the Java layer to rethrow as
 *   the cause of SFAC_ERR_CALLBACK.
 */

%include <enumtypeunsafe.swg>
%typemap(javaclassmodifiers) enum SWIGTYPE "final class"
%javaconst(1);

%pragma(java) jniclassclassmodifiers = "final class"
%pragma(java) moduleclassmodifiers = "final class"
%pragma(java) jniclasscode = %{
  static {
    NativeLibrary.load();
  }
%}

/* Built with -DSWIGWORDSIZE64 (bindings/java/CMakeLists.txt), so stdint.i declares int64_t as
 * `long`, as <stdint.h> does on LP64 Linux (pointers to it then match the header's prototypes);
 * Java's typemaps for C long are 32-bit, so 64-bit integers take those of long long. Seeds and
 * flags cross as Java long/int: their bit patterns are what matters. */
%apply long long { int64_t };
%apply long long { uint64_t };
%apply int { uint32_t };

/* ---- Handles ------------------------------------------------------------------------------ */

%define SFAC_JAVA_HANDLE(TYPE)
%typemap(jni) TYPE*, const TYPE* "jlong"
%typemap(jtype) TYPE*, const TYPE* "long"
%typemap(jstype) TYPE*, const TYPE* "long"
%typemap(javain) TYPE*, const TYPE* "$javainput"
%typemap(in) TYPE*, const TYPE* %{ $1 = ($1_ltype)(intptr_t)$input; %}

%typemap(jni) TYPE** "jlongArray"
%typemap(jtype) TYPE** "long[]"
%typemap(jstype) TYPE** "long[]"
%typemap(javain) TYPE** "$javainput"
%typemap(in) TYPE** (TYPE* handle = NULL) %{ $1 = $input ? &handle : NULL; %}
%typemap(argout) TYPE** {
  if ($input) {
    jlong address = (jlong)(intptr_t)handle$argnum;
    JCALL4(SetLongArrayRegion, jenv, $input, 0, 1, &address);
  }
}
%enddef

SFAC_JAVA_HANDLE(sfac_context)
SFAC_JAVA_HANDLE(sfac_sparse)
SFAC_JAVA_HANDLE(sfac_dense)
SFAC_JAVA_HANDLE(sfac_idmap)
SFAC_JAVA_HANDLE(sfac_sddmm_plan)
SFAC_JAVA_HANDLE(sfac_train_options)
SFAC_JAVA_HANDLE(sfac_trainer)
SFAC_JAVA_HANDLE(sfac_model)

/* ---- CUDA streams ------------------------------------------------------------------------- */

/* A cudaStream_t crosses as its address in a Java long, as JCuda's
 * cudaStream_t.getNativePointer() hands it out (0 = NULL); the stream out-parameter is a long[1],
 * like an output handle. */
%typemap(jni) void* stream "jlong"
%typemap(jtype) void* stream "long"
%typemap(jstype) void* stream "long"
%typemap(javain) void* stream "$javainput"
%typemap(in) void* stream %{ $1 = (void*)(intptr_t)$input; %}

%typemap(jni) void** out "jlongArray"
%typemap(jtype) void** out "long[]"
%typemap(jstype) void** out "long[]"
%typemap(javain) void** out "$javainput"
%typemap(in) void** out (void* stream = NULL) %{ $1 = $input ? &stream : NULL; %}
%typemap(argout) void** out {
  if ($input) {
    jlong address = (jlong)(intptr_t)stream$argnum;
    JCALL4(SetLongArrayRegion, jenv, $input, 0, 1, &address);
  }
}

/* ---- Primitive arrays --------------------------------------------------------------------- */

%define SFAC_JAVA_ARRAY(CTYPE, JNITYPE, JARRAY, JAVATYPE, NAME)
%typemap(jni) const CTYPE*, CTYPE* "JARRAY"
%typemap(jtype) const CTYPE*, CTYPE* "JAVATYPE[]"
%typemap(jstype) const CTYPE*, CTYPE* "JAVATYPE[]"
%typemap(javain) const CTYPE*, CTYPE* "$javainput"
%typemap(in) const CTYPE*, CTYPE* {
  $1 = NULL;
  if ($input) {
    $1 = ($1_ltype)JCALL2(Get##NAME##ArrayElements, jenv, $input, NULL);
    if (!$1) return $null;
  }
}
%typemap(freearg) const CTYPE* {
  if ($input) JCALL3(Release##NAME##ArrayElements, jenv, $input, (JNITYPE*)$1, JNI_ABORT);
}
%typemap(freearg) CTYPE* {
  if ($input) JCALL3(Release##NAME##ArrayElements, jenv, $input, (JNITYPE*)$1, 0);
}
%enddef

SFAC_JAVA_ARRAY(int32_t, jint, jintArray, int, Int)
SFAC_JAVA_ARRAY(int, jint, jintArray, int, Int)
SFAC_JAVA_ARRAY(int64_t, jlong, jlongArray, long, Long)
SFAC_JAVA_ARRAY(uint64_t, jlong, jlongArray, long, Long)
SFAC_JAVA_ARRAY(float, jfloat, jfloatArray, float, Float)
SFAC_JAVA_ARRAY(double, jdouble, jdoubleArray, double, Double)

/* ---- Enum and string outputs -------------------------------------------------------------- */

%define SFAC_JAVA_ENUM_OUT(TYPE)
%typemap(jni) TYPE* "jintArray"
%typemap(jtype) TYPE* "int[]"
%typemap(jstype) TYPE* "int[]"
%typemap(javain) TYPE* "$javainput"
%typemap(in) TYPE* (TYPE value = (TYPE)0) %{ $1 = $input ? &value : NULL; %}
%typemap(argout) TYPE* {
  if ($input) {
    jint code = (jint)value$argnum;
    JCALL4(SetIntArrayRegion, jenv, $input, 0, 1, &code);
  }
}
%enddef

SFAC_JAVA_ENUM_OUT(sfac_backend)
SFAC_JAVA_ENUM_OUT(sfac_dtype)
SFAC_JAVA_ENUM_OUT(sfac_sddmm_algorithm)
SFAC_JAVA_ENUM_OUT(sfac_algorithm)
SFAC_JAVA_ENUM_OUT(sfac_solver)

%typemap(jni) const char** "jobjectArray"
%typemap(jtype) const char** "String[]"
%typemap(jstype) const char** "String[]"
%typemap(javain) const char** "$javainput"
%typemap(in) const char** (const char* text = NULL) %{ $1 = $input ? ($1_ltype)&text : NULL; %}
%typemap(argout) const char** {
  if ($input && text$argnum) {
    jstring string = JCALL1(NewStringUTF, jenv, text$argnum);
    if (!string) return $null;
    JCALL3(SetObjectArrayElement, jenv, $input, 0, string);
    JCALL1(DeleteLocalRef, jenv, string);
  }
}

/* ---- Epoch callback ----------------------------------------------------------------------- */

%{
#include <stdlib.h>

typedef struct sfac_java_listener {
  JavaVM* vm;
  jobject target;   /* global reference; implements NativeEpochCallback */
  jmethodID on_epoch;
  jthrowable error; /* global reference to what the target threw, until taken */
} sfac_java_listener;

static int sfac_java_trampoline(int epoch, double train_loss, double validation_rmse,
                                double seconds, void* user_data) {
  sfac_java_listener* listener = (sfac_java_listener*)user_data;
  JNIEnv* env = NULL;
  int attached = 0;
  jint got = (*listener->vm)->GetEnv(listener->vm, (void**)&env, JNI_VERSION_1_8);
  if (got == JNI_EDETACHED) {
    /* Training may call back from a thread the JVM has never seen. */
    if ((*listener->vm)->AttachCurrentThread(listener->vm, (void**)&env, NULL) != JNI_OK) return -1;
    attached = 1;
  } else if (got != JNI_OK) {
    return -1;
  }
  jint answer = (*env)->CallIntMethod(env, listener->target, listener->on_epoch, (jint)epoch,
                                      (jdouble)train_loss, (jdouble)validation_rmse,
                                      (jdouble)seconds);
  jthrowable thrown = (*env)->ExceptionOccurred(env);
  if (thrown) {
    (*env)->ExceptionClear(env);
    if (!listener->error) listener->error = (jthrowable)(*env)->NewGlobalRef(env, thrown);
    (*env)->DeleteLocalRef(env, thrown);
    answer = -1;
  }
  if (attached) (*listener->vm)->DetachCurrentThread(listener->vm);
  return (int)answer;
}
%}

/* The Java layer passes the listener's address (0 = no callback). */
%typemap(jni) (sfac_epoch_callback callback, void* user_data) "jlong"
%typemap(jtype) (sfac_epoch_callback callback, void* user_data) "long"
%typemap(jstype) (sfac_epoch_callback callback, void* user_data) "long"
%typemap(javain) (sfac_epoch_callback callback, void* user_data) "$javainput"
%typemap(in) (sfac_epoch_callback callback, void* user_data) %{
  $2 = (void*)(intptr_t)$input;
  $1 = $2 ? sfac_java_trampoline : NULL;
%}

%typemap(in, numinputs = 0) JNIEnv* env %{ $1 = jenv; %}
%typemap(jni) jthrowable "jthrowable"
%typemap(jtype) jthrowable "Throwable"
%typemap(jstype) jthrowable "Throwable"
%typemap(out) jthrowable %{ $result = $1; %}
%typemap(javaout) jthrowable { return $jnicall; }

%inline %{
/* Address of a new listener state for `target` (a NativeEpochCallback), 0 with a Java exception
 * pending when it cannot be made. */
int64_t sfac_java_listener_create(JNIEnv* env, jobject target) {
  if (!target) return 0;
  sfac_java_listener* listener = (sfac_java_listener*)calloc(1, sizeof *listener);
  if (!listener) return 0;
  jclass type = (*env)->GetObjectClass(env, target);
  listener->on_epoch = (*env)->GetMethodID(env, type, "onEpoch", "(IDDD)I");
  (*env)->DeleteLocalRef(env, type);
  if (!listener->on_epoch || (*env)->GetJavaVM(env, &listener->vm) != JNI_OK) {
    free(listener);
    return 0;
  }
  listener->target = (*env)->NewGlobalRef(env, target);
  if (!listener->target) {
    free(listener);
    return 0;
  }
  return (int64_t)(intptr_t)listener;
}

/* What the target threw since the last call (a local reference), or null; forgets it. */
jthrowable sfac_java_listener_take_error(JNIEnv* env, int64_t address) {
  sfac_java_listener* listener = (sfac_java_listener*)(intptr_t)address;
  if (!listener || !listener->error) return NULL;
  jthrowable error = (jthrowable)(*env)->NewLocalRef(env, listener->error);
  (*env)->DeleteGlobalRef(env, listener->error);
  listener->error = NULL;
  return error;
}

void sfac_java_listener_destroy(JNIEnv* env, int64_t address) {
  sfac_java_listener* listener = (sfac_java_listener*)(intptr_t)address;
  if (!listener) return;
  if (listener->error) (*env)->DeleteGlobalRef(env, listener->error);
  (*env)->DeleteGlobalRef(env, listener->target);
  free(listener);
}
%}

/* The version macros are read through sfac_version_string(); the export macro is not an API. */
%ignore SFAC_VERSION_MAJOR;
%ignore SFAC_VERSION_MINOR;
%ignore SFAC_VERSION_PATCH;
%ignore SFAC_VERSION_NUMBER;
%ignore SFAC_VERSION_STRING;
