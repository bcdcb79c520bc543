"""Pure functions that read Node and ResourceSlice objects: platform, GPU, targeting."""
