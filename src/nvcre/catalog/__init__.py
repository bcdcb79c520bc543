"""The catalog as data: category entries and platform/GPU override fragments."""
