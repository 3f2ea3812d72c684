// pbrl: ProcessGroupGloo.hpp includes this; it uses nothing declared in it (see README.md).
#pragma once
