// The one source of clickatron_pch (src/CMakeLists.txt): a target exists only
// to compile the product's precompiled header once for every other target.
