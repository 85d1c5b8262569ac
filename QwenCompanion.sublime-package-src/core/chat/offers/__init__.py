"""What qwen offers an editor beyond ACP's baseline: asides, recaps, session status, follow-up suggestions (pure)."""
