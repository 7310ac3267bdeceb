"""Test doubles that speak real protocols on loopback (no mocks of the code under test)."""
