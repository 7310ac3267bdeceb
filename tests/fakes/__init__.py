"""Test doubles, not tests: servers that speak real protocols on loopback (a model API,
Dovecot) and agents' databases written the way the agents write them (Hermes, OpenCode).
No mocks of the code under test."""
