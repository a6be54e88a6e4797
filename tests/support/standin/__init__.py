"""Loopback stand-ins for the Hugging Face services tunepack calls (never imported by tunepack)."""
