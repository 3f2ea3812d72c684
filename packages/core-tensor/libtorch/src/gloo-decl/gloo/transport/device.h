// pbrl: gloo's transport types, held by ProcessGroupGloo only through smart pointers (see README.md).
#pragma once

namespace gloo {
namespace transport {
class Device;
class UnboundBuffer;
}  // namespace transport
}  // namespace gloo
