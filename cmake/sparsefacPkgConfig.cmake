# Install-time generation of sparsefac.pc (run by `cmake --install`, see CMakeLists.txt).
# Generating it at install time makes `cmake --install <build> --prefix <dir>` produce a .pc
# file that points at <dir>, whatever prefix the build was configured with.
# Inputs, set by the install(CODE) that precedes this script: SFAC_PC_TEMPLATE, SFAC_PC_OUTPUT,
# SFAC_PC_LIBDIR_REL, SFAC_PC_INCLUDEDIR_REL, PROJECT_DESCRIPTION, PROJECT_VERSION.
set(SFAC_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
foreach(_kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${SFAC_PC_${_kind}_REL}")
    set(SFAC_PC_${_kind} "${SFAC_PC_${_kind}_REL}")
  else()
    set(SFAC_PC_${_kind} "\${prefix}/${SFAC_PC_${_kind}_REL}")
  endif()
endforeach()
configure_file("${SFAC_PC_TEMPLATE}" "${SFAC_PC_OUTPUT}" @ONLY)
if(IS_ABSOLUTE "${SFAC_PC_LIBDIR_REL}")
  set(_sfac_pc_dest "${SFAC_PC_LIBDIR_REL}/pkgconfig")
else()
  set(_sfac_pc_dest "${CMAKE_INSTALL_PREFIX}/${SFAC_PC_LIBDIR_REL}/pkgconfig")
endif()
file(INSTALL DESTINATION "${_sfac_pc_dest}" TYPE FILE FILES "${SFAC_PC_OUTPUT}")
