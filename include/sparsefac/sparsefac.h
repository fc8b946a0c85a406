/*
 * libsparsefac — sparse matrix factorization (SDDMM, SGD MF, ALS MF) on CPU and CUDA.
 *
 * The one public header. Valid C99 and C++.
 *
 * Conventions
 * -----------
 * - Every function returns an sfac_status. On failure a message naming the offending argument,
 *   index or line is stored per thread; read it with sfac_last_error(). A successful call leaves
 *   the message of an earlier failure in place.
 * - Objects are opaque handles created by sfac_<object>_create*() and freed by
 *   sfac_<object>_destroy(). Destroy accepts NULL. Destroying a handle twice is undefined
 *   behaviour (the library detects it only on a best-effort basis): set your pointer to NULL.
 * - A failed call leaves every existing object exactly as it was, and writes no output handle.
 * - Objects keep their context's backend alive: a context may be destroyed before the matrices
 *   created from it. Objects passed to one call must come from contexts with the same backend
 *   and device.
 * - Threads: one context per thread is always safe. Calls that only read an object (download,
 *   sddmm inputs, queries) may run concurrently on the same object; calls that modify an object
 *   (upload, set_values, sddmm output) need exclusive access to that object.
 * - Indices are 0-based. Row/column indices are int32; nonzero counts and offsets are int64.
 * - Dense matrices are row-major.
 */
#ifndef SPARSEFAC_SPARSEFAC_H
#define SPARSEFAC_SPARSEFAC_H

#include <stddef.h>
#include <stdint.h>

/* ---- Version ------------------------------------------------------------------------------ */

#define SFAC_VERSION_MAJOR 0
#define SFAC_VERSION_MINOR 2
#define SFAC_VERSION_PATCH 0
#define SFAC_VERSION_NUMBER \
  (SFAC_VERSION_MAJOR * 10000 + SFAC_VERSION_MINOR * 100 + SFAC_VERSION_PATCH)
#define SFAC_VERSION_STRING "0.2.0"

/* ---- Export ------------------------------------------------------------------------------- */

#if defined(_WIN32)
#if defined(SFAC_BUILDING_LIBRARY)
#define SFAC_API __declspec(dllexport)
#else
#define SFAC_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define SFAC_API __attribute__((visibility("default")))
#else
#define SFAC_API
#endif

/* Enumerations have the underlying type int in C++ as in C, so that any integer a caller passes
 * where an enumeration is expected (a value a newer library added, or a wrong one) is a valid
 * value of the parameter's type, answered with a status, never undefined behaviour. */
#if defined(__cplusplus)
#define SFAC_ENUM_BASE : int
#else
#define SFAC_ENUM_BASE
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status ------------------------------------------------------------------------------- */

/* Values are pinned and only ever appended to. */
typedef enum sfac_status SFAC_ENUM_BASE {
  SFAC_OK = 0,
  SFAC_ERR_INVALID_ARGUMENT = 1,  /* NULL pointer, unknown enum value, bad flag, negative size */
  SFAC_ERR_INVALID_HANDLE = 2,    /* NULL or destroyed handle, handle of the wrong type */
  SFAC_ERR_OUT_OF_RANGE = 3,      /* index outside the matrix, dimension too large */
  SFAC_ERR_SHAPE_MISMATCH = 4,    /* operands whose dimensions do not fit together */
  SFAC_ERR_INVALID_VALUE = 5,     /* NaN or Inf where a finite number is required */
  SFAC_ERR_DUPLICATE_ENTRY = 6,   /* the same (row, col) twice under the error policy */
  SFAC_ERR_OUT_OF_MEMORY = 7,     /* host or device allocation failed */
  SFAC_ERR_DEVICE = 8,            /* CUDA driver/runtime/library failure */
  SFAC_ERR_IO = 9,                /* file cannot be opened, read or written */
  SFAC_ERR_PARSE = 10,            /* malformed file contents (message names the line) */
  SFAC_ERR_UNSUPPORTED = 11,      /* valid request this build or backend cannot serve */
  SFAC_ERR_NOT_CONVERGED = 12,    /* iterative solver stopped before its tolerance */
  SFAC_ERR_BUFFER_TOO_SMALL = 13, /* caller-provided buffer smaller than required */
  SFAC_ERR_CALLBACK = 14,         /* a user callback reported an error */
  SFAC_ERR_INTERNAL = 15          /* a bug in libsparsefac: please report it */
} sfac_status;

/* Static, human-readable name of a status ("out of range"); never NULL. */
SFAC_API const char* sfac_status_string(sfac_status status);

/* Message of the last failed call on this thread ("" if none). Valid until the next failing call
 * on the same thread. */
SFAC_API const char* sfac_last_error(void);

/* Forget the last error message of this thread. */
SFAC_API void sfac_clear_last_error(void);

/* Version of the library actually loaded (compare with SFAC_VERSION_* of the header). */
SFAC_API const char* sfac_version_string(void);
SFAC_API int sfac_version_number(void);

/* Build description as a JSON object: version, backends compiled in, CUDA architectures. */
SFAC_API const char* sfac_build_info(void);

/* ---- Context ------------------------------------------------------------------------------ */

typedef enum sfac_backend SFAC_ENUM_BASE {
  SFAC_BACKEND_AUTO = 0, /* CUDA when built with it and the device is usable, else CPU */
  SFAC_BACKEND_CPU = 1,
  SFAC_BACKEND_CUDA = 2
} sfac_backend;

typedef struct sfac_context sfac_context;

/* Creates a context.
 *   backend      AUTO, CPU or CUDA. CUDA without a usable device is SFAC_ERR_UNSUPPORTED (build
 *                without CUDA) or SFAC_ERR_DEVICE (no driver/device). AUTO resolves to CUDA
 *                where the build has it and `device` can be used, else to the CPU, never
 *                failing for want of a GPU; an AUTO context that resolved to CUDA runs on the
 *                CPU what the CUDA backend declines (training ranks above the CUDA trainers'
 *                limits: the ratings are copied to the host for that trainer) instead of
 *                returning SFAC_ERR_UNSUPPORTED. Operations without a CUDA implementation
 *                (fold-in of single users, predictions) compute on the host in any context.
 *   device       CUDA device ordinal (>= 0); ignored by the CPU backend.
 *   num_threads  host threads for CPU work; 0 = all available cores.
 *   seed         seed of every random choice the context makes (initialization, shuffles). */
SFAC_API sfac_status sfac_context_create(sfac_backend backend, int device, int num_threads,
                                         uint64_t seed, sfac_context** out);
SFAC_API sfac_status sfac_context_destroy(sfac_context* ctx);

