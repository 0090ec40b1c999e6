"""The engines: what runs the stages over a whole input (change detection between two crawls here)."""
