"""HTML views (thin: parse the request, call one service, render) and /health."""
