"""Where a finished job may be POSTed, how the body is signed, one delivery attempt."""
