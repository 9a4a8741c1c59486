# Finds every third-party library (all from Debian packages, see third_party/README.md).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(PkgConfig REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
find_package(ICU REQUIRED COMPONENTS uc)
find_package(ZLIB REQUIRED)  # .npz archives (Marian models, dragoman convert)
pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET sentencepiece)
pkg_check_modules(OPENBLAS REQUIRED IMPORTED_TARGET openblas)
# serve's HTTP server (Debian: libcpp-httplib-dev).
pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
# Debian ships OpenBLAS built with pthreads and with OpenMP; libopenblas.so.0 is whichever the
# alternatives system picks (pthread by default). Our kernels use OpenMP, and the pthread build's
# threads spin against OpenMP's on the same cores (1.5x slower training on 2 cores), so link the
# OpenMP build by path when it is installed: its directory goes into the binaries' RPATH.
find_library(DRAGOMAN_OPENBLAS_OPENMP openblas
  PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp NO_DEFAULT_PATH)
if(DRAGOMAN_OPENBLAS_OPENMP)
  set_property(TARGET PkgConfig::OPENBLAS PROPERTY INTERFACE_LINK_LIBRARIES "${DRAGOMAN_OPENBLAS_OPENMP}")
  message(STATUS "OpenBLAS: the OpenMP build (${DRAGOMAN_OPENBLAS_OPENMP})")
else()
  message(STATUS "OpenBLAS: libopenblas.so.0 as installed (apt-get install libopenblas-openmp-dev for the OpenMP build)")
endif()
find_package(MPI COMPONENTS CXX)
# oneDNN (Debian's libdnnl-dev) for the f32 CPU GEMM: its kernels are generated for the CPU that runs
# them (AVX-512 where there is AVX-512), where Debian's OpenBLAS 0.3.21 falls back to its Haswell
# (AVX2) kernels on CPUs it does not know. OpenBLAS stays for f64 and where oneDNN is absent.
string(TOUPPER "${DRAGOMAN_ONEDNN}" _dragoman_onednn_mode)
if(_dragoman_onednn_mode STREQUAL "AUTO")
  # A oneDNN package can be installed and still not configure: Debian's dnnl-config.cmake asks for
  # OpenCL's headers as a hard requirement (find_package(OpenCL REQUIRED); they come with
  # ocl-icd-opencl-dev, only a Recommends of libdnnl-dev), and an error inside find_package cannot
  # be caught. So AUTO first finds oneDNN in a separate CMake run on a two-line project; only if
  # that succeeds is it looked for here. Otherwise the build goes on with OpenBLAS, and says why.
  set(_probe ${CMAKE_BINARY_DIR}/onednn-probe)
  file(WRITE ${_probe}/CMakeLists.txt
    "cmake_minimum_required(VERSION 3.24)\nproject(onednn_probe LANGUAGES C CXX)\nfind_package(dnnl CONFIG REQUIRED)\n")
  set(_probe_args)
  foreach(_var CMAKE_PREFIX_PATH dnnl_DIR CMAKE_CXX_COMPILER)
    if(DEFINED ${_var})
      list(APPEND _probe_args "-D${_var}=${${_var}}")
    endif()
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${_probe} -B ${_probe}/build ${_probe_args}
    RESULT_VARIABLE _probe_status OUTPUT_VARIABLE _probe_log ERROR_VARIABLE _probe_log)
  file(REMOVE_RECURSE ${_probe})
  if(_probe_status EQUAL 0)
    find_package(dnnl CONFIG QUIET)
  else()
    string(REGEX MATCH "Could NOT find[^\n]*" _probe_error "${_probe_log}")
    if(NOT _probe_error)
      string(REGEX MATCH "CMake Error[^\n]*" _probe_error "${_probe_log}")
    endif()
    if(_probe_log MATCHES "Could not find a package configuration file")
      message(STATUS "oneDNN: not installed (apt-get install libdnnl-dev for oneDNN's f32 and int8 GEMM)")
    else()
      message(WARNING "oneDNN is installed but its CMake package does not configure (${_probe_error}): "
                      "building with OpenBLAS for all CPU matrix products instead. scripts/install-deps.sh "
                      "installs what it needs (ocl-icd-opencl-dev on Debian); -DDRAGOMAN_ONEDNN=OFF silences this.")
    endif()
  endif()
elseif(_dragoman_onednn_mode STREQUAL "ON")
  find_package(dnnl CONFIG QUIET)
  if(NOT dnnl_FOUND)
    message(FATAL_ERROR "DRAGOMAN_ONEDNN=ON but oneDNN was not found (apt-get install libdnnl-dev)")
  endif()
endif()
if(dnnl_FOUND)
  set(DRAGOMAN_WITH_ONEDNN ON)
  message(STATUS "f32 CPU GEMM: oneDNN ${dnnl_VERSION}")
else()
  set(DRAGOMAN_WITH_ONEDNN OFF)
  message(STATUS "f32 CPU GEMM: OpenBLAS (oneDNN not used: DRAGOMAN_ONEDNN=${DRAGOMAN_ONEDNN})")
endif()
if(DRAGOMAN_BUILD_TESTS)
  find_package(Catch2 2 CONFIG REQUIRED)
  include(Catch)
endif()
