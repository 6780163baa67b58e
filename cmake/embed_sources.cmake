# Writes OUTPUT: a C++ file holding every *.cu and *.cuh of SOURCE_DIR and every *.cuh of SOURCE_DIR/tile as a string,
# so the library carries its kernel sources. Names are relative to SOURCE_DIR ("attention_f16.cu", "tile/mask.cuh"):
# the kernels write `#include "tile/mask.cuh"` and NVRTC matches header names exactly.
file(GLOB FILES ${SOURCE_DIR}/*.cu ${SOURCE_DIR}/*.cuh ${SOURCE_DIR}/tile/*.cuh)
list(SORT FILES)
set(body "")
foreach(path IN LISTS FILES)
  file(RELATIVE_PATH name ${SOURCE_DIR} ${path})
  file(READ ${path} text)
  # Raw-string chunks below 16 KB keep every compiler happy; adjacent literals are concatenated.
  string(LENGTH "${text}" length)
  set(chunks "")
  set(offset 0)
  while(offset LESS length)
    string(SUBSTRING "${text}" ${offset} 16000 piece)
    string(APPEND chunks "R\"fa_jit_src(${piece})fa_jit_src\"\n")
    math(EXPR offset "${offset} + 16000")
  endwhile()
  if(chunks STREQUAL "")
    set(chunks "\"\"")
  endif()
  string(APPEND body "    {\"${name}\",\n${chunks}},\n")
endforeach()
file(WRITE ${OUTPUT}.tmp
"// Generated from kernel_sources/ by cmake/embed_sources.cmake. Do not edit.
#include \"compile/embedded_sources.hpp\"

namespace fa_jit::detail {

const std::vector<EmbeddedFile>& embedded_kernel_files() {
    static const std::vector<EmbeddedFile> files = {
${body}    };
    return files;
}

}  // namespace fa_jit::detail
")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
