"""Lambda handlers, one folder per route; each wraps the same app with Mangum."""
