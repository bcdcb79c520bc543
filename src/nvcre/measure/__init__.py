"""Log parsers (nccl-tests, training, dcgmi) and CEL threshold judging."""