/* The backend the context resolved to (never AUTO). */
SFAC_API sfac_status sfac_context_get_backend(const sfac_context* ctx, sfac_backend* out);
/* Device name, e.g. "CPU (8 threads)" or "NVIDIA H100 80GB HBM3"; owned by the context. */
SFAC_API sfac_status sfac_context_get_device_name(const sfac_context* ctx, const char** out);
SFAC_API sfac_status sfac_context_get_num_threads(const sfac_context* ctx, int* out);
SFAC_API sfac_status sfac_context_get_seed(const sfac_context* ctx, uint64_t* out);
/* Waits for all work queued on the context; reports asynchronous device faults. */
SFAC_API sfac_status sfac_context_synchronize(sfac_context* ctx);
/* CUDA contexts: queue the context's device work (sfac_sddmm and the like) on `stream`, a
 * cudaStream_t of the context's device passed as void*, so that it is ordered with the caller's
 * own work on that stream (NULL: the context's own stream again, the default). Work the context
 * queued on the previous stream runs before anything it queues on the new one; uploads,
 * downloads, plan creation and destroying objects stay ordered with the current stream (their
 * memory belongs to the context's own stream). The stream must stay valid until it is replaced
 * or the context and its objects are destroyed. Not thread-safe against other calls on the same
 * context. CPU contexts accept only NULL (SFAC_ERR_UNSUPPORTED otherwise). */
SFAC_API sfac_status sfac_context_set_stream(sfac_context* ctx, void* stream);
/* The stream the context's device work is queued on (its own stream unless set); NULL for CPU
 * contexts. Recording an event on it after a call marks the call's completion. */
SFAC_API sfac_status sfac_context_get_stream(const sfac_context* ctx, void** out);

/* Host memory budget: the bytes one object built for this context (a sparse matrix created
 * from arrays or read from a file, a dense matrix of a CPU context) may need. A larger one is
 * refused with SFAC_ERR_OUT_OF_MEMORY before anything is allocated, so that a file of a few
 * bytes declaring a huge shape cannot exhaust memory. 0, the default: the memory available to
 * the process when the object is built (Linux: MemAvailable, within the address-space limit).
 * bytes must be >= 0. Training on a CUDA device has its own budget, SFAC_OPT_DEVICE_MEMORY_LIMIT. */
SFAC_API sfac_status sfac_context_set_memory_limit(sfac_context* ctx, int64_t bytes);
SFAC_API sfac_status sfac_context_get_memory_limit(const sfac_context* ctx, int64_t* out);

/* Device memory budget of a CUDA context's inference: the bytes a model's device copy (made on
 * its first recommend, similar-items, evaluate, ranking-metrics or batched fold-in call, with
 * the factors, biases and the fold-in's item side) and one such call's scratch may take. A call
 * that would need more returns SFAC_ERR_OUT_OF_MEMORY with the bytes in sfac_last_error() and
 * writes nothing; the model stays usable (raise the limit, or use a CPU context's copy). 0, the
 * default: the memory the device has free. bytes must be >= 0; CPU contexts keep it unused.
 * Training has its own budget, SFAC_OPT_DEVICE_MEMORY_LIMIT. */
SFAC_API sfac_status sfac_context_set_device_memory_limit(sfac_context* ctx, int64_t bytes);
SFAC_API sfac_status sfac_context_get_device_memory_limit(const sfac_context* ctx, int64_t* out);

/* Number of usable CUDA devices: 0 when built without CUDA or when no driver is present. */
SFAC_API sfac_status sfac_cuda_device_count(int* out);

/* ---- Sparse matrices ---------------------------------------------------------------------- */

typedef struct sfac_sparse sfac_sparse;

/* Flags for sparse matrix creation and file reading. */
typedef enum sfac_sparse_flags SFAC_ENUM_BASE {
  SFAC_SPARSE_DEFAULT = 0,            /* duplicate (row, col) entries are an error */
  SFAC_SPARSE_SUM_DUPLICATES = 1 << 0 /* duplicate entries are summed */
} sfac_sparse_flags;

/* Creates a matrix from host COO triplets (any order). The library copies the data.
 * values may be NULL: every stored value is then 1 (a pattern matrix).
 * Entries are stored sorted by (row, column); values come back in that order. */
SFAC_API sfac_status sfac_sparse_create_coo(sfac_context* ctx, int64_t rows, int64_t cols,
                                            int64_t nnz, const int32_t* row_indices,
                                            const int32_t* col_indices, const float* values,
                                            uint32_t flags, sfac_sparse** out);

/* Creates a matrix from host CSR: row_offsets has rows + 1 entries, starts at 0 and never
 * decreases; col_indices and values hold nnz entries, and row_offsets[rows] must equal nnz
 * (else SFAC_ERR_INVALID_ARGUMENT). Columns within a row may be unsorted. */
SFAC_API sfac_status sfac_sparse_create_csr(sfac_context* ctx, int64_t rows, int64_t cols,
                                            const int64_t* row_offsets, const int32_t* col_indices,
                                            const float* values, int64_t nnz, uint32_t flags,
                                            sfac_sparse** out);

/* Creates a matrix from host CSC: col_offsets has cols + 1 entries, col_offsets[cols] = nnz. */
SFAC_API sfac_status sfac_sparse_create_csc(sfac_context* ctx, int64_t rows, int64_t cols,
                                            const int64_t* col_offsets, const int32_t* row_indices,
                                            const float* values, int64_t nnz, uint32_t flags,
                                            sfac_sparse** out);

/* Creates a matrix that shares the pattern of `pattern` and has its own values (in the canonical
 * row-major order; NULL = all zeros). The natural output of sfac_sddmm. */
SFAC_API sfac_status sfac_sparse_create_like(const sfac_sparse* pattern, const float* values,
                                             sfac_sparse** out);

SFAC_API sfac_status sfac_sparse_destroy(sfac_sparse* matrix);

/* Any output pointer may be NULL. */
SFAC_API sfac_status sfac_sparse_get_shape(const sfac_sparse* matrix, int64_t* rows, int64_t* cols,
                                           int64_t* nnz);

/* Downloads into caller-allocated arrays; any of them may be NULL to skip it.
 * COO: nnz entries each, sorted by (row, col). CSR: row_offsets has rows + 1 entries.
 * CSC: col_offsets has cols + 1 entries, entries sorted by (col, row).
 *
 * Capacities. Every call that writes into caller arrays takes their capacity in elements
 * (`capacity` for the arrays listed before it that share one length, `offsets_capacity` and the
 * like for the others; ignored for a NULL array). A capacity below what the call must write is
 * SFAC_ERR_BUFFER_TOO_SMALL, with the array and the elements it needs in sfac_last_error(), and
 * nothing is written; a negative capacity is SFAC_ERR_INVALID_ARGUMENT. */
