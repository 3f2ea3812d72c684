// pbrl: a declaration of gloo::Context for c10d's ProcessGroupGloo.hpp (see README.md). Only the
// member ProcessGroupGloo::setTimeout names; pbrl never calls it.
#pragma once
#include <chrono>

namespace gloo {
class Context {
 public:
  void setTimeout(std::chrono::milliseconds timeout);
};
}  // namespace gloo
