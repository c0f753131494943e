"""Which files the index holds: the walk (ignore rules, default excludes, size and binary
checks, symlinks kept inside), secret files refused and secret values redacted."""
