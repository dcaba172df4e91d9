//===- status.cpp - loom_status_t -----------------------------------------===//

#include "loom/runtime.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

struct loom_status_s {
  loom_status_code_t code;
  std::string message;
};

namespace {
// Returned when allocating a status fails; never freed.
loom_status_s outOfMemory{LOOM_STATUS_INTERNAL,
                          "out of memory while reporting an error"};
} // namespace

extern "C" loom_status_t loom_status_make(loom_status_code_t code,
                                          const char *format, ...) {
  if (code == LOOM_STATUS_OK)
    return nullptr;
  va_list args, copy;
  va_start(args, format);
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  auto *status = new (std::nothrow) loom_status_s{code, {}};
  if (!status) {
    va_end(args);
    return &outOfMemory;
  }
  if (n > 0) {
    status->message.resize(n + 1);
    std::vsnprintf(status->message.data(), n + 1, format, args);
    status->message.resize(n);
  }
  va_end(args);
  return status;
}

extern "C" loom_status_code_t loom_status_code(loom_status_t status) {
  return status ? status->code : LOOM_STATUS_OK;
}

extern "C" const char *loom_status_message(loom_status_t status) {
  return status ? status->message.c_str() : "";
}

extern "C" const char *loom_status_code_string(loom_status_code_t code) {
  switch (code) {
  case LOOM_STATUS_OK:
    return "OK";
  case LOOM_STATUS_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case LOOM_STATUS_NOT_FOUND:
    return "NOT_FOUND";
  case LOOM_STATUS_UNAVAILABLE:
    return "UNAVAILABLE";
  case LOOM_STATUS_DEADLINE_EXCEEDED:
    return "DEADLINE_EXCEEDED";
  case LOOM_STATUS_PEER_FAILED:
    return "PEER_FAILED";
  case LOOM_STATUS_INTERNAL:
    return "INTERNAL";
  }
  return "UNKNOWN";
}

extern "C" void loom_status_free(loom_status_t status) {
  if (status && status != &outOfMemory)
    delete status;
}
