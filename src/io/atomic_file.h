// Atomic file replacement: the bytes go to a temporary file in the same directory, which is
// flushed, fsynced and renamed over the target (then the directory is fsynced). A crash or a full
// disk never leaves a half-written file where a good one was: readers see the old file or the new.
#pragma once

#include <string>
#include <string_view>

namespace dragoman {

// Writes `bytes` to `path` atomically. Throws dragoman::Error naming the path on any failure;
// the temporary file is removed and the old `path`, if any, is untouched.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace dragoman
