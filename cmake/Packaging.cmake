# Install rules and the Debian package (docs/packaging.md). Included last from the top-level
# CMakeLists.txt. `cmake --build build --target package` writes
# build/flashstep_<version>_<arch>.deb with CPack's DEB generator:
#   /usr/bin/flashstep
#   /usr/share/flashstep/{assets/presets,assets/bench,shaders}   the data root (core/data_dir.h)
#   /usr/share/flashstep/gpu/results/...                         the pipeline model's measured figures
#   /usr/share/applications/flashstep.desktop                    the menu entry
#   /usr/share/icons/hicolor/{48x48,64x64,128x128,256x256,scalable}/apps/flashstep.{png,svg}
#   /usr/share/man/man1/flashstep.1.gz                            made from the --help texts
#   /usr/share/doc/flashstep/{copyright,changelog.gz}
#   /usr/lib/python3/dist-packages/flashstep/{*.py,_core*.so}     the Python module, when built
# The paths are fixed (bin, share), not GNUInstallDirs variables: core/data_dir.h finds the data
# at <exe dir>/../share/flashstep, and the two must agree.

# [SECTION] The program and its data
install(TARGETS flashstep RUNTIME DESTINATION bin)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/assets/presets ${CMAKE_SOURCE_DIR}/assets/bench
  DESTINATION share/flashstep/assets)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/shaders DESTINATION share/flashstep)
# The H200 results the pipeline model's measured figures are read from (app/pipeline_measured.cpp
# names the same files), at their paths under the data root.
foreach(results_file fa3/bench.txt fa3_ladder/softmax-overlap-after/bench.txt
    device-checks/defaults-f45-5-rounds/medians_bench.txt
    device-checks/targets-h200-2026-12-07/assets/bwd.json device-checks/targets-h200-2026-12-07/assets/bwd_causal.json)
  get_filename_component(results_dir ${results_file} DIRECTORY)
  install(FILES ${CMAKE_SOURCE_DIR}/gpu/results/${results_file} DESTINATION share/flashstep/gpu/results/${results_dir})
endforeach()

# [SECTION] The Python module (docs/python.md), when this build has it: the package's .py files
# and the extension _core.cpython-3XY-<arch>.so, in Debian's one folder for every python3 3.x
# (the extension's name carries its interpreter's version, so only that one imports it).
if(FLASHSTEP_HAVE_PYTHON)
  set(FLASHSTEP_PYTHON_DEST lib/python3/dist-packages/flashstep)
  install(TARGETS flashstep_python LIBRARY DESTINATION ${FLASHSTEP_PYTHON_DEST})
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/flashstep/ DESTINATION ${FLASHSTEP_PYTHON_DEST}
    FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
endif()

# [SECTION] The menu entry and the icon (packaging/icons/flashstep.svg, drawn for the project;
# the PNGs were rendered from it once with rsvg-convert -w N -h N, see docs/packaging.md).
install(FILES ${CMAKE_SOURCE_DIR}/packaging/flashstep.desktop DESTINATION share/applications)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/icons/flashstep.svg DESTINATION share/icons/hicolor/scalable/apps)
foreach(size 48 64 128 256)
  install(FILES ${CMAKE_SOURCE_DIR}/packaging/icons/flashstep-${size}.png
    DESTINATION share/icons/hicolor/${size}x${size}/apps RENAME flashstep.png)
endforeach()

# [SECTION] The manual page, written at build time from the program's --help texts
set(FLASHSTEP_MANPAGE ${CMAKE_BINARY_DIR}/packaging/flashstep.1)
add_custom_command(OUTPUT ${FLASHSTEP_MANPAGE}.gz
  COMMAND ${CMAKE_COMMAND} -DFLASHSTEP=$<TARGET_FILE:flashstep> -DVERSION=${PROJECT_VERSION}
    -DOUT=${FLASHSTEP_MANPAGE} -P ${CMAKE_SOURCE_DIR}/packaging/manpage.cmake
  DEPENDS flashstep ${CMAKE_SOURCE_DIR}/packaging/manpage.cmake
  COMMENT "Writing the manual page from flashstep's --help texts")
