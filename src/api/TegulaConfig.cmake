# find_package(Tegula): the C++ API of an installed Tegula. This file lies in
# the Python package at tegula/lib/cmake/Tegula; the package folder holds
# include/tegula/tegula.hpp and lib/libtegula.so. Point CMake at it with
#   -DTegula_DIR=$(python -c "import tegula; print(tegula.cmake_dir())")
get_filename_component(_tegula_root "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET Tegula::tegula)
  add_library(Tegula::tegula SHARED IMPORTED)
  set_target_properties(Tegula::tegula PROPERTIES
    IMPORTED_LOCATION "${_tegula_root}/lib/libtegula.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_tegula_root}/include"
    INTERFACE_COMPILE_FEATURES cxx_std_20)
endif()
# The command line, for building kernels ahead of time at a project's build
# time (`tegula aot`, examples/cpp/CMakeLists.txt).
set(TEGULA_EXECUTABLE "${_tegula_root}/bin/tegula")
set(Tegula_FOUND TRUE)
unset(_tegula_root)
