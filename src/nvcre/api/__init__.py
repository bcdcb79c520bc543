"""Typed models for every kind in nvcre.nvidia.com/v1alpha1 (pydantic v2)."""
