"""The wire contract: requests, responses, errors and routes, each defined once. It imports
nothing of the service around it (only ``derender.settings``' constants)."""