SFAC_API sfac_status sfac_sparse_download_coo(const sfac_sparse* matrix, int32_t* row_indices,
                                              int32_t* col_indices, float* values,
                                              int64_t capacity);
SFAC_API sfac_status sfac_sparse_download_csr(const sfac_sparse* matrix, int64_t* row_offsets,
                                              int64_t offsets_capacity, int32_t* col_indices,
                                              float* values, int64_t capacity);
SFAC_API sfac_status sfac_sparse_download_csc(const sfac_sparse* matrix, int64_t* col_offsets,
                                              int64_t offsets_capacity, int32_t* row_indices,
                                              float* values, int64_t capacity);

/* Replaces the values (nnz of them, row-major order); they must be finite. */
SFAC_API sfac_status sfac_sparse_set_values(sfac_sparse* matrix, const float* values);

/* ---- Reordering --------------------------------------------------------------------------- */

/* A side of a sparse matrix. */
typedef enum sfac_axis SFAC_ENUM_BASE { SFAC_AXIS_ROWS = 0, SFAC_AXIS_COLS = 1 } sfac_axis;

/* The rows (SFAC_AXIS_ROWS: `rows` entries) or columns (SFAC_AXIS_COLS: `cols` entries) of
 * `matrix` ordered by nonzero count, most first; equal counts keep index order, so the order is
 * deterministic and the same on every backend. Degree order groups the dense rows and columns of
 * power-law data (ratings, graphs) for load balance and cache reuse. Computed where the matrix
 * lives (CUDA: a radix sort on the device; only `order` comes back). */
SFAC_API sfac_status sfac_sparse_degree_order(const sfac_sparse* matrix, sfac_axis axis,
                                              int32_t* order, int64_t capacity);

/* A new matrix with renumbered rows and columns: its row r is row row_order[r] of `matrix` and
 * its column c is column col_order[c], i.e. entry (row_order[r], col_order[c]) moves to (r, c)
 * with its value. row_order (rows entries) and col_order (cols entries) must each hold every index
 * of their side exactly once; NULL keeps that side's numbering. A degree order is such a
 * permutation. Built where the matrix lives. Permute the factors to match with
 * sfac_dense_permute_rows (A by row_order, B by col_order): sfac_sddmm on the permuted operands
 * gives the permuted product. */
SFAC_API sfac_status sfac_sparse_permute(const sfac_sparse* matrix, const int32_t* row_order,
                                         const int32_t* col_order, sfac_sparse** out);

/* ---- BALS tiled layout -------------------------------------------------------------------- */

/* The BALS layout (Chen et al., TPDS 2021) as an exchange format: the matrix cut into tiles of
 * tile_rows x tile_cols, numbered row-major over a ceil(rows / tile_rows) x
 * ceil(cols / tile_cols) grid (tile t = bi * ceil(cols / tile_cols) + bj covers rows
 * [bi * tile_rows, (bi + 1) * tile_rows) and columns [bj * tile_cols, (bj + 1) * tile_cols) of
 * the reordered numbering). Row r of tile t is segment s = t * tile_rows + r. Each tile lists its
 * distinct columns once (tile_col); each nonzero stores its local column: its position in that
 * list. See docs/bals-format.md.
 *
 * Size limit: tiles * tile_rows segments must not exceed 4 * (rows + cols + nnz) + 2^20 (tiles
 * far too small or far too large for the matrix); beyond it the calls answer
 * SFAC_ERR_INVALID_ARGUMENT rather than allocate. */
typedef enum sfac_bals_flags SFAC_ENUM_BASE {
  SFAC_BALS_DEFAULT = 0,     /* rows and columns keep their order (row_order/col_order are
                                identities) */
  SFAC_BALS_REORDER = 1 << 0 /* rows and columns by degree, most first (as
                                sfac_sparse_degree_order), before tiling */
} sfac_bals_flags;

/* Sizes of the BALS layout of `matrix` with tiles of tile_rows x tile_cols (0 = chosen by the
 * library: min(1024, rows) x min(256, cols), at least 1; negative is SFAC_ERR_INVALID_ARGUMENT)
 * and `flags` (sfac_bals_flags): the resolved tile sizes (*tile_rows_out, *tile_cols_out), the
 * number of tiles (*tiles) and the number of tile_col entries (*tile_col_count: nnz minus the
 * redundant columns). Any output may be NULL. */
SFAC_API sfac_status sfac_sparse_bals_sizes(const sfac_sparse* matrix, int64_t tile_rows,
                                            int64_t tile_cols, uint32_t flags,
                                            int64_t* tile_rows_out, int64_t* tile_cols_out,
                                            int64_t* tiles, int64_t* tile_col_count);

/* Downloads the layout into caller arrays (lengths from sfac_sparse_bals_sizes with the same
 * tile sizes and flags; nnz from sfac_sparse_get_shape):
 *   tile_ptr   tiles + 1 entries: offsets of each tile's distinct columns in tile_col
 *              (tile_ptr[t] == tile_ptr[t + 1]: an empty tile)
 *   tile_col   tile_col_count entries: each tile's distinct (reordered) global columns, in order
 *              of first appearance scanning the tile's rows top to bottom, each row left to right
 *   seg_ptr    tiles * tile_rows + 1 entries: segment s = t * tile_rows + r is row r of tile t
 *              (rows past the matrix's last row are empty segments); offsets into seg_col and
 *              values
 *   seg_col    nnz entries: each nonzero's local column, its position in its tile's slice
 *              tile_col[tile_ptr[t] .. tile_ptr[t + 1])
 *   values     nnz entries: values, tile by tile, segment by segment, by column within a segment
 *   row_order  rows entries: row_order[r'] = original row of reordered row r'
 *   col_order  cols entries: col_order[c'] = original column of reordered column c'
 * Any array may be NULL to skip it. Each array's capacity follows it (seg_col and values share
 * `capacity`). */
SFAC_API sfac_status sfac_sparse_download_bals(
    const sfac_sparse* matrix, int64_t tile_rows, int64_t tile_cols, uint32_t flags,
    int64_t* tile_ptr, int64_t tile_ptr_capacity, int32_t* tile_col, int64_t tile_col_capacity,
    int64_t* seg_ptr, int64_t seg_ptr_capacity, int32_t* seg_col, float* values, int64_t capacity,
    int32_t* row_order, int64_t row_order_capacity, int32_t* col_order,
    int64_t col_order_capacity);

