package org.sparsefac;

/** Rating and matrix file formats that {@link SparseMatrix#read} understands. */
public enum FileFormat {
  /** By extension and content: .mtx/.mm, ".dat" with "::", .csv, else triplets. */
  AUTO(sfac_file_format.SFAC_FORMAT_AUTO),
  /** Matrix Market coordinate real|integer|pattern, general|symmetric (1-based). */
  MATRIX_MARKET(sfac_file_format.SFAC_FORMAT_MATRIX_MARKET),
  /** LIBMF "row col value" or MovieLens u.data, blank/tab separated. */
  TRIPLETS(sfac_file_format.SFAC_FORMAT_TRIPLETS),
  /** MovieLens ratings.dat: user::item::rating::timestamp. */
  MOVIELENS_DAT(sfac_file_format.SFAC_FORMAT_MOVIELENS_DAT),
  /** One header line, then user,item,rating[,...]. */
  CSV(sfac_file_format.SFAC_FORMAT_CSV);

  final int code;

  FileFormat(int code) {
    this.code = code;
  }
}
