//===- env.h - Reading a NAME=value environment list ------------*- C++ -*-===//

#ifndef LOOM_RUNTIME_SRC_ENV_H
#define LOOM_RUNTIME_SRC_ENV_H

#include <cstring>

namespace loom::rt {

/// The value of NAME in a NULL-terminated "NAME=value" list, or null.
inline const char *lookup(const char *const *env, const char *name) {
  size_t len = std::strlen(name);
  for (; env && *env; ++env)
    if (std::strncmp(*env, name, len) == 0 && (*env)[len] == '=')
      return *env + len + 1;
  return nullptr;
}

} // namespace loom::rt

#endif // LOOM_RUNTIME_SRC_ENV_H
