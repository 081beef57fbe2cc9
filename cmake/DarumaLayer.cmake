# daruma_layer_sources(name out): every .cc under src/<name>, in a fixed order,
# except files ending in _main.cc (entry points of executables). The fuzz
# library compiles each layer again from this same list, so its unity batches
# hold the same files as the layer's own (a name two batched files both define
# fails in both builds or in neither).
function(daruma_layer_sources name out)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${name}/*.cc)
  list(FILTER srcs EXCLUDE REGEX "_main\\.cc$")
  list(SORT srcs)
  set(${out} ${srcs} PARENT_SCOPE)
endfunction()

# daruma_layer(name): a static library from daruma_layer_sources(name).
function(daruma_layer name)
  daruma_layer_sources(${name} srcs)
  if(NOT srcs)
    set(srcs ${CMAKE_SOURCE_DIR}/cmake/empty.cc)
  endif()
  add_library(daruma_${name} STATIC ${srcs})
  target_include_directories(daruma_${name} PUBLIC ${CMAKE_SOURCE_DIR}/src)
endfunction()
