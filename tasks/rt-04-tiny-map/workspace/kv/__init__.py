"""A tiny durable key-value map."""
