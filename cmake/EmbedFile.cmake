# clickatron_embed_file(IN OUT HEADER FUNCTION NAMESPACE): compiles the bytes
# of file IN into OUT, a .cc defining `std::string_view NAMESPACE::FUNCTION()`
# (declared in HEADER), what `xxd -i` does. OUT is rewritten at build time
# whenever IN changes, so an edited asset needs no reconfigure.
set(CLICKATRON_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_file_script.cmake)

function(clickatron_embed_file in out header function namespace)
  get_filename_component(name ${in} NAME)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DIN=${in} -DOUT=${out} -DHEADER=${header}
            -DFUNCTION=${function} -DNAMESPACE=${namespace} -P ${CLICKATRON_EMBED_SCRIPT}
    DEPENDS ${in} ${CLICKATRON_EMBED_SCRIPT}
    COMMENT "Embedding ${name}"
    VERBATIM)
endfunction()
