"""Redis plumbing every store shares: the client, key names and hash tags, cluster slots and per-slot
indexes, the hash codec, Lua loading. No domain rules here."""
