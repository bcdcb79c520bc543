"""nvcrectl: the command-line interface (also `kubectl nvcre`)."""
