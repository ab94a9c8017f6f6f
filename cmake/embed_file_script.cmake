# Run by clickatron_embed_file (cmake/EmbedFile.cmake):
#   cmake -DIN=FILE -DOUT=CC -DHEADER=H -DFUNCTION=F -DNAMESPACE=NS -P this file
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_length)
if(hex_length EQUAL 0)
  message(FATAL_ERROR "${IN} is empty")
endif()
# 16 bytes a line, each as 0xNN.
string(REGEX REPLACE "(................................)" "\\1\n" hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
get_filename_component(name "${IN}" NAME)
file(WRITE "${OUT}" "// Generated from ${name} by cmake/embed_file_script.cmake: do not edit.
#include \"${HEADER}\"

namespace ${NAMESPACE} {
namespace {

const unsigned char k${FUNCTION}Bytes[] = {
${bytes}
};

}  // namespace

std::string_view ${FUNCTION}() {
  return std::string_view(reinterpret_cast<const char*>(k${FUNCTION}Bytes), sizeof(k${FUNCTION}Bytes));
}

}  // namespace ${NAMESPACE}
")
