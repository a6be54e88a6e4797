"""Helpers shared by the tests (imported as `support.<module>`; fixtures stay in conftest.py)."""
