"""The engines that run a dedup: each reads the input, runs the stages and writes the outputs."""
