/* a deliberate violation for the layers test: core reaching up to the session */
#include "session/session.h"