/* Creates a matrix from its BALS arrays (as sfac_sparse_download_bals writes them, with the
 * lengths listed there; tile_col holds tile_col_count = tile_ptr[tiles] entries, seg_col and
 * values nnz = seg_ptr[tiles * tile_rows]: each count must match its pointer array). The tile sizes must be given, >= 1.
 * tile_ptr and seg_ptr are required; tile_col may be NULL only when tile_ptr[tiles] = 0 and
 * seg_col only when nnz = 0. Every pointer, offset and index is checked: tile_ptr and seg_ptr
 * start at 0 and never decrease, tile_ptr[tiles] <= nnz and no tile lists more columns than it
 * has nonzeros; tile columns lie in their tile's column range (reordered numbering) and are
 * distinct within a tile; local columns index the tile's slice of tile_col; segments past the
 * matrix's last row are empty; a row holds a column once (no duplicates); row_order (rows
 * entries) and col_order (cols entries) are permutations (NULL = identity); values (nnz entries)
 * are finite (NULL = all 1). Entries within a segment may come in any order. The first
 * violation is SFAC_ERR_INVALID_ARGUMENT (SFAC_ERR_OUT_OF_RANGE for an index out of range,
 * SFAC_ERR_DUPLICATE_ENTRY for a repeated entry, SFAC_ERR_INVALID_VALUE for a non-finite value),
 * its message naming the array, the tile or segment and the position; *out is then untouched.
 * The matrix is stored in the original numbering (the permutations undone), like any other. */
SFAC_API sfac_status sfac_sparse_create_bals(
    sfac_context* ctx, int64_t rows, int64_t cols, int64_t tile_rows, int64_t tile_cols,
    const int64_t* tile_ptr, const int32_t* tile_col, int64_t tile_col_count,
    const int64_t* seg_ptr, const int32_t* seg_col, const float* values, int64_t nnz,
    const int32_t* row_order, const int32_t* col_order, sfac_sparse** out);

/* ---- Dense matrices ----------------------------------------------------------------------- */

typedef enum sfac_dtype SFAC_ENUM_BASE {
  SFAC_DTYPE_FLOAT32 = 0,
  SFAC_DTYPE_FLOAT16 = 1, /* storage only; arithmetic in float32 */
  SFAC_DTYPE_BFLOAT16 = 2 /* storage only; arithmetic in float32 */
} sfac_dtype;

typedef struct sfac_dense sfac_dense;

/* Creates a rows x cols row-major matrix (cols >= 1) stored as dtype. data (rows * cols floats,
 * finite) is converted to dtype; NULL = zeros. */
SFAC_API sfac_status sfac_dense_create(sfac_context* ctx, int64_t rows, int64_t cols,
                                       sfac_dtype dtype, const float* data, sfac_dense** out);
SFAC_API sfac_status sfac_dense_destroy(sfac_dense* matrix);
SFAC_API sfac_status sfac_dense_get_shape(const sfac_dense* matrix, int64_t* rows, int64_t* cols);
SFAC_API sfac_status sfac_dense_get_dtype(const sfac_dense* matrix, sfac_dtype* out);
/* Replaces the contents with rows * cols finite floats. */
SFAC_API sfac_status sfac_dense_upload(sfac_dense* matrix, const float* data);
/* Copies the contents (converted to float) into rows * cols floats (capacity: see "Capacities"
 * above sfac_sparse_download_coo). */
SFAC_API sfac_status sfac_dense_download(const sfac_dense* matrix, float* data, int64_t capacity);
/* A new matrix of the same dtype whose row r is row order[r] of `matrix`; order (rows entries)
 * must hold every row index exactly once. The inverse permutation (inverse[order[r]] = r) undoes
 * it, e.g. to return factors trained on a permuted matrix to the original numbering. */
SFAC_API sfac_status sfac_dense_permute_rows(const sfac_dense* matrix, const int32_t* order,
                                             sfac_dense** out);

/* ---- Files -------------------------------------------------------------------------------- */

typedef enum sfac_file_format SFAC_ENUM_BASE {
  SFAC_FORMAT_AUTO = 0,          /* by extension/content: .mtx/.mm -> Matrix Market, ".dat" with
                                    "::" -> MovieLens dat, ".csv" -> CSV, else triplets */
  SFAC_FORMAT_MATRIX_MARKET = 1, /* coordinate real|integer|pattern, general|symmetric */
  SFAC_FORMAT_TRIPLETS = 2,      /* LIBMF "row col value" or MovieLens u.data
                                    "user<TAB>item<TAB>rating<TAB>timestamp": fields separated
                                    by blanks/tabs, fields after the third ignored */
  SFAC_FORMAT_MOVIELENS_DAT = 3, /* ratings.dat: user::item::rating::timestamp */
  SFAC_FORMAT_CSV = 4            /* ratings.csv: one header line, then user,item,rating[,...] */
} sfac_file_format;

/* Flags for sfac_read_sparse, combinable with sfac_sparse_flags. */
typedef enum sfac_read_flags SFAC_ENUM_BASE {
  SFAC_READ_REMAP_IDS = 1 << 8, /* map each side's distinct ids to 0..n-1 in ascending id order
                                   and return the maps */
  SFAC_READ_ONE_BASED = 1 << 9  /* ids in triplet/MovieLens/CSV files start at 1 (subtract 1);
                                   Matrix Market is always 1-based */
} sfac_read_flags;

/* Map from dense 0-based indices to the original ids of a file. */
typedef struct sfac_idmap sfac_idmap;

/* Reads a sparse matrix. Without SFAC_READ_REMAP_IDS ids are used as indices and the shape is
 * (max row + 1, max col + 1) for triplet formats, the header's for Matrix Market; the map
 * outputs are then set to NULL. row_ids and col_ids may be NULL when the maps are not wanted.
 * Parse errors name the file and line: "ratings.csv:17: expected 3 fields, found 2"; a duplicate
 * entry (without SFAC_SPARSE_SUM_DUPLICATES) names both lines and the ids as written:
 * "ratings.csv:9: duplicate entry (row 4, col 7), first given on line 3 (...)". */
SFAC_API sfac_status sfac_read_sparse(sfac_context* ctx, const char* path, sfac_file_format format,
                                      uint32_t flags, sfac_sparse** out, sfac_idmap** row_ids,
                                      sfac_idmap** col_ids);

/* Writes a Matrix Market "coordinate real general" file (1-based, full float precision). */
SFAC_API sfac_status sfac_write_matrix_market(const sfac_sparse* matrix, const char* path);