add_custom_target(flashstep_manpage ALL DEPENDS ${FLASHSTEP_MANPAGE}.gz)
install(FILES ${FLASHSTEP_MANPAGE}.gz DESTINATION share/man/man1)

# [SECTION] The package's documents: the copyright file and a Debian changelog (gzip -9n: no
# time stamp in the archive, as lintian asks).
set(FLASHSTEP_DEB_MAINTAINER "flashstep maintainers <flashstep@example.org>" CACHE STRING
  "The Debian package's Maintainer field (Name <address>)")
string(TIMESTAMP FLASHSTEP_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)  # SOURCE_DATE_EPOCH when set
configure_file(${CMAKE_SOURCE_DIR}/packaging/changelog.in ${CMAKE_BINARY_DIR}/packaging/changelog @ONLY)
add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/packaging/changelog.gz
  COMMAND gzip -9n -k -f ${CMAKE_BINARY_DIR}/packaging/changelog
  DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog)
add_custom_target(flashstep_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/copyright ${CMAKE_BINARY_DIR}/packaging/changelog.gz
  DESTINATION share/doc/flashstep)

# [SECTION] CPack: the DEB generator
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME flashstep)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # flashstep_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${FLASHSTEP_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "step-through simulator of FlashAttention for teaching")
# The long description as the control file shows it: lines under 80 characters (lintian).
string(JOIN "\n" CPACK_PACKAGE_DESCRIPTION
  "flashstep steps through FlashAttention (Dao et al. 2022) one line of the"
  "paper's pseudocode at a time, with every byte that moves between a simulated"
  "HBM and SRAM counted and checked against the paper's closed forms."
  "FlashAttention-2's loop order, standard attention and a float64 reference run"
  "on the same inputs beside it."
  ""
  "The package has the command line (lessons, stepped runs, traffic tables, a"
  "guided course with questions checked against the trace) and the desktop app"
  "with its presets, and the Python module (import flashstep) with the"
  "puzzles, where a student writes the schedule and the simulator judges it."
  "It is built without the CUDA backend: the GPU subcommands say so.")
# Depends: from dpkg-shlibdeps over the installed program (libc6, libstdc++6, libglfw3,
# libopengl0, libstb0, ...), never written by hand. The fonts are read as files, not linked,
# so they are named here.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "fonts-dejavu-core")
# The Python module: the interpreter its extension was built for (the extension imports into
# that minor version only, as dh_python3 would declare it) and NumPy, which its arrays are. In
# Depends, not Recommends: the module is half of what a student uses (the puzzles, the
# notebooks), a file in dist-packages that cannot be imported is a broken install, and every
# Debian desktop has python3 already (python3-numpy adds about 20 MB).
if(FLASHSTEP_HAVE_PYTHON)
  set(py "${FLASHSTEP_PYTHON_VERSION_MAJOR}.${FLASHSTEP_PYTHON_VERSION_MINOR}")
  math(EXPR py_next "${FLASHSTEP_PYTHON_VERSION_MINOR} + 1")
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS
    ", python3 (>= ${py}~), python3 (<< ${FLASHSTEP_PYTHON_VERSION_MAJOR}.${py_next}), python3-numpy")
endif()
set(CPACK_STRIP_FILES ON)  # lintian: no unstripped binaries in a package

# The package has no CUDA backend. A build with it links cuBLAS (libcublas.so.13) from NVIDIA's
# toolkit, which no Debian package provides: dpkg-shlibdeps could not name a dependency, and the
# program would not start on a lab machine without CUDA. Such a build refuses to package.
if(FLASHSTEP_HAVE_CUDA)
  add_custom_target(package
    COMMAND ${CMAKE_COMMAND} -E echo "flashstep: error: this build has the CUDA backend; the Debian package is built from one without it: cmake -S . -B build-deb -DFLASHSTEP_CUDA=OFF -DFLASHSTEP_TESTS=OFF && cmake --build build-deb --target package (docs/packaging.md)"
    COMMAND ${CMAKE_COMMAND} -E false
    VERBATIM)
else()
  include(CPack)
endif()
