"""Test scaffolding shared by tests and benches (not shipped): a tiny Qwen2, a vLLM server, sample pages."""