SFAC_API sfac_status sfac_idmap_destroy(sfac_idmap* map);
SFAC_API sfac_status sfac_idmap_get_size(const sfac_idmap* map, int64_t* out);
/* original_ids[i] = the file's id of index i, for all size() indices. */
SFAC_API sfac_status sfac_idmap_get_ids(const sfac_idmap* map, int64_t* original_ids,
                                        int64_t capacity);
/* indices[i] = index of original_ids[i], or -1 when the id did not occur in the file. */
SFAC_API sfac_status sfac_idmap_lookup(const sfac_idmap* map, int64_t count,
                                       const int64_t* original_ids, int32_t* indices);

/* ---- SDDMM -------------------------------------------------------------------------------- */

/* What sfac_sddmm writes at every nonzero (i, j) of S, with d = dot(A[i,:], B[j,:]):
 *   SCALED    P_ij = alpha * d * S_ij        + beta * P_ij
 *   PATTERN   P_ij = alpha * d               + beta * P_ij   (cuSPARSE semantics)
 *   RESIDUAL  P_ij = alpha * (S_ij - d)      + beta * P_ij   (training loss)
 * With beta == 0 the old values of P are not read (NaN in P does not propagate). */
typedef enum sfac_sddmm_mode SFAC_ENUM_BASE {
  SFAC_SDDMM_SCALED = 0,
  SFAC_SDDMM_PATTERN = 1,
  SFAC_SDDMM_RESIDUAL = 2
} sfac_sddmm_mode;

/* Algorithm choice; AUTO picks from the pattern statistics. A backend without the requested
 * algorithm answers SFAC_ERR_UNSUPPORTED. */
typedef enum sfac_sddmm_algorithm SFAC_ENUM_BASE {
  SFAC_SDDMM_ALG_AUTO = 0,
  SFAC_SDDMM_ALG_ROW_SPLIT = 1, /* work split by rows; A's row reused across the row */
  SFAC_SDDMM_ALG_NNZ_SPLIT = 2, /* work split into equal nonzero ranges; robust to skew */
  SFAC_SDDMM_ALG_TILED = 3,     /* (CUDA) column-band tiles with B in shared memory; cells
                                   with A and B in shared memory on patterns at least 2% dense;
                                   dense tensor-core tiles for 16-bit factors on dense patterns
                                   and on the dense corners of power-law patterns; the nonzeros
                                   in L2 band order (column bands whose slice of B stays in L2)
                                   where B outgrows L2 or float32 rows are 512 bytes or more */
  SFAC_SDDMM_ALG_CUSPARSE = 4   /* (CUDA) cusparseSDDMM of the CUDA toolkit for float32 factors
                                   (SCALED and RESIDUAL add one elementwise pass); 16-bit factors
                                   run the kernels AUTO would choose. Patterns of fewer than 2^31
                                   nonzeros. AUTO picks it where it is predicted to be faster
                                   than the library's own kernels (small, dense patterns) */
} sfac_sddmm_algorithm;

/* Analysis of one sparsity pattern for one K, reusable across sfac_sddmm calls on any matrix
 * that shares the pattern (created from the same handle with sfac_sparse_create_like). A plan
 * may hold device tables larger than the pattern itself (CUDA: up to ~16 bytes per nonzero when
 * it lists the dense corners of a power-law pattern for 16-bit factors, and 16 more when it
 * stores the L2 band order). */
typedef struct sfac_sddmm_plan sfac_sddmm_plan;

SFAC_API sfac_status sfac_sddmm_plan_create(sfac_context* ctx, const sfac_sparse* pattern,
                                            int64_t k, sfac_sddmm_algorithm algorithm,
                                            sfac_sddmm_plan** out);
SFAC_API sfac_status sfac_sddmm_plan_destroy(sfac_sddmm_plan* plan);
/* The algorithm the plan resolved to (never AUTO). */
SFAC_API sfac_status sfac_sddmm_plan_get_algorithm(const sfac_sddmm_plan* plan,
                                                   sfac_sddmm_algorithm* out);

/* P = f(A * B^T, S) at the nonzeros of S (see sfac_sddmm_mode). A is M x K, B is N x K, S is
 * M x N; P must have the pattern of S (S itself, or a matrix made by sfac_sparse_create_like
 * from S or P, or any matrix with identical row offsets and columns). P may be S.
 * plan may be NULL (the call then analyses the pattern itself). */
SFAC_API sfac_status sfac_sddmm(sfac_context* ctx, sfac_sddmm_mode mode, float alpha,
                                const sfac_dense* a, const sfac_dense* b, const sfac_sparse* s,
                                float beta, sfac_sparse* p, const sfac_sddmm_plan* plan);

/* ---- Training ----------------------------------------------------------------------------- */

typedef enum sfac_algorithm SFAC_ENUM_BASE {
  SFAC_ALGO_ALS = 0, /* explicit-feedback ALS: least squares on the observed ratings */
  SFAC_ALGO_IALS =
      1,            /* implicit-feedback ALS (Hu-Koren-Volinsky): all cells, confidence-weighted */
  SFAC_ALGO_SGD = 2 /* stochastic gradient descent on the observed ratings (cuMF_SGD/LIBMF) */
} sfac_algorithm;

/* Training options, set by value on an sfac_train_options handle. Values are pinned: a new
 * option is a new value. Ranges of values: 1-99 all algorithms, 100-199 ALS/IALS, 200-299 SGD.
 * An option an algorithm does not use is accepted and ignored. Unknown values answer
 * SFAC_ERR_UNSUPPORTED, so callers can probe newer options against older libraries. */
