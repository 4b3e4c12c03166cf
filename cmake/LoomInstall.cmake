# `cmake --install build --prefix P`: the tools, the libraries, the headers
# (with the generated ones) and P/lib/cmake/Loom for find_package(Loom).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The two user-facing targets bundle the internal libraries.
add_library(LoomRuntimePackage INTERFACE)
target_link_libraries(LoomRuntimePackage INTERFACE LoomTrain LoomTranslator
                      LoomRuntime LoomText LoomAbi)
set_target_properties(LoomRuntimePackage PROPERTIES EXPORT_NAME runtime)
add_library(LoomCompilerPackage INTERFACE)
target_link_libraries(LoomCompilerPackage INTERFACE LoomDriver LoomCudaCodegen LoomCodegen LoomCodegenCommon LoomFrontend
                      LoomPasses LoomIR LoomRuntimePackage)
set_target_properties(LoomCompilerPackage PROPERTIES EXPORT_NAME compiler)
set_target_properties(LoomCApi PROPERTIES EXPORT_NAME c_api)

install(TARGETS LoomAbi LoomRuntime LoomText LoomTranslator LoomCApi
                LoomConfigProto LoomModelBench LoomMpi LoomTrain LoomRuntimePackage
        EXPORT LoomRuntimeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS LoomIR LoomPasses LoomFrontend LoomCodegenCommon LoomCodegen
                LoomCudaCodegen LoomDriver LoomCompilerPackage
        EXPORT LoomCompilerTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS loom loom-opt loom-translate loom-serve loom-bench loom-train
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# `loom train` and `loom plot` draw curves with the script beside `loom`.
install(PROGRAMS ${CMAKE_RUNTIME_OUTPUT_DIRECTORY}/loom-plot
        DESTINATION ${CMAKE_INSTALL_BINDIR})
# The tokenizer looks for its module in ../lib beside a binary and beside
# libloom.so.
if(TARGET loom_sentencepiece)
  install(TARGETS loom_sentencepiece LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

install(EXPORT LoomRuntimeTargets NAMESPACE Loom::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Loom)
install(EXPORT LoomCompilerTargets NAMESPACE Loom::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Loom)

# Headers keep their paths ("runtime/Session.h"), generated ones included.
install(DIRECTORY abi runtime text api frontend ir passes codegen driver
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(DIRECTORY include/loom DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${CMAKE_BINARY_DIR}/ir ${CMAKE_BINARY_DIR}/passes
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.inc"
        PATTERN "CMakeFiles" EXCLUDE)
install(FILES ${CMAKE_BINARY_DIR}/abi/Version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/abi)
install(FILES ${CMAKE_BINARY_DIR}/runtime/executable.pb.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/runtime)
install(FILES ${CMAKE_BINARY_DIR}/runtime/config.pb.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/runtime)

configure_package_config_file(cmake/LoomConfig.cmake.in
  ${CMAKE_BINARY_DIR}/LoomConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Loom
  PATH_VARS CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/LoomConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/LoomConfig.cmake
              ${CMAKE_BINARY_DIR}/LoomConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Loom)
