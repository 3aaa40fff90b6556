"""derender."""