typedef enum sfac_option SFAC_ENUM_BASE {
  SFAC_OPT_RANK = 1,          /* int >= 1; factor length k. Default 32 */
  SFAC_OPT_ITERATIONS = 2,    /* int >= 0; epochs run by sfac_train. Default 15 (ALS), 20 (SGD) */
  SFAC_OPT_LAMBDA = 3,        /* double >= 0; sets LAMBDA_USER and LAMBDA_ITEM. Default 0.05
                                 (ALS, SGD), 0.01 (IALS) */
  SFAC_OPT_LAMBDA_USER = 4,   /* double >= 0; regularization of user factors (lambda_p) */
  SFAC_OPT_LAMBDA_ITEM = 5,   /* double >= 0; regularization of item factors (lambda_q) */
  SFAC_OPT_USE_BIASES = 6,    /* int 0/1; learn global mean + user and item biases (ALS, SGD).
                                 Default 0 */
  SFAC_OPT_INIT_SCALE = 7,    /* double > 0; initial factors ~ N(0, (scale / sqrt(rank))^2).
                                 Default 0.1 (ALS, IALS), 1 (SGD) */
  SFAC_OPT_DETERMINISTIC = 8, /* int 0/1; bit-reproducible results for a fixed seed and thread
                                 count (SGD then runs conflict-free blocks). Default 0 */
  SFAC_OPT_DEVICE_MEMORY_LIMIT = 9, /* int >= 0; bytes of device memory a CUDA trainer may
                                       hold; less than its data needs is
                                       SFAC_ERR_OUT_OF_MEMORY at sfac_trainer_create. ALS: 0 =
                                       its data plus a quarter of the memory free at its start.
                                       SGD: ratings that do not fit (0 = 90% of the free
                                       memory) stay on the host and are streamed through the
                                       device each epoch; the factors must fit. CPU trainers
                                       ignore it. Default 0 */
  SFAC_OPT_FACTOR_DTYPE = 10,       /* sfac_dtype; how factors are stored while training:
                                       ALS and IALS round a row (to nearest even) to this type
                                       after each solve, and the next half-sweep reads the
                                       rounded values; SGD stores every updated row rounded (on a
                                       CUDA context a user's row once per run of its ratings,
                                       held as float in between). 16-bit storage halves the bytes
                                       the CUDA
                                       trainers move and lets ALS form the normal equations on
                                       16-bit tensor cores; arithmetic stays float32. Models keep
                                       float factors (the rounded values; SGD's times the square
                                       root of its rating scale). FLOAT16 needs |factors| < 65504
                                       (larger is a non-finite model, as any divergence).
                                       Default SFAC_DTYPE_FLOAT32 */

  SFAC_OPT_ALS_REGULARIZATION = 100, /* sfac_regularization. Default SFAC_REG_WEIGHTED (ALS),
                                        SFAC_REG_PLAIN (IALS) */
  SFAC_OPT_ALS_SOLVER = 101,         /* sfac_solver. Default SFAC_SOLVER_CHOLESKY */
  SFAC_OPT_ALS_CG_STEPS = 102,       /* int >= 1; CG steps per row and half-sweep. Default 3 */
  SFAC_OPT_IMPLICIT_ALPHA = 103,     /* double >= 0; confidence c = 1 + alpha * r. Default 40 */
  SFAC_OPT_ALS_REORDER = 104,        /* sfac_reorder; renumber users and items before training
                                        (the model keeps the caller's ids). Default
                                        SFAC_REORDER_AUTO */

  SFAC_OPT_SGD_LEARNING_RATE = 200, /* double > 0; alpha of gamma_t = alpha / (1 + beta t^1.5).
                                       Default 0.08 */
  SFAC_OPT_SGD_DECAY = 201,         /* double >= 0; beta of the schedule. Default 0.3 */
  SFAC_OPT_SGD_SCALE_RATINGS = 202, /* int 0/1; train on ratings divided by their standard
                                       deviation, as cuMF_SGD does. Default 1 */
  SFAC_OPT_SGD_WORKERS = 203,       /* int >= 0; SGD workers that update at the same time on a
                                       CUDA device (each a warp with its own users; items are
                                       shared, Hogwild). More run faster but lose more updates to
                                       collisions on popular items. 0 = automatic: as many as
                                       fit the device, at most one per 4096 ratings. The CPU
                                       backend runs one worker per context thread. Default 0 */
  SFAC_OPT_SGD_SCHEDULE = 204       /* sfac_sgd_schedule; how CUDA SGD workers share the items.
                                       Deterministic training runs its own block grid, and the
                                       CPU backend LIBMF-style conflict-free blocks, whatever
                                       this says. Default SFAC_SGD_HOGWILD */
} sfac_option;

/* Schedules of SGD on a CUDA device (cuMF_SGD section 5). Either way each worker owns a set of
 * users, so no update of a user's row is lost.
 * HOGWILD: every worker walks its users' ratings in a random order and updates any item without
 * locks; two workers on one item at once lose one's update (rare but not never on popular
 * items). The faster one.
 * WAVEFRONT: the items are cut into ranges (two per worker) locked through a 1-D array; a
 * worker runs its ratings range by range, in its own random order of the ranges, each while
 * it holds that range's lock, so no update is lost. Fewer workers (about sqrt(nnz / 64), and at
 * most half the items) and shorter runs per user make it slower. */
typedef enum sfac_sgd_schedule SFAC_ENUM_BASE {
  SFAC_SGD_HOGWILD = 0,
  SFAC_SGD_WAVEFRONT = 1
} sfac_sgd_schedule;

/* Regularization of ALS: PLAIN adds lambda * I to every normal equation (implicit library);
 * WEIGHTED adds lambda * n_u * I, n_u = the row's number of ratings (ALS-WR: Spark, cuMF). */
typedef enum sfac_regularization SFAC_ENUM_BASE { SFAC_REG_PLAIN = 0, SFAC_REG_WEIGHTED = 1 } sfac_regularization;

/* How ALS and IALS number users and items while training. DEGREE trains on a copy of the
 * ratings with users and items by rating count, most first (sfac_sparse_degree_order), so that
 * the rows many segments read lie together; starting factors are drawn by the caller's ids and
 * the model, loss and validation are the caller's numbering, so the result differs from NONE only
 * by the order of floating-point sums. The copy (the ratings' pattern and values again) lives as
 * long as the trainer. AUTO is DEGREE on a CUDA context, where it is measured faster, and NONE on
 * the CPU. */
typedef enum sfac_reorder SFAC_ENUM_BASE {
  SFAC_REORDER_NONE = 0,
  SFAC_REORDER_DEGREE = 1,
  SFAC_REORDER_AUTO = 2
} sfac_reorder;

/* Linear solver of ALS: exact Cholesky (LAPACK potrf/potrs) or warm-started conjugate gradient
 * with SFAC_OPT_ALS_CG_STEPS steps (cheaper per epoch for large ranks). */
typedef enum sfac_solver SFAC_ENUM_BASE { SFAC_SOLVER_CHOLESKY = 0, SFAC_SOLVER_CG = 1 } sfac_solver;

typedef struct sfac_train_options sfac_train_options;

/* Per-epoch progress: epoch counts from 1; train_loss is the algorithm's objective on the
 * training data (regularization included); validation_rmse is NaN without a validation matrix.
 * Return 0 to go on, a positive value to stop early (training ends successfully), a negative
 * value to abort with SFAC_ERR_CALLBACK. */
typedef int (*sfac_epoch_callback)(int epoch, double train_loss, double validation_rmse,
                                   double seconds, void* user_data);

