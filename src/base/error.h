// dragoman::Error, the one exception type library code throws. Its message says what went
// wrong and, for bad input, names the file, the line and what was expected. Only main()
// catches it: it prints "error: <message>" and exits 1.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace dragoman {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Thrown when SIGINT/SIGTERM asked a long piece of work to stop at its next safe point; the code
// that started the work catches it and saves what there is to save.
class Interrupted : public Error {
 public:
  explicit Interrupted(const std::string& message) : Error(message) {}
};

// Thrown by a device's allocator when the device has no memory left for a request (the message
// names the device and the sizes); callers that know what the memory was for (the trainer's
// max_tokens) catch it to say what to lower.
class OutOfMemory : public Error {
 public:
  explicit OutOfMemory(const std::string& message) : Error(message) {}
};

// "FILE:LINE: MESSAGE" (line is 1-based), the form compilers use, so editors can jump to it.
[[noreturn]] void throw_input_error(std::string_view file, std::size_t line, std::string_view message);

}  // namespace dragoman
