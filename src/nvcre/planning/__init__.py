"""Pure planning: node groups per testScale and diagnose rounds."""