/* Options with the defaults of `algorithm`. */
SFAC_API sfac_status sfac_train_options_create(sfac_algorithm algorithm, sfac_train_options** out);
SFAC_API sfac_status sfac_train_options_destroy(sfac_train_options* options);
SFAC_API sfac_status sfac_train_options_set_int(sfac_train_options* options, sfac_option option,
                                                int64_t value);
SFAC_API sfac_status sfac_train_options_set_double(sfac_train_options* options, sfac_option option,
                                                   double value);
SFAC_API sfac_status sfac_train_options_get_int(const sfac_train_options* options,
                                                sfac_option option, int64_t* out);
SFAC_API sfac_status sfac_train_options_get_double(const sfac_train_options* options,
                                                   sfac_option option, double* out);
/* Held ratings reported as validation_rmse each epoch (NULL to clear). The options keep the
 * matrix alive; it must have the training matrix's shape. */
SFAC_API sfac_status sfac_train_options_set_validation(sfac_train_options* options,
                                                       const sfac_sparse* validation);
SFAC_API sfac_status sfac_train_options_set_callback(sfac_train_options* options,
                                                     sfac_epoch_callback callback, void* user_data);

typedef struct sfac_model sfac_model;

/* Trains a model on `ratings` (users x items) and returns it. Runs SFAC_OPT_ITERATIONS epochs
 * unless the callback stops earlier. The context's seed drives initialization and shuffling.
 * `ratings` belongs to `ctx`; SGD on a CUDA context also takes ratings of a CPU context (host
 * memory), so that ratings larger than the device need never be uploaded: the trainer copies
 * them into its own order and streams them through the device when they exceed its budget
 * (SFAC_OPT_DEVICE_MEMORY_LIMIT). Other mixes are SFAC_ERR_INVALID_ARGUMENT. */
SFAC_API sfac_status sfac_train(sfac_context* ctx, const sfac_sparse* ratings,
                                const sfac_train_options* options, sfac_model** out);

/* Step-wise training, for callers that own the loop (language bindings, custom schedules).
 * The trainer copies the options and keeps the ratings alive. */
typedef struct sfac_trainer sfac_trainer;
SFAC_API sfac_status sfac_trainer_create(sfac_context* ctx, const sfac_sparse* ratings,
                                         const sfac_train_options* options, sfac_trainer** out);
SFAC_API sfac_status sfac_trainer_destroy(sfac_trainer* trainer);
/* Runs `epochs` more epochs (the callback, if any, is called after each; a positive return
 * stops early). *epochs_done (may be NULL) receives the total epochs run so far. */
SFAC_API sfac_status sfac_trainer_run(sfac_trainer* trainer, int epochs, int* epochs_done);
/* The objective after the last epoch (per training rating, regularization included); NaN before
 * the first epoch. Computed on request (one pass over the ratings), then cached. */
SFAC_API sfac_status sfac_trainer_get_loss(sfac_trainer* trainer, double* out);
/* A snapshot of the current factors as an independent model. */
SFAC_API sfac_status sfac_trainer_get_model(sfac_trainer* trainer, sfac_model** out);

/* ---- Models ------------------------------------------------------------------------------- */

SFAC_API sfac_status sfac_model_destroy(sfac_model* model);
/* Any output may be NULL. */
SFAC_API sfac_status sfac_model_get_shape(const sfac_model* model, int64_t* users, int64_t* items,
                                          int64_t* rank);
SFAC_API sfac_status sfac_model_get_algorithm(const sfac_model* model, sfac_algorithm* out);
/* users x rank and items x rank row-major floats. Every model call that writes into caller
 * arrays takes their capacity in elements, as described above sfac_sparse_download_coo. */
SFAC_API sfac_status sfac_model_get_user_factors(const sfac_model* model, float* out,
                                                 int64_t capacity);
SFAC_API sfac_status sfac_model_get_item_factors(const sfac_model* model, float* out,
                                                 int64_t capacity);
/* Biases: *has_biases = 0 when the model has none (then nothing else is written). global_mean
 * is one float, user_biases users floats, item_biases items floats; each may be NULL. */
SFAC_API sfac_status sfac_model_get_biases(const sfac_model* model, int* has_biases,
                                           float* global_mean, float* user_biases,
                                           int64_t user_capacity, float* item_biases,
                                           int64_t item_capacity);
/* Root mean square and mean absolute error on the nonzeros of `ratings` (either may be NULL). */
SFAC_API sfac_status sfac_model_evaluate(const sfac_model* model, const sfac_sparse* ratings,
                                         double* rmse, double* mae);

/* Replaces the factors (finite floats, same shapes as the get functions). */
SFAC_API sfac_status sfac_model_set_user_factors(sfac_model* model, const float* factors);
SFAC_API sfac_status sfac_model_set_item_factors(sfac_model* model, const float* factors);

/* scores[i] = predicted rating of (users[i], items[i]) for i < count. */
SFAC_API sfac_status sfac_model_predict(const sfac_model* model, int64_t count,
                                        const int32_t* users, const int32_t* items, float* scores);

/* Ranking quality on held-out interactions: for every user with at least one nonzero in
 * `test`, the top k items by score (excluding the user's nonzeros in `exclude`, which may be
 * NULL) are compared with the user's test items; results are averaged over those users.
 * Any output may be NULL. */
SFAC_API sfac_status sfac_model_ranking_metrics(const sfac_model* model, const sfac_sparse* exclude,
                                                const sfac_sparse* test, int k, double* precision,
                                                double* recall, double* ndcg, double* map);

/* Top-n items for each of `count` users, best first. out_items and out_scores hold
 * count * n entries (row i for users[i]); slots beyond the candidates are filled with item -1
 * and score -INFINITY. exclude (may be NULL): a users x items matrix whose nonzeros are never
 * recommended (e.g. the training ratings). allowed_items (may be NULL): when given, only these
 * `allowed_count` items are candidates. */
SFAC_API sfac_status sfac_model_recommend(const sfac_model* model, int64_t count,
                                          const int32_t* users, int n, const sfac_sparse* exclude,
                                          int64_t allowed_count, const int32_t* allowed_items,
                                          int32_t* out_items, float* out_scores,
                                          int64_t capacity);

/* The n items most similar to each of `count` items by cosine similarity of their factors, best
 * first, the item itself excluded; layout as in sfac_model_recommend. */
SFAC_API sfac_status sfac_model_similar_items(const sfac_model* model, int64_t count,
                                              const int32_t* items, int n, int32_t* out_items,
                                              float* out_scores, int64_t capacity);

typedef enum sfac_similarity SFAC_ENUM_BASE {
  SFAC_SIMILARITY_COSINE = 0,       /* dot / (|a| |b|); 0 where either factor row is all zeros */
  SFAC_SIMILARITY_INNER_PRODUCT = 1 /* dot of the factor rows (biases not included) */
} sfac_similarity;

