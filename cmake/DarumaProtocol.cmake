# The Kafka message structs, generated at build time from
# src/protocol/schemas/*.schema by src/protocol/generate.py (python3, standard
# library only) into the build dir; nothing generated is committed. Every
# schema and the script itself are dependencies, so editing either
# regenerates. Sets DARUMA_PROTOCOL_ROUND_TRIP_TEST (the generated test source)
# and DARUMA_PROTOCOL_SAMPLE_SOURCES (sample messages), built into
# protocol_unit_tests by tests/CMakeLists.txt and the seed writer by fuzz/.
find_package(Python3 REQUIRED COMPONENTS Interpreter)

file(GLOB daruma_protocol_schemas CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/src/protocol/schemas/*.schema)
set(daruma_protocol_generator ${CMAKE_SOURCE_DIR}/src/protocol/generate.py)
set(daruma_generated_dir ${CMAKE_BINARY_DIR}/generated)
set(daruma_generated_out ${daruma_generated_dir}/protocol/generated)

set(daruma_protocol_sources)
set(daruma_protocol_outputs
    ${daruma_generated_out}/api_schemas.h
    ${daruma_generated_out}/messages.h
    ${daruma_generated_out}/any_message.h
    ${daruma_generated_out}/samples.h
    ${daruma_generated_out}/samples.cc
    ${daruma_generated_out}/round_trip_test.cc)
foreach(schema ${daruma_protocol_schemas})
  get_filename_component(base ${schema} NAME_WE)
  list(APPEND daruma_protocol_outputs ${daruma_generated_out}/${base}.h)
  list(APPEND daruma_protocol_sources ${daruma_generated_out}/${base}.cc)
endforeach()
list(APPEND daruma_protocol_outputs ${daruma_protocol_sources})

add_custom_command(
  OUTPUT ${daruma_protocol_outputs}
  COMMAND Python3::Interpreter ${daruma_protocol_generator} ${daruma_generated_dir}
          ${daruma_protocol_schemas}
  DEPENDS ${daruma_protocol_generator} ${daruma_protocol_schemas}
  COMMENT "Generating Kafka message code from src/protocol/schemas"
  VERBATIM)

# A target for the generation itself: targets in other directories that
# compile generated files (the fuzz library) depend on it. Their unity batches
# (DARUMA_UNITY_BUILD) name the generated files only inside an #include, so
# without it a fresh build compiles a batch before its files exist.
add_custom_target(daruma_protocol_codegen DEPENDS ${daruma_protocol_outputs})

target_sources(daruma_protocol PRIVATE ${daruma_protocol_sources})
add_dependencies(daruma_protocol daruma_protocol_codegen)
target_include_directories(daruma_protocol PUBLIC ${daruma_generated_dir})
set(DARUMA_PROTOCOL_ROUND_TRIP_TEST ${daruma_generated_out}/round_trip_test.cc)
# Sample values of every message and version (Fill, MessageSamples): built into
# the protocol tests and the fuzz seed writer, never into daruma_protocol.
set(DARUMA_PROTOCOL_SAMPLE_SOURCES ${daruma_generated_out}/samples.cc)

# Every member of a generated struct has a default initialiser (its schema
# default), so an aggregate initialiser that names only the leading fields is
# complete by design; the warning would forbid the idiom, not catch a bug.
target_compile_options(daruma_protocol PUBLIC -Wno-missing-field-initializers)
