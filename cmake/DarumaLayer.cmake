# daruma_layer(name): a static library from every .cc under src/<name>, except
# files ending in _main.cc (entry points of executables).
function(daruma_layer name)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_main\\.cc$")
  if(NOT srcs)
    set(srcs ${CMAKE_SOURCE_DIR}/cmake/empty.cc)
  endif()
  add_library(daruma_${name} STATIC ${srcs})
  target_include_directories(daruma_${name} PUBLIC ${CMAKE_SOURCE_DIR}/src)
endfunction()