/* The n users (side SFAC_AXIS_ROWS) or items (SFAC_AXIS_COLS) most similar to each of `count`
 * of the same side (`ids`), best first (ties by the lower id), the query itself excluded; layout
 * as in sfac_model_recommend. sfac_model_similar_items is (SFAC_AXIS_COLS,
 * SFAC_SIMILARITY_COSINE). A model of a CUDA context answers on its device. */
SFAC_API sfac_status sfac_model_similar(const sfac_model* model, sfac_axis side,
                                        sfac_similarity similarity, int64_t count,
                                        const int32_t* ids, int n, int32_t* out_ids,
                                        float* out_scores, int64_t capacity);

/* Fold-in: the factors a user with these ratings gets, solved against the fixed item factors
 * with the model's training objective (explicit least squares or implicit confidence weights,
 * same regularization), without retraining. factors receives rank floats (and *bias, may be
 * NULL, the user bias when the model has biases). With user >= 0 the model's row for that user
 * is also replaced; user = -1 only computes (a new user). */
SFAC_API sfac_status sfac_model_recalculate_user(sfac_model* model, int32_t user, int64_t count,
                                                 const int32_t* items, const float* ratings,
                                                 float* factors, int64_t capacity, float* bias);

/* Fold-in of many users in one call, each as sfac_model_recalculate_user folds in one: user i's
 * ratings are entries offsets[i] .. offsets[i + 1] - 1 of items and ratings (a CSR of count
 * rows: offsets holds count + 1 non-decreasing entries from 0). out_factors receives
 * count * rank floats (row i for user i; capacity in floats), out_biases (may be NULL) count
 * floats, each 0 for a model without biases. users (may be NULL: only compute): where
 * users[i] >= 0, that user's row of the model is also replaced; -1 computes a new user; a user
 * may appear once. Everything is checked before anything is written. A model of a CUDA context
 * solves the rows on its device (batched normal equations and Cholesky, as its ALS trainer
 * does); on any context each row matches sfac_model_recalculate_user's to float rounding. */
SFAC_API sfac_status sfac_model_recalculate_users(sfac_model* model, int64_t count,
                                                  const int32_t* users, const int64_t* offsets,
                                                  const int32_t* items, const float* ratings,
                                                  float* out_factors, int64_t capacity,
                                                  float* out_biases);

/* How fold-in (sfac_model_recalculate_user and _users) solves each user's normal equations:
 * SFAC_SOLVER_CHOLESKY (the default) gives their exact solution; SFAC_SOLVER_CG takes cg_steps
 * steps of conjugate gradient (cg_steps >= 1) from the user's current row for a user whose row
 * is replaced, from zero for a new one (user -1), as an ALS half-sweep with the CG solver moves a
 * row. A user without ratings gets zero factors either way. The setting belongs to this model
 * object: sfac_model_copy carries it, model files do not (a loaded model solves by Cholesky). */
SFAC_API sfac_status sfac_model_set_fold_in_solver(sfac_model* model, sfac_solver solver,
                                                   int32_t cg_steps);
SFAC_API sfac_status sfac_model_get_fold_in_solver(const sfac_model* model, sfac_solver* solver,
                                                   int32_t* cg_steps);

/* Versioned binary model file (magic, format version, endianness, dtype, dimensions, CRC-32).
 * A truncated, corrupted or foreign file is SFAC_ERR_PARSE (or SFAC_ERR_IO), never a crash. */
SFAC_API sfac_status sfac_model_save(const sfac_model* model, const char* path);
SFAC_API sfac_status sfac_model_load(sfac_context* ctx, const char* path, sfac_model** out);

/* Models and contexts: a model's inference calls run on the backend of its context (the one
 * that trained, loaded or copied it). A model of a CUDA context keeps a copy of its factors on
 * the device, made on its first recommend or similar-items call and remade after its factors
 * change. Save and load work from either kind of context. Moving a model between contexts is
 * one call: sfac_model_copy returns an independent copy of `model` (factors, biases, fold-in
 * settings) bound to `ctx`, which may have another backend or device, or to the context of
 * `model` when ctx is NULL. Either model may then change or be destroyed without the other. */
SFAC_API sfac_status sfac_model_copy(const sfac_model* model, sfac_context* ctx,
                                     sfac_model** out);
/* LIBMF's text model format (P and Q factor lines). */
SFAC_API sfac_status sfac_model_export_libmf(const sfac_model* model, const char* path);

/* ---- Data utilities ----------------------------------------------------------------------- */

typedef enum sfac_feedback SFAC_ENUM_BASE {
  SFAC_FEEDBACK_EXPLICIT = 0, /* ratings r = <u_i, v_j> + N(0, noise^2) */
  SFAC_FEEDBACK_IMPLICIT = 1  /* positive counts, observed where the planted affinity is high */
} sfac_feedback;

/* Synthetic data with a known answer, seeded by the context's seed (the same data on any thread
 * count; the work uses the context's threads). About `nnz` distinct
 * (user, item) cells are drawn with power-law degrees (skew in [0, 1): 0 = uniform, 0.5-0.7 is
 * typical of rating data) and shuffled ids; planted factors have unit-variance dot products.
 * EXPLICIT: value = planted dot + Gaussian noise, so the planted model's RMSE is `noise`.
 * IMPLICIT: only cells whose planted dot is in the top third are kept, with value
 * 1 + round(noise * |N(0,1)|) (a count); held-out cells are predictable from the factors.
 * user_factors and item_factors (may be NULL) receive the planted factors. */
SFAC_API sfac_status sfac_synthesize_ratings(sfac_context* ctx, sfac_feedback feedback,
                                             int64_t users, int64_t items, int64_t nnz,
                                             int64_t rank, double noise, double skew,
                                             sfac_sparse** ratings, sfac_dense** user_factors,
                                             sfac_dense** item_factors);

/* Splits the nonzeros of `ratings` into train and test matrices of the same shape: each
 * nonzero goes to test with probability test_fraction (in [0, 1]). */
SFAC_API sfac_status sfac_split_random(const sfac_sparse* ratings, double test_fraction,
                                       uint64_t seed, sfac_sparse** train, sfac_sparse** test);
/* Per-user leave-k-out: k random ratings of every user with more than k ratings go to test. */
SFAC_API sfac_status sfac_split_leave_k_out(const sfac_sparse* ratings, int64_t k, uint64_t seed,
                                            sfac_sparse** train, sfac_sparse** test);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SPARSEFAC_SPARSEFAC_H */
